/**
 * The payments core: every credit and every reversal of a payment, each exactly once. A payment
 * is one external charge (a Telegram Stars charge, a Stripe event/session/invoice) or one use of
 * a redemption code, keyed by (provider, external id) under a unique index.
 *
 * - `creditPurchase` (and, for codes, `creditIn`) inserts the payment row and moves the money in
 *   one transaction: a pack adds bonus tokens; a plan starts it, or extends it when the account
 *   has it running (plan-time.ts). A second credit with the same key hits the unique index, its
 *   transaction rolls back whole and it answers `duplicate` with the first payment: a redelivered
 *   notification, or twenty at once, credit once.
 * - `reverse` flips the row from `credited` to `reversed` by a conditional UPDATE and, only if
 *   that changed it, takes back what it gave, in the same transaction: tokens bonus first, then
 *   subscription, never below zero nor below what running generations hold; what cannot be taken
 *   back (spent already) is the payment's `shortfall_tokens`, not a debt. A plan loses the time
 *   that payment paid for, and ends now (never adding tokens) when none is left.
 *
 * Every credit and every reversal writes exactly one ledger row through shared/billing, even one
 * that moves no token (a plan extension), whose note is `<provider>:<external id>`: the ledger
 * audit (billing/payment-audit.ts) matches each payment to its rows by it.
 */
import type { EntityManager } from 'typeorm';
import type { Users } from '../accounts/users';
import { Billing, splitTakeBack } from '../billing';
import type { Clock } from '../clock';
import type { Database } from '../db/database';
import { LedgerReason, Payment, PaymentProvider, User } from '../db/entities';
import { isDuplicateKey } from '../db/errors';
import { runInTransaction } from '../db/raw';
import { AppError } from '../errors';
import type { PlanName, PlanTable } from '../plans';
import { PlanPeriod, planReversalOf, planTimeOf, PlanReversal } from './plan-time';
import type { Price, Product, ProductTable } from './products';

/** What a payment gives. */
export type Grant = { kind: 'tokens'; tokens: number } | { kind: 'plan'; plan: PlanName; period: PlanPeriod };

/** A product bought through a payment provider (what the Stripe and Telegram Stars handlers call). */
export interface Purchase {
  provider: 'telegram' | 'stripe';
  /** Telegram's `telegram_payment_charge_id`; Stripe's checkout session, invoice or event id. */
  externalId: string;
  userId: number;
  /** An id of product/products.json. */
  productId: string;
  /** What was paid, as the provider reports it: Stars with currency `XTR`, or minor units and Stripe's currency. */
  paid: Price;
}

/** A payment of any kind to credit (a purchase, or one use of a redemption code). */
export interface PaymentCredit {
  provider: PaymentProvider;
  externalId: string;
  userId: number;
  grant: Grant;
  productId: string | null;
  redemptionCodeId: number | null;
  paid: Price | null;
}

export interface Refund {
  provider: PaymentProvider;
  /** The external id the payment was credited under. */
  externalId: string;
  /** The provider's id of the refund (Stripe's refund or event id), kept on the payment. */
  refundReference?: string | null;
}

export type CreditOutcome = { status: 'credited'; payment: Payment } | { status: 'duplicate'; payment: Payment };

export type ReversalOutcome =
  | { status: 'reversed'; payment: Payment; plan: PlanReversal['effect'] | null }
  | { status: 'already_reversed'; payment: Payment }
  | { status: 'not_found' };

/** External ids travel in the ledger note (255 characters) after the provider's name. */
export const MAX_EXTERNAL_ID_LENGTH = 200;

/** The ledger note of a payment's rows: how the audit finds them. */
export function paymentReference(provider: PaymentProvider, externalId: string): string {
  return `${provider}:${externalId}`;
}

function checkExternalId(externalId: string): void {
  if (externalId.length === 0 || externalId.length > MAX_EXTERNAL_ID_LENGTH) {
    throw new Error(`a payment's external id must be 1-${MAX_EXTERNAL_ID_LENGTH} characters`);
  }
}

/** The grant of a product: a pack's tokens, or a calendar month of its plan. */
export function grantOf(product: Product): Grant {
  return product.kind === 'token_pack' ? { kind: 'tokens', tokens: product.tokens } : { kind: 'plan', plan: product.plan, period: { months: 1 } };
}

