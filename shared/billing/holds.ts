/**
 * Holds: a generation's price is reserved at acceptance and either captured (charged, with a
 * ledger row) on completion or released on failure. Holding is one conditional UPDATE, so
 * concurrent requests can never reserve more than the balance, on SQLite and MySQL alike.
 *
 * The statements here are plain SQL that both dialects accept; generation/store.ts runs them in
 * the transactions that also move the generation row (one round trip each on MySQL).
 */
import type { EntityManager } from 'typeorm';
import { User } from '../db/entities';

/** Reserves `price` (params: price, user id, price); changes no row when the free balance is short. */
export const HOLD_SQL = 'UPDATE users SET held_tokens = held_tokens + ? WHERE id = ? AND subscription_tokens + bonus_tokens - held_tokens >= ?';

/**
 * Takes a captured charge (params: from subscription, from bonus, price, price, charged, user id):
 * the tokens, the hold (never below zero) and the period's usage in one statement.
 */
export const CHARGE_SQL = `UPDATE users SET subscription_tokens = subscription_tokens - ?, bonus_tokens = bonus_tokens - ?,
  held_tokens = CASE WHEN held_tokens >= ? THEN held_tokens - ? ELSE 0 END,
  tokens_used_this_period = tokens_used_this_period + ? WHERE id = ?`;

/** The ledger columns a capture writes (the row's values in this order). */
export const LEDGER_COLUMNS = 'user_id, amount, reason, generation_id, subscription_after, bonus_after, note, created_at';

export interface ChargeSplit {
  fromSubscription: number;
  fromBonus: number;
}

/**
 * How a held price is charged: subscription tokens first, then bonus tokens (decisions.md
 * "Plans"). Normally the whole price; if an operator correction took tokens from under the hold,
 * only what is left.
 */
export function splitCharge(price: number, subscription: number, bonus: number): ChargeSplit {
  const fromSubscription = Math.min(price, Math.max(0, subscription));
  const fromBonus = Math.min(price - fromSubscription, Math.max(0, bonus));
  return { fromSubscription, fromBonus };
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
