/**
 * Redemption codes: the operator makes a batch (`admin create-codes`), each code giving bonus
 * tokens or a plan for some days, usable by up to `uses` accounts, once each, until the batch
 * expires; people redeem one with POST /api/v2/billing/redeem or the bot's /redeem.
 *
 * A redemption is one transaction: the payment row (provider `code`, external id
 * `<code id>:<user id>`, unique: one use per account), its credit with the ledger row, and the
 * conditional UPDATE that takes one of the code's remaining uses (no row changed: spent, and the
 * whole transaction rolls back). So under any concurrency a code gives at most `uses` credits
 * and an account gets at most one.
 *
 * A wrong, expired or spent code counts against the account's refused attempts
 * (REDEEM_FAILED_ATTEMPTS_PER_HOUR); past the limit every attempt is 429 until the hour ends.
 * A code is looked up by the unique index of its SHA-256, so no stored secret is ever compared
 * in application code (there is no timing to measure but the index lookup of a hash).
 */
import type { Clock } from '../clock';
import type { Database } from '../db/database';
import { Payment, RedemptionBatch, RedemptionCode, User } from '../db/entities';
import { isDuplicateKey } from '../db/errors';
import { runInTransaction } from '../db/raw';
import { AppError, ErrorCode } from '../errors';
import type { FailedAttemptLimiter } from '../limits';
import type { PlanName } from '../plans';
import { newRedemptionCode, normalizeRedemptionCode, redemptionCodeHash } from './code-format';
import type { Grant, Payments } from './payments';

export type CodeGrant = { kind: 'tokens'; tokens: number } | { kind: 'plan'; plan: PlanName; days: number };

export interface NewBatch {
  grant: CodeGrant;
  /** How many codes to make. */
  count: number;
  /** How many accounts may redeem each code (each once). */
  usesPerCode: number;
  expiresAt: Date | null;
  note?: string | null;
}

export const MAX_CODES_PER_BATCH = 10_000;

export interface CreatedBatch {
  batch: RedemptionBatch;
  /** The codes themselves: shown once, never stored. */
  codes: string[];
}

export interface Redeemed {
  payment: Payment;
  /** The account after the credit. */
  user: User;
}

/** Refusals that count against the attempt limit: the ones a guesser gets. */
const COUNTED: ReadonlySet<ErrorCode> = new Set(['redemption_code_invalid', 'redemption_code_expired', 'redemption_code_spent']);
const INSERT_CHUNK = 500;

function grantOfBatch(batch: RedemptionBatch): Grant {
  if (batch.plan !== null && batch.planDays !== null) return { kind: 'plan', plan: batch.plan as PlanName, period: { days: batch.planDays } };
  return { kind: 'tokens', tokens: batch.tokens };
}

export class RedemptionCodes {
  constructor(
    private readonly db: Database,
    private readonly payments: Pick<Payments, 'creditIn' | 'checkPlanChange'>,
    private readonly attempts: FailedAttemptLimiter,
    private readonly clock: Clock,
  ) {}

  async createBatch(input: NewBatch): Promise<CreatedBatch> {
    const { grant } = input;
    if (!Number.isInteger(input.count) || input.count < 1 || input.count > MAX_CODES_PER_BATCH) throw AppError.validation('count', `must be 1-${MAX_CODES_PER_BATCH}`);
    if (!Number.isInteger(input.usesPerCode) || input.usesPerCode < 1) throw AppError.validation('uses', 'must be a positive integer');
    if (grant.kind === 'tokens' && (!Number.isInteger(grant.tokens) || grant.tokens < 1)) throw AppError.validation('tokens', 'must be a positive integer');
    if (grant.kind === 'plan' && (grant.plan === 'free' || !Number.isInteger(grant.days) || grant.days < 1)) {
      throw AppError.validation('plan', 'must be a paid plan for a positive number of days');
    }
    const now = this.clock();
    if (input.expiresAt && input.expiresAt.getTime() <= now.getTime()) throw AppError.validation('expires', 'must be in the future');
    const codes = Array.from({ length: input.count }, newRedemptionCode);
    const batch = await this.db.transaction(async (em) => {
      const saved = await em.getRepository(RedemptionBatch).save(
        em.getRepository(RedemptionBatch).create({
          tokens: grant.kind === 'tokens' ? grant.tokens : 0,
          plan: grant.kind === 'plan' ? grant.plan : null,
          planDays: grant.kind === 'plan' ? grant.days : null,
          usesPerCode: input.usesPerCode,
          codeCount: input.count,
          expiresAt: input.expiresAt,
          note: input.note ?? null,
          createdAt: now,
        }),
      );
      for (let i = 0; i < codes.length; i += INSERT_CHUNK) {
        const rows = codes.slice(i, i + INSERT_CHUNK).map((code) => ({
          batchId: saved.id,
          codeHash: redemptionCodeHash(normalizeRedemptionCode(code) ?? code),
          usesLeft: input.usesPerCode,
        }));
        await em.getRepository(RedemptionCode).insert(rows);
      }
      return saved;
    });
    return { batch, codes };
  }

  /** Redeems `rawCode` for `userId`: the payment it made and the account after it, or a refusal. */
  async redeem(userId: number, rawCode: string): Promise<Redeemed> {
    const key = String(userId);
    await this.attempts.assertAllowed(key);
    try {
      return await this.attempt(userId, rawCode);
    } catch (error) {
      if (error instanceof AppError && COUNTED.has(error.code)) await this.attempts.recordFailure(key);
      throw error;
    }
  }

  private async attempt(userId: number, rawCode: string): Promise<Redeemed> {
    const normalized = normalizeRedemptionCode(rawCode);
    if (!normalized) throw new AppError('redemption_code_invalid');
    const now = this.clock();
    try {
      return await this.db.transaction(async (em) => {
        const code = await em.getRepository(RedemptionCode).findOne({ where: { codeHash: redemptionCodeHash(normalized) }, relations: { batch: true } });
        const batch = code?.batch;
        if (!code || !batch) throw new AppError('redemption_code_invalid');
        if (batch.expiresAt && batch.expiresAt.getTime() <= now.getTime()) throw new AppError('redemption_code_expired');
        const grant = grantOfBatch(batch);
        if (grant.kind === 'plan') {
          const user = await this.db.lockOne(em, User, userId);
          if (!user) throw new AppError('not_found');
          // A code for a lower plan would end a better one at once; it stays usable later.
          this.payments.checkPlanChange(user, grant.plan);
        }
        const payment = await this.payments.creditIn(
          em,
          { provider: 'code', externalId: `${code.id}:${userId}`, userId, grant, productId: null, redemptionCodeId: code.id, paid: null },
          now,
        );
        const took = await runInTransaction(em, { sql: 'UPDATE redemption_codes SET uses_left = uses_left - 1 WHERE id = :id AND uses_left > 0', params: { id: code.id } });
        if (took.affected !== 1) throw new AppError('redemption_code_spent');
        return { payment, user: await em.getRepository(User).findOneByOrFail({ id: userId }) };
      });
    } catch (error) {
      // The unique (provider, external id) of the payment: this account redeemed this code before.
      if (isDuplicateKey(error)) throw new AppError('redemption_code_already_redeemed');
      throw error;
    }
  }
}