export class Payments {
  constructor(
    private readonly db: Database,
    private readonly billing: Pick<Billing, 'change'>,
    private readonly users: Pick<Users, 'movePlan' | 'effectivePlan' | 'changed'>,
    private readonly plans: PlanTable,
    private readonly products: ProductTable,
    private readonly clock: Clock,
  ) {}

  /**
   * Before an invoice or a checkout session is made: the product, if `user` may buy it now.
   * 404 for a product not in the file; 409 `plan_downgrade_not_allowed` for a plan below the one
   * the account has running, since paying for it would end the better plan at once.
   */
  checkPurchase(user: User, productId: string): Product {
    const product = this.products.get(productId);
    if (product.kind === 'plan') this.checkPlanChange(user, product.plan);
    return product;
  }

  /** 409 `plan_downgrade_not_allowed` when `user` has a plan above `plan` running. */
  checkPlanChange(user: Pick<User, 'plan' | 'planExpiresAt'>, plan: PlanName): void {
    if (this.plans.get(this.users.effectivePlan(user)).rank > this.plans.get(plan).rank) throw new AppError('plan_downgrade_not_allowed');
  }

  /**
   * Credits a paid product once per (provider, external id): `duplicate` (with the first payment)
   * for a redelivery. A renewal of a subscription is a purchase with its own charge id: it extends
   * the plan the account has running. 404 `not_found` for an unknown product or account: nothing
   * is credited, and the money needs a manual refund.
   */
  async creditPurchase(purchase: Purchase): Promise<CreditOutcome> {
    return this.credit(this.creditOfPurchase(purchase));
  }

  /** What crediting `purchase` writes (for `creditIn` in a caller's transaction); 404 for an unknown product. */
  creditOfPurchase(purchase: Purchase): PaymentCredit {
    const product = this.products.get(purchase.productId);
    return {
      provider: purchase.provider,
      externalId: purchase.externalId,
      userId: purchase.userId,
      grant: grantOf(product),
      productId: product.id,
      redemptionCodeId: null,
      paid: { amount: purchase.paid.amount, currency: purchase.paid.currency },
    };
  }

  /** `creditIn` in a transaction of its own, a duplicate answered with the first payment. */
  async credit(credit: PaymentCredit): Promise<CreditOutcome> {
    checkExternalId(credit.externalId);
    try {
      const payment = await this.db.transaction((em) => this.creditIn(em, credit, this.clock()));
      return { status: 'credited', payment };
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      const payment = await this.find(credit.provider, credit.externalId);
      if (!payment) throw error;
      return { status: 'duplicate', payment };
    }
  }

  /**
   * Inside the caller's transaction (a redemption decrements its code beside it): inserts the
   * payment row, then credits its grant with one ledger row. A payment already recorded under
   * the same key makes the insert throw a duplicate-key error, which must roll the whole
   * transaction back (`isDuplicateKey` tells it).
   */
  async creditIn(em: EntityManager, credit: PaymentCredit, now: Date): Promise<Payment> {
    checkExternalId(credit.externalId);
    const user = await this.db.lockOne(em, User, credit.userId);
    if (!user) throw new AppError('not_found', { detail: 'Unknown account' });
    const grant = credit.grant;
    const time = grant.kind === 'plan' ? planTimeOf(user, grant.plan, grant.period, now) : null;
    const inserted = await em.getRepository(Payment).insert({
      provider: credit.provider,
      externalId: credit.externalId,
      userId: user.id,
      productId: credit.productId,
      redemptionCodeId: credit.redemptionCodeId,
      kind: grant.kind,
      tokens: grant.kind === 'tokens' ? grant.tokens : 0,
      plan: grant.kind === 'plan' ? grant.plan : null,
      planFrom: time?.from ?? null,
      planUntil: time?.until ?? null,
      amount: credit.paid?.amount ?? null,
      currency: credit.paid?.currency ?? null,
      status: 'credited',
      reversedTokens: 0,
      shortfallTokens: 0,
      refundReference: null,
      createdAt: now,
      reversedAt: null,
    });
    const id = Number(inserted.identifiers[0]?.id);
    const entry = { reason: (credit.provider === 'code' ? 'redemption' : 'purchase') as LedgerReason, note: paymentReference(credit.provider, credit.externalId) };
    if (grant.kind === 'tokens') {
      await this.change(em, user.id, { subscriptionDelta: 0, bonusDelta: grant.tokens, ...entry }, now);
    } else if (time?.startsPlan) {
      await this.users.movePlan(em, user, grant.plan, time.until, { ...entry, recordEvenIfNothingMoves: true }, now);
    } else if (time) {
      await em.getRepository(User).update({ id: user.id }, { planExpiresAt: time.until, updatedAt: now });
      this.users.changed(em, user.id);
      await this.change(em, user.id, { subscriptionDelta: 0, bonusDelta: 0, ...entry }, now);
    }
    return em.getRepository(Payment).findOneByOrFail({ id });
  }

