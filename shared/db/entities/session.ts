import { Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { IntColumn, StringColumn, TimestampColumn } from '../columns';
import { User } from './user';

/**
 * A login: one rotation family of refresh tokens. Revoking it ends every refresh token of the
 * family and every access token that names it (`sid` claim).
 */
@Entity('sessions')
export class Session {
  @PrimaryGeneratedColumn({ type: 'int' })
  id!: number;

  @Index('ix_sessions_user')
  @IntColumn('user_id')
  userId!: number;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id' })
  user?: User;

  @StringColumn('user_agent', 512, { nullable: true })
  userAgent!: string | null;

  @StringColumn('ip', 64, { nullable: true })
  ip!: string | null;

  @TimestampColumn('created_at')
  createdAt!: Date;

  @TimestampColumn('last_used_at')
  lastUsedAt!: Date;

  @TimestampColumn('expires_at')
  expiresAt!: Date;

  @TimestampColumn('revoked_at', { nullable: true })
  revokedAt!: Date | null;

  @StringColumn('revoked_reason', 32, { nullable: true })
  revokedReason!: string | null;
}

/** One refresh token of a session; only its SHA-256 is stored. */
@Entity('refresh_tokens')
export class RefreshToken {
  @PrimaryGeneratedColumn({ type: 'int' })
  id!: number;

  @Index('ix_refresh_tokens_session')
  @IntColumn('session_id')
  sessionId!: number;

  @ManyToOne(() => Session, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'session_id' })
  session?: Session;

  @StringColumn('token_hash', 64, { unique: true })
  tokenHash!: string;

  @TimestampColumn('created_at')
  createdAt!: Date;

  /** Set when this token was exchanged for the next one; presenting it again is reuse. */
  @TimestampColumn('rotated_at', { nullable: true })
  rotatedAt!: Date | null;
}
