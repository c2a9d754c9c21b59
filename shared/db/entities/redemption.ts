import { Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { IntColumn, StringColumn, TimestampColumn } from '../columns';

/**
 * A batch of redemption codes the operator made (`admin create-codes`): what each code gives
 * (bonus tokens, or a plan for some days), how many accounts may use each code, until when.
 */
@Entity('redemption_batches')
export class RedemptionBatch {
  @PrimaryGeneratedColumn({ type: 'int' })
  id!: number;

  @IntColumn('tokens', { default: 0 })
  tokens!: number;

  @StringColumn('plan', 16, { nullable: true })
  plan!: string | null;

  @IntColumn('plan_days', { nullable: true })
  planDays!: number | null;

  @IntColumn('uses_per_code')
  usesPerCode!: number;

  @IntColumn('code_count')
  codeCount!: number;

  @TimestampColumn('expires_at', { nullable: true })
  expiresAt!: Date | null;

  @StringColumn('note', 255, { nullable: true })
  note!: string | null;

  @TimestampColumn('created_at')
  createdAt!: Date;
}

/**
 * One code of a batch: only its SHA-256 is kept (the code is printed once), and the uses it has
 * left, taken one at a time by a conditional UPDATE. Which accounts used it: their payment rows
 * (provider `code`, external id `<code id>:<user id>`, unique).
 */
@Entity('redemption_codes')
export class RedemptionCode {
  @PrimaryGeneratedColumn({ type: 'int' })
  id!: number;

  @Index('ix_redemption_codes_batch')
  @IntColumn('batch_id')
  batchId!: number;

  @ManyToOne(() => RedemptionBatch, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'batch_id' })
  batch?: RedemptionBatch;

  @StringColumn('code_hash', 64, { unique: true })
  codeHash!: string;

  @IntColumn('uses_left')
  usesLeft!: number;
}