  /**
   * Reverses a credited payment once (a refund): `already_reversed` the second time,
   * `not_found` when no payment has that key (a refund notified before its payment: answer the
   * provider with a retryable error so it comes again once the credit is in).
   */
  async reverse(refund: Refund): Promise<ReversalOutcome> {
    const now = this.clock();
    return this.db.transaction((em) => this.reverseIn(em, refund, now));
  }

  /** `reverse` inside the caller's transaction (the Stripe webhook records its event beside it). */
  async reverseIn(em: EntityManager, refund: Refund, now: Date): Promise<ReversalOutcome> {
    const payments = em.getRepository(Payment);
    const found = await payments.findOneBy({ provider: refund.provider, externalId: refund.externalId });
    if (!found) return { status: 'not_found' };
    // The row's one move from credited to reversed: only the reversal that makes it goes on.
    const won = await runInTransaction(em, {
      sql: "UPDATE payments SET status = 'reversed', reversed_at = :now, refund_reference = :refundReference WHERE id = :id AND status = 'credited'",
      params: { id: found.id, now, refundReference: refund.refundReference ?? null },
    });
    if (won.affected !== 1) return { status: 'already_reversed', payment: await payments.findOneByOrFail({ id: found.id }) };
    const plan = await this.takeBack(em, found, now);
    return { status: 'reversed', payment: await payments.findOneByOrFail({ id: found.id }), plan };
  }

  async find(provider: PaymentProvider, externalId: string): Promise<Payment | null> {
    return this.db.repo(Payment).findOneBy({ provider, externalId });
  }

  /** Takes back what `payment` gave, with its one refund row; the plan's fate for a plan payment. */
  private async takeBack(em: EntityManager, payment: Payment, now: Date): Promise<PlanReversal['effect'] | null> {
    const user = payment.userId === null ? null : await this.db.lockOne(em, User, payment.userId);
    const entry = { reason: 'refund' as const, note: paymentReference(payment.provider, payment.externalId) };
    if (payment.kind === 'tokens') {
      // A deleted account has nothing left to take: all of it is shortfall.
      const split = user ? splitTakeBack(payment.tokens, user) : { fromBonus: 0, fromSubscription: 0 };
      const taken = split.fromBonus + split.fromSubscription;
      if (user) await this.change(em, user.id, { subscriptionDelta: -split.fromSubscription, bonusDelta: -split.fromBonus, ...entry }, now);
      await em.getRepository(Payment).update({ id: payment.id }, { reversedTokens: taken, shortfallTokens: payment.tokens - taken });
      return null;
    }
    if (!user || !payment.plan || !payment.planFrom || !payment.planUntil) return 'untouched';
    const reversal = planReversalOf(user, { plan: payment.plan, from: payment.planFrom, until: payment.planUntil }, now);
    if (reversal.effect === 'ended') {
      // Ends as at its expiry, except that a refund never adds tokens: the subscription bucket
      // keeps what is left of it, up to the free plan's allowance.
      const subscriptionAfter = Math.min(user.subscriptionTokens, this.plans.get('free').tokenLimit);
      await this.users.movePlan(em, user, 'free', null, { ...entry, recordEvenIfNothingMoves: true, subscriptionAfter }, now);
      await em.getRepository(Payment).update({ id: payment.id }, { reversedTokens: user.subscriptionTokens - subscriptionAfter });
      return 'ended';
    }
    if (reversal.effect === 'shortened') {
      await em.getRepository(User).update({ id: user.id }, { planExpiresAt: reversal.expiresAt, updatedAt: now });
      this.users.changed(em, user.id);
    }
    await this.change(em, user.id, { subscriptionDelta: 0, bonusDelta: 0, ...entry }, now);
    return reversal.effect;
  }

  private async change(em: EntityManager, userId: number, change: Parameters<Billing['change']>[2], now: Date): Promise<void> {
    // The user row is locked and the amounts computed from it: a refusal here is a bug.
    if (!(await this.billing.change(em, userId, change, now))) throw new Error(`payment ledger change refused for user ${userId}`);
  }
}
