/**
 * The plan rules of payments, as pure functions of the account and the clock:
 * - paying for the plan the account is on extends it: the paid period is added to the later of
 *   now and the current expiry, so a renewal that arrives early neither loses nor doubles time,
 *   and one that arrives after the expiry (before the clock moved the account to free) runs from
 *   now;
 * - paying for any other plan starts it now with a new period, as `Users.setPlan` does;
 * - a refund takes the time its payment paid for off the expiry, while the account is still on
 *   that plan; if no time is left, the plan ends now, as at its expiry; on another plan by now
 *   (the account moved on), the plan is left as it is.
 */
import { addDays, addMonths } from '../clock';
import type { User } from '../db/entities';
import type { PlanName } from '../plans';

/** How long a payment buys a plan for: a product is a calendar month, a redemption code some days. */
export type PlanPeriod = { months: number } | { days: number };

export function addPeriod(from: Date, period: PlanPeriod): Date {
  return 'months' in period ? addMonths(from, period.months) : addDays(from, period.days);
}

export interface PlanTime {
  /** True when the payment starts the plan (a new period with its allowance); false when it extends it. */
  startsPlan: boolean;
  from: Date;
  until: Date;
}

/** What a payment for `plan` for `period` gives `user`. */
export function planTimeOf(user: Pick<User, 'plan' | 'planExpiresAt'>, plan: PlanName, period: PlanPeriod, now: Date): PlanTime {
  if (user.plan !== plan) return { startsPlan: true, from: now, until: addPeriod(now, period) };
  const expiry = user.planExpiresAt;
  const from = expiry && expiry.getTime() > now.getTime() ? expiry : now;
  return { startsPlan: false, from, until: addPeriod(from, period) };
}

export type PlanReversal = { effect: 'untouched' } | { effect: 'shortened'; expiresAt: Date } | { effect: 'ended' };

/** What refunding a payment that paid for `plan` from `from` until `until` does to the account's plan. */
export function planReversalOf(user: Pick<User, 'plan' | 'planExpiresAt'>, paid: { plan: string; from: Date; until: Date }, now: Date): PlanReversal {
  if (user.plan !== paid.plan || !user.planExpiresAt) return { effect: 'untouched' };
  const expiresAt = new Date(user.planExpiresAt.getTime() - (paid.until.getTime() - paid.from.getTime()));
  return expiresAt.getTime() <= now.getTime() ? { effect: 'ended' } : { effect: 'shortened', expiresAt };
}
