import { Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { IntColumn, StringColumn, TimestampColumn } from '../columns';

export type LedgerReason =
  | 'signup_allowance'
  | 'plan_change'
  | 'refill'
  | 'grant'
  | 'correction'
  | 'generation'
  // A payment (shared/payments): its note is `<provider>:<external id>` of the payment row.
  | 'purchase'
  | 'redemption'
  | 'refund';

/**
 * One change of a balance. `userId` has no foreign key on purpose: deleting an account nulls it and
 * keeps the row (an anonymised ledger).
 */
@Entity('token_ledger')
@Index('ix_token_ledger_user', ['userId', 'id'])
export class LedgerEntry {
  @PrimaryGeneratedColumn({ type: 'int' })
  id!: number;

  @IntColumn('user_id', { nullable: true })
  userId!: number | null;

  /** Signed: positive credits, negative debits. */
  @IntColumn('amount')
  amount!: number;

  @StringColumn('reason', 32)
  reason!: LedgerReason;

  @IntColumn('generation_id', { nullable: true })
  generationId!: number | null;

  @IntColumn('subscription_after')
  subscriptionAfter!: number;

  @IntColumn('bonus_after')
  bonusAfter!: number;

  @StringColumn('note', 255, { nullable: true })
  note!: string | null;

  @TimestampColumn('created_at')
  createdAt!: Date;
}
