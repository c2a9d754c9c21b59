import { Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { IntColumn, StringColumn, TimestampColumn } from '../columns';
import { User } from './user';

/** A single-use password reset token (its SHA-256), valid for an hour. */
@Entity('password_resets')
export class PasswordReset {
  @PrimaryGeneratedColumn({ type: 'int' })
  id!: number;

  @Index('ix_password_resets_user')
  @IntColumn('user_id')
  userId!: number;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id' })
  user?: User;

  @StringColumn('token_hash', 64, { unique: true })
  tokenHash!: string;

  @TimestampColumn('created_at')
  createdAt!: Date;

  @TimestampColumn('expires_at')
  expiresAt!: Date;

  @TimestampColumn('used_at', { nullable: true })
  usedAt!: Date | null;
}
