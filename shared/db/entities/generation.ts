import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { BoolColumn, IntColumn, StringColumn, TimestampColumn } from '../columns';
import { User } from './user';

export type GenerationStatus = 'pending' | 'completed' | 'failed';
export type GenerationSource = 'api' | 'bot' | 'schedule';

/**
 * One generation request. It is born `pending` with its price held from the balance, and moves
 * once to `completed` (hold captured) or `failed` (hold released) by a conditional update.
 */
@Entity('generations')
@Index('ix_generations_user', ['userId', 'id'])
@Index('ix_generations_status', ['status', 'id'])
@Index('ix_generations_model_status', ['modelSlug', 'status'])
@Index('uq_generations_idempotency', ['userId', 'idempotencyKey'], { unique: true })
export class Generation {
  @PrimaryGeneratedColumn({ type: 'int' })
  id!: number;

  @IntColumn('user_id')
  userId!: number;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id' })
  user?: User;

  @StringColumn('model_slug', 100)
  modelSlug!: string;

  @StringColumn('category', 16)
  category!: string;

  /** The provider that served it (a fallback may differ from the catalog's first choice). */
  @StringColumn('provider', 64, { nullable: true })
  provider!: string | null;

  @StringColumn('status', 16)
  status!: GenerationStatus;

  @StringColumn('source', 16, { default: 'api' })
  source!: GenerationSource;

  /** What history shows: the prompt, the last user message, or the text to speak (capped). */
  @Column({ name: 'prompt', type: 'text' })
  prompt!: string;

  /** The normalized request as JSON (see generation/input.ts); large ones live in storage. */
  @Column({ name: 'input', type: 'text' })
  input!: string;

  /** Tokens held at acceptance; charged on completion. */
  @IntColumn('price')
  price!: number;

  @IntColumn('tokens_spent', { default: 0 })
  tokensSpent!: number;

  @Column({ name: 'result_text', type: 'text', nullable: true })
  resultText!: string | null;

  @StringColumn('result_key', 255, { nullable: true })
  resultKey!: string | null;

  @StringColumn('thumbnail_key', 255, { nullable: true })
  thumbnailKey!: string | null;

  @Column({ name: 'result_metadata', type: 'text', nullable: true })
  resultMetadata!: string | null;

  @Column({ name: 'usage', type: 'text', nullable: true })
  usage!: string | null;

  @StringColumn('error', 1000, { nullable: true })
  error!: string | null;

  @IntColumn('progress', { default: 0 })
  progress!: number;

  @IntColumn('seed', { nullable: true })
  seed!: number | null;

  @IntColumn('eta_seconds', { nullable: true })
  etaSeconds!: number | null;

  @IntColumn('processing_ms', { nullable: true })
  processingMs!: number | null;

  @IntColumn('attempts', { default: 0 })
  attempts!: number;

  /**
   * Work an asynchronous upstream started for this row (`replicate:<prediction id>`), so a retry
   * or a run after a crash resumes it instead of paying the provider again.
   */
  @StringColumn('upstream_ref', 191, { nullable: true })
  upstreamRef!: string | null;

  /** A runner holds the row until then; another runner may take it over only after. */
  @TimestampColumn('lease_until', { nullable: true })
  leaseUntil!: Date | null;

  @BoolColumn('is_favorited', { default: false })
  isFavorited!: boolean;

  @IntColumn('user_rating', { nullable: true })
  userRating!: number | null;

  /** Deleted from history: hidden, files removed, the row kept for the ledger's reference. */
  @TimestampColumn('hidden_at', { nullable: true })
  hiddenAt!: Date | null;

  @StringColumn('idempotency_key', 128, { nullable: true })
  idempotencyKey!: string | null;

  /** SHA-256 of the request body, to tell a replay from a reused key with another body. */
  @StringColumn('request_hash', 64, { nullable: true })
  requestHash!: string | null;

  @IntColumn('schedule_id', { nullable: true })
  scheduleId!: number | null;

  @StringColumn('assistant_id', 64, { nullable: true })
  assistantId!: string | null;

  @TimestampColumn('created_at')
  createdAt!: Date;

  @TimestampColumn('started_at', { nullable: true })
  startedAt!: Date | null;

  @TimestampColumn('completed_at', { nullable: true })
  completedAt!: Date | null;

  @TimestampColumn('updated_at')
  updatedAt!: Date;
}
