import { Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { IntColumn, StringColumn, TimestampColumn } from '../columns';
import { User } from './user';

/** A one-time code (its SHA-256) that attaches a Telegram identity to a web account; 10 minutes. */
@Entity('link_codes')
export class LinkCode {
  @PrimaryGeneratedColumn({ type: 'int' })
  id!: number;

  /** The Telegram-side account the code came from. */
  @Index('ix_link_codes_user')
  @IntColumn('user_id')
  userId!: number;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id' })
  user?: User;

  @StringColumn('code_hash', 64, { unique: true })
  codeHash!: string;

  @TimestampColumn('created_at')
  createdAt!: Date;

  @TimestampColumn('expires_at')
  expiresAt!: Date;

  @TimestampColumn('used_at', { nullable: true })
  usedAt!: Date | null;
}
