import { Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { IntColumn, StringColumn, TimestampColumn } from '../columns';
import { User } from './user';

export type IdentityKind = 'email' | 'messenger' | 'identity_provider';

/**
 * A way to sign in to an account: e-mail + password (subject = lower-cased e-mail), the messenger
 * (subject = Telegram user id) or the identity provider (subject = "<issuer>|<sub>").
 */
@Entity('identities')
@Index('uq_identities_kind_subject', ['kind', 'subject'], { unique: true })
export class Identity {
  @PrimaryGeneratedColumn({ type: 'int' })
  id!: number;

  @Index('ix_identities_user')
  @IntColumn('user_id')
  userId!: number;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id' })
  user?: User;

  @StringColumn('kind', 24)
  kind!: IdentityKind;

  @StringColumn('subject', 320)
  subject!: string;

  /** scrypt hash for e-mail identities; null for the others. */
  @StringColumn('password_hash', 255, { nullable: true })
  passwordHash!: string | null;

  @TimestampColumn('created_at')
  createdAt!: Date;
}
