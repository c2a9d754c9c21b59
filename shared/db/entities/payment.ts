import { Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { IntColumn, StringColumn, TimestampColumn } from '../columns';

/** Where a payment came from: a Telegram Stars charge, a Stripe event/session/invoice, or a redemption code. */
export type PaymentProvider = 'telegram' | 'stripe' | 'code';
/** What a payment gave: bonus tokens, or time on a plan. */
export type PaymentKind = 'tokens' | 'plan';
export type PaymentStatus = 'credited' | 'reversed';

/**
 * One external charge (or one use of a redemption code) and what it credited. The unique
 * (provider, external id) is what makes a redelivered notification credit nothing twice; the row
 * keeps what was given (tokens, or plan time from `planFrom` until `planUntil`) so that a refund
 * reverses exactly that, whatever the product file says by then. `userId` has no foreign key on
 * purpose: deleting an account nulls it and keeps the row, as the ledger does.
 */
@Entity('payments')
@Index('uq_payments_external', ['provider', 'externalId'], { unique: true })
@Index('ix_payments_user', ['userId', 'id'])
export class Payment {
  @PrimaryGeneratedColumn({ type: 'int' })
  id!: number;

  @StringColumn('provider', 16)
  provider!: PaymentProvider;

  /** The provider's id of the charge (Telegram's charge id, Stripe's id), or `<code id>:<user id>`. */
  @StringColumn('external_id', 200)
  externalId!: string;

  @IntColumn('user_id', { nullable: true })
  userId!: number | null;

  /** The product bought (product/products.json); null for a redemption code. */
  @StringColumn('product_id', 64, { nullable: true })
  productId!: string | null;

  @IntColumn('redemption_code_id', { nullable: true })
  redemptionCodeId!: number | null;

  @StringColumn('kind', 8)
  kind!: PaymentKind;

  /** Bonus tokens credited (kind `tokens`). */
  @IntColumn('tokens', { default: 0 })
  tokens!: number;

  @StringColumn('plan', 16, { nullable: true })
  plan!: string | null;

  /** The plan time this payment paid for (kind `plan`): a refund takes this much off the expiry. */
  @TimestampColumn('plan_from', { nullable: true })
  planFrom!: Date | null;

  @TimestampColumn('plan_until', { nullable: true })
  planUntil!: Date | null;

  /** What was paid, in the currency's minor units (Stars are whole); null for a code. */
  @IntColumn('amount', { nullable: true })
  amount!: number | null;

  /** `XTR` for Telegram Stars, an ISO 4217 code in lower case for Stripe; null for a code. */
  @StringColumn('currency', 8, { nullable: true })
  currency!: string | null;

  @StringColumn('status', 16)
  status!: PaymentStatus;

  /** Tokens a reversal took back (bonus first, then subscription). */
  @IntColumn('reversed_tokens', { default: 0 })
  reversedTokens!: number;

  /** Tokens a reversal could not take back: already spent (or held by running generations). */
  @IntColumn('shortfall_tokens', { default: 0 })
  shortfallTokens!: number;

  /** The provider's id of the refund, when it gave one. */
  @StringColumn('refund_reference', 200, { nullable: true })
  refundReference!: string | null;

  @TimestampColumn('created_at')
  createdAt!: Date;

  @TimestampColumn('reversed_at', { nullable: true })
  reversedAt!: Date | null;
}
