/**
 * Telegram Stars on the payments core: what an invoice carries, the pre-checkout check, the credit
 * of a `successful_payment`, and the operator's refund. The bot (bot/handlers/stars.ts) and the
 * admin command line call these; nothing here knows grammY's context, only the Bot API methods
 * it needs (passed in, so a test points them at a fake Bot API).
 *
 * - An invoice's payload is `s1:<product id>:<account id>` (at most 3 + 48 + 1 + 15 bytes, well
 *   under Telegram's 128): the product, and the account it was made for. Nothing in it needs to
 *   be secret: only this bot can make invoices with it.
 * - The pre-checkout answer is the last word before Telegram takes the Stars, and Telegram waits
 *   10 s for it: it reads the database only (no queue, no other service).
 * - The credit is `creditPurchase` keyed by `telegram_payment_charge_id`, so a redelivered or
 *   concurrently delivered `successful_payment` credits once; a subscription's renewals each have
 *   their own charge id and extend the plan once each.
 */
import { GrammyError } from 'grammy';
import type { Api } from 'grammy';
import type { SuccessfulPayment } from 'grammy/types';
import type { Users } from '../accounts/users';
import type { Payment, User } from '../db/entities';
import { AppError } from '../errors';
import type { Logger } from '../log';
import type { Payments } from './payments';
import type { PlanProduct, Product, ProductTable, TokenPack } from './products';

/** Telegram's currency code of Stars. */
export const STARS_CURRENCY = 'XTR';
/** The only subscription period Telegram accepts (30 days). */
export const SUBSCRIPTION_PERIOD_SECONDS = 2_592_000;
export const MAX_PAYLOAD_BYTES = 128;

export interface InvoicePayload {
  productId: string;
  userId: number;
}

const PAYLOAD = /^s1:([a-z0-9][a-z0-9_-]{0,47}):([1-9][0-9]{0,14})$/;

export function encodePayload(payload: InvoicePayload): string {
  const text = `s1:${payload.productId}:${payload.userId}`;
  if (Buffer.byteLength(text) > MAX_PAYLOAD_BYTES || !PAYLOAD.test(text)) throw new Error(`cannot make an invoice payload of ${text}`);
  return text;
}

export function decodePayload(text: string): InvoicePayload | null {
  const match = PAYLOAD.exec(text);
  if (!match?.[1] || !match[2]) return null;
  const userId = Number(match[2]);
  return Number.isSafeInteger(userId) ? { productId: match[1], userId } : null;
}

/** Why a pre-checkout query is refused (each has a text in both languages). */
export type CheckoutRefusal = 'invalid_invoice' | 'product_gone' | 'other_account' | 'price_changed' | 'downgrade';

export type CheckoutAnswer = { ok: true; product: Product } | { ok: false; reason: CheckoutRefusal };

/** What Telegram sends in a pre-checkout query that matters here. */
export interface CheckoutQuery {
  currency: string;
  total_amount: number;
  invoice_payload: string;
}

/** What a `successful_payment` came to. */
export type Settlement =
  | { status: 'credited' | 'duplicate'; payment: Payment; user: User; product: Product; renewal: boolean }
  /** A plan below the one running now (a renewal, or a better plan bought since the pre-checkout): crediting it would end the better plan, so its Stars went back and the subscription was cancelled. */
  | { status: 'refunded_downgrade'; product: PlanProduct; alreadyRefunded: boolean }
  /** Nothing could be credited (the product left the file, the account is gone, a payload not ours): an operator must look (and refund). */
  | { status: 'not_credited'; reason: 'invalid_invoice' | 'not_found' | 'currency' };

export type RefundOutcome = {
  /** `refunded` now, or `already_refunded` when Telegram said the charge was refunded before. */
  telegram: 'refunded' | 'already_refunded';
  reversal: Awaited<ReturnType<Payments['reverse']>>;
};

