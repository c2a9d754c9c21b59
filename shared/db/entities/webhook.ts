import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { IntColumn, StringColumn, TimestampColumn } from '../columns';
import { User } from './user';

/** A URL a user registered for generation events; deliveries are signed with its secret. */
@Entity('webhooks')
@Index('ix_webhooks_user', ['userId', 'id'])
export class Webhook {
  @PrimaryGeneratedColumn({ type: 'int' })
  id!: number;

  @IntColumn('user_id')
  userId!: number;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id' })
  user?: User;

  @StringColumn('url', 2048)
  url!: string;

  /** JSON array of event names. */
  @StringColumn('events', 255)
  events!: string;

  /** The signing secret (needed in clear to sign; shown to the user once, at creation). */
  @StringColumn('secret', 64)
  secret!: string;

  @TimestampColumn('created_at')
  createdAt!: Date;

  /** Since when every delivery has failed; null while the last one succeeded. */
  @TimestampColumn('failing_since', { nullable: true })
  failingSince!: Date | null;

  @TimestampColumn('disabled_at', { nullable: true })
  disabledAt!: Date | null;
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

/** One event for one webhook, with its attempts. */
@Entity('webhook_deliveries')
@Index('ix_webhook_deliveries_webhook', ['webhookId', 'id'])
@Index('ix_webhook_deliveries_status', ['status', 'nextAttemptAt'])
export class WebhookDelivery {
  @PrimaryGeneratedColumn({ type: 'int' })
  id!: number;

  @IntColumn('webhook_id')
  webhookId!: number;

  @ManyToOne(() => Webhook, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'webhook_id' })
  webhook?: Webhook;

  @StringColumn('event', 64)
  event!: string;

  @IntColumn('generation_id', { nullable: true })
  generationId!: number | null;

  @Column({ name: 'payload', type: 'text' })
  payload!: string;

  @StringColumn('status', 16)
  status!: DeliveryStatus;

  @IntColumn('attempts', { default: 0 })
  attempts!: number;

  @IntColumn('last_status_code', { nullable: true })
  lastStatusCode!: number | null;

  @StringColumn('last_error', 500, { nullable: true })
  lastError!: string | null;

  @TimestampColumn('next_attempt_at', { nullable: true })
  nextAttemptAt!: Date | null;

  @TimestampColumn('created_at')
  createdAt!: Date;

  @TimestampColumn('delivered_at', { nullable: true })
  deliveredAt!: Date | null;
}
