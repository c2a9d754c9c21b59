/**
 * Holds: a generation's price is reserved at acceptance and either captured (charged, with a
 * ledger row) on completion or released on failure. Holding is one conditional UPDATE, so
 * concurrent requests can never reserve more than the balance, on SQLite and MySQL alike.
 */
import type { EntityManager } from 'typeorm';
import { LedgerEntry, User } from '../db/entities';

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
 * Charges a held price: subscription tokens first, then bonus tokens (decisions.md "Plans"). The
 * user row is read locked (FOR UPDATE on MySQL; SQLite writers are serialized), then one UPDATE
 * takes the tokens, drops the hold and counts the period's usage, and one ledger row records it,
 * so the row stays locked for three statements. Returns what was charged: the price, unless an
 * operator correction took tokens from under the hold, in which case what was left.
 */
export async function captureHold(
  em: EntityManager,
  userId: number,
  price: number,
  generationId: number,
  now: Date,
): Promise<number> {
  if (price <= 0) return 0;
  const sqlite = em.connection.options.type === 'better-sqlite3';
  const [before] = (await em.query(
    `SELECT subscription_tokens AS s, bonus_tokens AS b FROM users WHERE id = ?${sqlite ? '' : ' FOR UPDATE'}`,
    [userId],
  )) as Array<{ s: number; b: number }>;
  if (!before) return 0;
  const fromSubscription = Math.min(price, Math.max(0, Number(before.s)));
  const fromBonus = Math.min(price - fromSubscription, Math.max(0, Number(before.b)));
  const charged = fromSubscription + fromBonus;
  await em.query(
    `UPDATE users SET subscription_tokens = subscription_tokens - ?, bonus_tokens = bonus_tokens - ?,
       held_tokens = CASE WHEN held_tokens >= ? THEN held_tokens - ? ELSE 0 END,
       tokens_used_this_period = tokens_used_this_period + ? WHERE id = ?`,
    [fromSubscription, fromBonus, price, price, charged, userId],
  );
  if (charged > 0) {
    await em.getRepository(LedgerEntry).insert({
      userId,
      amount: -charged,
      reason: 'generation',
      generationId,
      subscriptionAfter: Number(before.s) - fromSubscription,
      bonusAfter: Number(before.b) - fromBonus,
      note: null,
      createdAt: now,
    });
  }
  return charged;
}