/** The Bot API methods Stars payments use. */
export type StarsApi = Pick<Api, 'refundStarPayment' | 'editUserStarSubscription' | 'getStarTransactions'>;

/**
 * Telegram refused the refund because the charge is refunded already. For a recurring payment
 * Telegram said so even for a refund that had just happened (tdlib/telegram-bot-api#690), so it
 * means "refunded" either way.
 */
export function isAlreadyRefunded(error: unknown): boolean {
  return error instanceof GrammyError && error.error_code === 400 && /CHARGE_ALREADY_REFUNDED/i.test(error.description);
}

/** What an invoice for `product` says and costs. */
export interface InvoiceSpec {
  product: Product;
  payload: string;
  /** Whole Stars: the one price item. */
  stars: number;
  /** A plan is a subscription (an invoice link with `subscription_period`); a pack a one-off invoice. */
  subscription: boolean;
}

export class TelegramStars {
  constructor(
    private readonly payments: Pick<Payments, 'checkPurchase' | 'checkPlanChange' | 'creditPurchase' | 'reverse' | 'find'>,
    private readonly products: ProductTable,
    private readonly users: Pick<Users, 'findById' | 'identities'>,
    private readonly log: Logger,
  ) {}

  /** What /buy offers: the packs and the plans, in the file's order. */
  offers(): { packs: TokenPack[]; plans: PlanProduct[] } {
    return { packs: this.products.tokenPacks(), plans: this.products.plans() };
  }

  /** The invoice `user` may get for `productId`: 404 for a product not sold, 409 for a plan below the running one. */
  invoiceFor(user: User, productId: string): InvoiceSpec {
    const product = this.payments.checkPurchase(user, productId);
    return { product, payload: encodePayload({ productId: product.id, userId: user.id }), stars: product.priceStars, subscription: product.kind === 'plan' };
  }

  /**
   * The pre-checkout check, from the database alone: the invoice is ours and was made for the
   * paying account, its product is still sold at the price the invoice asks, and (for a plan)
   * buying it now is not a downgrade. Delivers nothing: only `successful_payment` credits.
   */
  async checkout(payerUserId: number, query: CheckoutQuery): Promise<CheckoutAnswer> {
    const payload = decodePayload(query.invoice_payload);
    if (!payload || query.currency !== STARS_CURRENCY) return { ok: false, reason: 'invalid_invoice' };
    const product = this.products.find(payload.productId);
    if (!product) return { ok: false, reason: 'product_gone' };
    // An invoice link can be forwarded: it pays only for the account it was made for.
    if (payload.userId !== payerUserId) return { ok: false, reason: 'other_account' };
    const user = await this.users.findById(payload.userId);
    if (!user) return { ok: false, reason: 'other_account' };
    if (query.total_amount !== product.priceStars) return { ok: false, reason: 'price_changed' };
    try {
      this.payments.checkPurchase(user, product.id);
    } catch (error) {
      if (error instanceof AppError && error.code === 'plan_downgrade_not_allowed') return { ok: false, reason: 'downgrade' };
      if (error instanceof AppError && error.code === 'not_found') return { ok: false, reason: 'product_gone' };
      throw error;
    }
    return { ok: true, product };
  }

