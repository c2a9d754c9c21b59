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
 * The usual capture in two statements: when the balance covers the whole price, one UPDATE splits
 * it (subscription first: `bonus_tokens` is assigned before `subscription_tokens`, so on MySQL,
 * which assigns left to right, it still reads the old subscription balance, as SQLite always does)
 * and the ledger row copies the balances the UPDATE left. False (nothing changed) when the balance
 * no longer covers it, for the general path.
 */
async function captureWhole(em: EntityManager, userId: number, price: number, generationId: number, now: Date, sqlite: boolean): Promise<boolean> {
  // The transaction's own runner, asked for a structured result: its `affected` is the row count
  // on both drivers (a plain raw query answers lastInsertRowid on SQLite).
  const runner = em.queryRunner;
  if (!runner) return false;
  const result = await runner.query(
    `UPDATE users SET bonus_tokens = bonus_tokens - (? - CASE WHEN subscription_tokens > 0 THEN CASE WHEN subscription_tokens < ? THEN subscription_tokens ELSE ? END ELSE 0 END),
       subscription_tokens = subscription_tokens - CASE WHEN subscription_tokens > 0 THEN CASE WHEN subscription_tokens < ? THEN subscription_tokens ELSE ? END ELSE 0 END,
       held_tokens = CASE WHEN held_tokens >= ? THEN held_tokens - ? ELSE 0 END,
       tokens_used_this_period = tokens_used_this_period + ?
     WHERE id = ? AND (CASE WHEN subscription_tokens > 0 THEN subscription_tokens ELSE 0 END) + (CASE WHEN bonus_tokens > 0 THEN bonus_tokens ELSE 0 END) >= ?`,
    [price, price, price, price, price, price, price, price, userId, price],
    true,
  );
  if (result.affected !== 1) return false;
  const createdAt = sqlite ? now.toISOString().replace('T', ' ').replace('Z', '') : now;
  await em.query(
    `INSERT INTO token_ledger (user_id, amount, reason, generation_id, subscription_after, bonus_after, note, created_at)
     SELECT id, ?, 'generation', ?, subscription_tokens, bonus_tokens, NULL, ? FROM users WHERE id = ?`,
    [-price, generationId, createdAt, userId],
  );
  return true;
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
  if (await captureWhole(em, userId, Math.trunc(price), generationId, now, sqlite)) return price;
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
