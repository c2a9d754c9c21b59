/**
 * Holds: a generation's price is reserved at acceptance and either captured (charged, with a
 * ledger row) on completion or released on failure. Holding is one conditional UPDATE, so
 * concurrent requests can never reserve more than the balance, on SQLite and MySQL alike.
 */
import type { EntityManager } from 'typeorm';
import type { Database } from '../db/database';
import { User } from '../db/entities';
import { applyBalanceChange } from './balance';

/** Reserves `price` tokens; false when the free balance (tokens minus holds) cannot cover it. */
export async function holdTokens(em: EntityManager, userId: number, price: number): Promise<boolean> {
  if (price <= 0) return true;
  const result = await em
    .createQueryBuilder()
    .update(User)
    .set({ heldTokens: () => `held_tokens + ${Math.trunc(price)}` })
    .where('id = :userId', { userId })
    .andWhere('subscription_tokens + bonus_tokens - held_tokens >= :price', { price })
    .execute();
  return result.affected === 1;
}

export async function releaseHold(em: EntityManager, userId: number, price: number): Promise<void> {
  if (price <= 0) return;
  await em
    .createQueryBuilder()
    .update(User)
    .set({ heldTokens: () => `CASE WHEN held_tokens >= ${Math.trunc(price)} THEN held_tokens - ${Math.trunc(price)} ELSE 0 END` })
    .where('id = :userId', { userId })
    .execute();
}

/**
 * Charges a held price: subscription tokens first, then bonus tokens (decisions.md "Plans"), one
 * ledger row. Returns what was charged (the price, unless an operator correction took tokens
 * from under the hold, in which case what was left).
 */
export async function captureHold(
  db: Database,
  em: EntityManager,
  userId: number,
  price: number,
  generationId: number,
  now: Date,
): Promise<number> {
  if (price <= 0) return 0;
  const user = await db.lockOne(em, User, userId);
  if (!user) return 0;
  const fromSubscription = Math.min(price, Math.max(0, user.subscriptionTokens));
  const fromBonus = Math.min(price - fromSubscription, Math.max(0, user.bonusTokens));
  const charged = fromSubscription + fromBonus;
  await releaseHold(em, userId, price);
  if (charged > 0) {
    const entry = await applyBalanceChange(
      em,
      userId,
      { subscriptionDelta: -fromSubscription, bonusDelta: -fromBonus, reason: 'generation', generationId },
      now,
    );
    if (!entry) throw new Error(`capture of generation ${generationId} could not be applied`);
    await em
      .createQueryBuilder()
      .update(User)
      .set({ tokensUsedThisPeriod: () => `tokens_used_this_period + ${charged}` })
      .where('id = :userId', { userId })
      .execute();
  }
  return charged;
}