  /**
   * Credits a `successful_payment` once per charge id (a redelivery, or the same update handled
   * by two processes at once, answers `duplicate`). The account credited is the one the invoice
   * was made for. A plan payment below the plan the account runs now (a renewal after a better
   * plan was bought, or a better plan started since the pre-checkout) is not credited: its Stars
   * are refunded and the subscription cancelled, since crediting it would end the better plan.
   */
  async settle(paid: SuccessfulPayment, payerTelegramId: number, api: StarsApi): Promise<Settlement> {
    const charge = paid.telegram_payment_charge_id;
    const payload = decodePayload(paid.invoice_payload);
    if (paid.currency !== STARS_CURRENCY) {
      this.log.error({ charge, currency: paid.currency }, 'a successful_payment not in Stars: not credited');
      return { status: 'not_credited', reason: 'currency' };
    }
    if (!payload) {
      this.log.error({ charge, payload: paid.invoice_payload }, 'a successful_payment with a payload that is not ours: not credited; refund it');
      return { status: 'not_credited', reason: 'invalid_invoice' };
    }
    const product = this.products.find(payload.productId);
    const user = await this.users.findById(payload.userId);
    const renewal = paid.is_recurring === true && paid.is_first_recurring !== true;
    // Checked before the credit (the pre-checkout checked the first payment, but a renewal has
    // none, and a better plan may have started since): once the row exists this is a redelivery.
    if (product?.kind === 'plan' && user && !(await this.payments.find('telegram', charge))) {
      try {
        this.payments.checkPlanChange(user, product.plan);
      } catch (error) {
        if (!(error instanceof AppError && error.code === 'plan_downgrade_not_allowed')) throw error;
        return this.refundDowngrade(api, payerTelegramId, charge, product);
      }
    }
    try {
      const outcome = await this.payments.creditPurchase({
        provider: 'telegram',
        externalId: charge,
        userId: payload.userId,
        productId: payload.productId,
        paid: { amount: paid.total_amount, currency: STARS_CURRENCY },
      });
      const after = (await this.users.findById(payload.userId)) ?? user;
      if (!after || !product) throw new Error('a credited payment without its account or product');
      return { status: outcome.status, payment: outcome.payment, user: after, product, renewal };
    } catch (error) {
      if (!(error instanceof AppError && error.code === 'not_found')) throw error;
      this.log.error({ charge, payload: paid.invoice_payload }, 'a Stars payment for a product or account that is gone: not credited; refund it (admin refund-stars)');
      return { status: 'not_credited', reason: 'not_found' };
    }
  }

  private async refundDowngrade(api: StarsApi, telegramUserId: number, charge: string, product: PlanProduct): Promise<Settlement> {
    let alreadyRefunded = false;
    try {
      await api.refundStarPayment(telegramUserId, charge);
    } catch (error) {
      if (!isAlreadyRefunded(error)) throw error;
      alreadyRefunded = true;
    }
    await api.editUserStarSubscription(telegramUserId, charge, true).catch((error: unknown) => {
      this.log.warn({ err: (error as Error).message, charge }, 'cancelling the Stars subscription failed');
    });
    this.log.warn({ charge, product: product.id }, 'a Stars renewal of a plan below the running one: refunded, subscription cancelled');
    return { status: 'refunded_downgrade', product, alreadyRefunded };
  }

  /**
   * The operator's refund of a charge: Telegram gives the Stars back, then the payment is
   * reversed once. Telegram's "already refunded" counts as refunded (the reversal then happens
   * if it has not); any other refusal reverses nothing.
   */
  async refund(api: StarsApi, charge: string, telegramUserId: number): Promise<RefundOutcome> {
    let telegram: RefundOutcome['telegram'] = 'refunded';
    try {
      await api.refundStarPayment(telegramUserId, charge);
    } catch (error) {
      if (!isAlreadyRefunded(error)) throw error;
      telegram = 'already_refunded';
    }
    const reversal = await this.reverse(charge);
    return { telegram, reversal };
  }

  /** Reverses the payment of a refunded charge (the `refunded_payment` message, or the operator's refund), once. */
  reverse(charge: string): ReturnType<Payments['reverse']> {
    return this.payments.reverse({ provider: 'telegram', externalId: charge });
  }

  /** The Telegram user who paid `charge` (the messenger identity of the account credited), if known. */
  async payerOf(charge: string): Promise<number | null> {
    const payment = await this.payments.find('telegram', charge);
    if (!payment?.userId) return null;
    const identity = (await this.users.identities(payment.userId)).find((i) => i.kind === 'messenger');
    return identity ? Number(identity.subject) : null;
  }
}
