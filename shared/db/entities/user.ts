import { Entity, PrimaryGeneratedColumn } from 'typeorm';
import { BoolColumn, IntColumn, StringColumn, TimestampColumn } from '../columns';

/** The plans an account can be on (their allowances and limits are product data: shared/plans). */
export const PLAN_NAMES = ['free', 'basic', 'pro', 'vip', 'elite'] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

/**
 * An account. The balance is two buckets: subscription tokens (reset to the plan's allowance at
 * each refill) and bonus tokens (carried over). `heldTokens` are reserved by pending generations.
 */
@Entity('users')
export class User {
  @PrimaryGeneratedColumn({ type: 'int' })
  id!: number;

  @StringColumn('name', 200)
  name!: string;

  @StringColumn('email', 320, { nullable: true, unique: true })
  email!: string | null;

  @StringColumn('avatar_url', 2048, { nullable: true })
  avatarUrl!: string | null;

  @StringColumn('messenger_username', 64, { nullable: true })
  messengerUsername!: string | null;

  @StringColumn('plan', 16)
  plan!: PlanName;

  @TimestampColumn('plan_expires_at', { nullable: true })
  planExpiresAt!: Date | null;

  @IntColumn('subscription_tokens', { default: 0 })
  subscriptionTokens!: number;

  @IntColumn('bonus_tokens', { default: 0 })
  bonusTokens!: number;

  @IntColumn('held_tokens', { default: 0 })
  heldTokens!: number;

  @IntColumn('tokens_used_this_period', { default: 0 })
  tokensUsedThisPeriod!: number;

  @TimestampColumn('period_started_at')
  periodStartedAt!: Date;

  @TimestampColumn('next_refill_at')
  nextRefillAt!: Date;

  @StringColumn('language', 8, { default: 'en' })
  language!: string;

  @StringColumn('image_format', 8, { default: 'webp' })
  imageFormat!: string;

  @BoolColumn('notifications_enabled', { default: true })
  notificationsEnabled!: boolean;

  @StringColumn('default_image_size', 16, { default: '1024x1024' })
  defaultImageSize!: string;

  @TimestampColumn('created_at')
  createdAt!: Date;

  @TimestampColumn('updated_at')
  updatedAt!: Date;
}
