/**
 * Every change of a balance: one guarded UPDATE and one ledger row, in the caller's transaction.
 * The guard keeps both buckets at or above zero and above what pending generations hold.
 */
import type { EntityManager } from 'typeorm';
import { LedgerEntry, LedgerReason, User } from '../db/entities';

export interface BalanceChange {
  subscriptionDelta: number;
  bonusDelta: number;
  reason: LedgerReason;
  generationId?: number | null;
  note?: string | null;
}

/** Applies the change or returns null when it would take a bucket below zero. */
export async function applyBalanceChange(
  em: EntityManager,
  userId: number,
  change: BalanceChange,
  now: Date,
): Promise<LedgerEntry | null> {
  const result = await em
    .createQueryBuilder()
    .update(User)
    .set({
      subscriptionTokens: () => `subscription_tokens + ${Math.trunc(change.subscriptionDelta)}`,
      bonusTokens: () => `bonus_tokens + ${Math.trunc(change.bonusDelta)}`,
      updatedAt: now,
    })
    .where('id = :userId', { userId })
    .andWhere('subscription_tokens + :sd >= 0', { sd: change.subscriptionDelta })
    .andWhere('bonus_tokens + :bd >= 0', { bd: change.bonusDelta })
    .execute();
  if (result.affected !== 1) return null;
  const user = await em.getRepository(User).findOneByOrFail({ id: userId });
  return em.getRepository(LedgerEntry).save(
    em.getRepository(LedgerEntry).create({
      userId,
      amount: change.subscriptionDelta + change.bonusDelta,
      reason: change.reason,
      generationId: change.generationId ?? null,
      subscriptionAfter: user.subscriptionTokens,
      bonusAfter: user.bonusTokens,
      note: change.note ?? null,
      createdAt: now,
    }),
  );
}

export function tokenBalance(user: Pick<User, 'subscriptionTokens' | 'bonusTokens'>): number {
  return user.subscriptionTokens + user.bonusTokens;
}
