/**
 * Telegram Stars in the fake Bot API (test/helpers/fake-telegram.ts delegates to it): invoices
 * (`sendInvoice`, `createInvoiceLink`) checked as Telegram checks them for XTR, pre-checkout
 * queries and their answers, charges with their `successful_payment` messages (subscriptions
 * renew with a new charge id), refunds (`refundStarPayment`, with Telegram's errors, and the
 * `refunded_payment` message), subscription cancellation, and the bot's Star transactions
 * (`getStarTransactions`, paged, in chronological order).
 */
import crypto from 'node:crypto';

/** The person paying (fake-telegram.ts's TgUser; not imported, so the two files do not import each other). */
interface TgUser {
  id: number;
  is_bot: boolean;
  first_name: string;
  username?: string;
  language_code?: string;
}

type Update = Record<string, unknown> & { update_id: number };

export interface Invoice {
  title: string;
  description: string;
  payload: string;
  currency: string;
  total_amount: number;
  /** Set for a subscription (invoice links only). */
  subscription_period?: number;
  /** The chat a sent invoice went to; the link of an invoice link. */
  chat_id?: number;
  link?: string;
}

export interface Charge {
  id: string;
  user: TgUser;
  amount: number;
  payload: string;
  subscription: boolean;
  refunded: boolean;
  canceled: boolean;
  date: number;
}

interface StarTransaction {
  id: string;
  amount: number;
  date: number;
  source?: Record<string, unknown>;
  receiver?: Record<string, unknown>;
}

type BotApiError = { error_code: number; description: string };

const bad = (description: string): BotApiError => ({ error_code: 400, description: `Bad Request: ${description}` });

export interface StarsHost {
  /** Queues an update (or posts it to the webhook). */
  push(update: Omit<Update, 'update_id'>): Update;
  nextMessageId(chatId: number): number;
}

export class FakeStars {
  readonly invoices: Invoice[] = [];
  readonly charges = new Map<string, Charge>();
  readonly transactions: StarTransaction[] = [];
  /** Answers to pre-checkout queries by query id. */
  readonly answers = new Map<string, { ok: boolean; error_message?: string }>();
  private readonly pending = new Set<string>();
  /** Whether a refund sends the `refunded_payment` message to the chat (Telegram does). */
  notifyRefunds = true;

  constructor(private readonly host: StarsHost) {}

  handles(method: string): boolean {
    return ['sendInvoice', 'createInvoiceLink', 'answerPreCheckoutQuery', 'refundStarPayment', 'editUserStarSubscription', 'getStarTransactions'].includes(method);
  }

  answer(method: string, params: Record<string, unknown>): unknown {
    switch (method) {
      case 'sendInvoice': {
        const invoice = this.invoice(params, false);
        const chatId = Number(params.chat_id);
        this.invoices.push({ ...invoice, chat_id: chatId });
        return {
          message_id: this.host.nextMessageId(chatId),
          date: now(),
          chat: { id: chatId, type: chatId < 0 ? 'group' : 'private' },
          invoice: { title: invoice.title, description: invoice.description, start_parameter: String(params.start_parameter ?? ''), currency: invoice.currency, total_amount: invoice.total_amount },
        };
      }
      case 'createInvoiceLink': {
        const invoice = this.invoice(params, true);
        const link = `https://t.me/$${crypto.randomBytes(9).toString('base64url')}`;
        this.invoices.push({ ...invoice, link });
        return link;
      }
      case 'answerPreCheckoutQuery': {
        const id = String(params.pre_checkout_query_id ?? '');
        if (!this.pending.has(id)) throw bad('QUERY_ID_INVALID');
        const ok = params.ok === true || params.ok === 'true';
        if (!ok && !params.error_message) throw bad('ERROR_MESSAGE_EMPTY');
        this.pending.delete(id);
        this.answers.set(id, ok ? { ok } : { ok, error_message: String(params.error_message) });
        return true;
      }
      case 'refundStarPayment': {
        const charge = this.charges.get(String(params.telegram_payment_charge_id ?? ''));
        if (!charge) throw bad('CHARGE_NOT_FOUND');
        if (charge.user.id !== Number(params.user_id)) throw bad('USER_ID_INVALID');
        if (charge.refunded) throw bad('CHARGE_ALREADY_REFUNDED');
        this.refund(charge);
        return true;
      }
      case 'editUserStarSubscription': {
        const charge = this.charges.get(String(params.telegram_payment_charge_id ?? ''));
        if (!charge || !charge.subscription) throw bad('CHARGE_NOT_FOUND');
        if (charge.user.id !== Number(params.user_id)) throw bad('USER_ID_INVALID');
        charge.canceled = params.is_canceled === true || params.is_canceled === 'true';
        return true;
      }
      case 'getStarTransactions': {
        const offset = Number(params.offset ?? 0);
        const limit = Number(params.limit ?? 100);
        if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw bad('limit must be between 1 and 100');
        return { transactions: this.transactions.slice(offset, offset + limit) };
      }
      default:
        throw { error_code: 404, description: `Not Found: method ${method} is not faked` };
    }
  }

  /** Checks an invoice as Telegram does for Stars. */
  private invoice(params: Record<string, unknown>, isLink: boolean): Invoice {
    const title = String(params.title ?? '');
    const description = String(params.description ?? '');
    const payload = String(params.payload ?? '');
    const currency = String(params.currency ?? '');
    const prices = (typeof params.prices === 'string' ? JSON.parse(params.prices) : params.prices) as Array<{ label?: string; amount?: number }> | undefined;
    if (title.length < 1 || title.length > 32) throw bad('INVOICE_TITLE_INVALID');
    if (description.length < 1 || description.length > 255) throw bad('INVOICE_DESCRIPTION_INVALID');
    const bytes = Buffer.byteLength(payload);
    if (bytes < 1 || bytes > 128) throw bad('INVOICE_PAYLOAD_INVALID');
    if (currency !== 'XTR') throw bad('this fake sells Stars only (currency XTR)');
    if (params.provider_token !== undefined && params.provider_token !== '') throw bad('PROVIDER_TOKEN_INVALID: pass an empty provider token for Stars');
    if (params.max_tip_amount !== undefined) throw bad('tips are not supported for payments in Telegram Stars');
    if (!Array.isArray(prices) || prices.length !== 1) throw bad('prices must contain exactly one item for payments in Telegram Stars');
    const amount = prices[0]?.amount;
    if (!Number.isInteger(amount) || (amount ?? 0) < 1 || !prices[0]?.label) throw bad('CURRENCY_TOTAL_AMOUNT_INVALID');
    const period = params.subscription_period === undefined ? undefined : Number(params.subscription_period);
    if (period !== undefined && (!isLink || period !== 2_592_000)) throw bad('SUBSCRIPTION_PERIOD_INVALID');
    return { title, description, payload, currency, total_amount: amount as number, ...(period ? { subscription_period: period } : {}) };
  }

  // ---- What people do --------------------------------------------------------------------

  /** The person opens the invoice and confirms: Telegram sends the bot a pre-checkout query. */
  preCheckout(from: TgUser, invoice: Pick<Invoice, 'payload' | 'currency' | 'total_amount'>): { id: string; update: Update } {
    const made = this.preCheckoutQuery(from, invoice);
    return { id: made.id, update: this.host.push(made.update) };
  }

  /** The pre-checkout query update, made (and awaiting its answer) but not sent. */
  preCheckoutQuery(from: TgUser, invoice: Pick<Invoice, 'payload' | 'currency' | 'total_amount'>): { id: string; update: Omit<Update, 'update_id'> } {
    const id = crypto.randomBytes(8).toString('hex');
    this.pending.add(id);
    return { id, update: { pre_checkout_query: { id, from, currency: invoice.currency, total_amount: invoice.total_amount, invoice_payload: invoice.payload } } };
  }

  /**
   * Telegram takes the Stars: the charge, its incoming transaction, and the `successful_payment`
   * message as an update that is made but not sent (push it, redeliver it, or post it anywhere).
   * A renewal (`renewalOf`) is a new charge of the same subscription, `is_recurring` set.
   */
  charge(from: TgUser, invoice: Pick<Invoice, 'payload' | 'currency' | 'total_amount' | 'subscription_period'>, renewalOf?: Charge): { charge: Charge; update: Omit<Update, 'update_id'> } {
    const subscription = invoice.subscription_period !== undefined;
    const charge: Charge = {
      id: `stxFAKE${crypto.randomBytes(12).toString('base64url')}`,
      user: from,
      amount: invoice.total_amount,
      payload: invoice.payload,
      subscription,
      refunded: false,
      canceled: false,
      date: now(),
    };
    this.charges.set(charge.id, charge);
    this.transactions.push({
      id: charge.id,
      amount: charge.amount,
      date: charge.date,
      source: { type: 'user', transaction_type: 'invoice_payment', user: from, invoice_payload: charge.payload, ...(subscription ? { subscription_period: invoice.subscription_period } : {}) },
    });
    const successful_payment = {
      currency: invoice.currency,
      total_amount: invoice.total_amount,
      invoice_payload: invoice.payload,
      telegram_payment_charge_id: charge.id,
      provider_payment_charge_id: '',
      ...(subscription
        ? { subscription_expiration_date: charge.date + (invoice.subscription_period ?? 0), is_recurring: true, ...(renewalOf ? {} : { is_first_recurring: true }) }
        : {}),
    };
    const chat = { id: from.id, type: 'private', first_name: from.first_name };
    return { charge, update: { message: { message_id: this.host.nextMessageId(from.id), date: charge.date, chat, from, successful_payment } } };
  }

  /** Telegram refunds the charge (as after `refundStarPayment`): the outgoing transaction and, if on, the chat's `refunded_payment` message. */
  refund(charge: Charge): void {
    charge.refunded = true;
    this.transactions.push({
      id: charge.id,
      amount: charge.amount,
      date: now(),
      receiver: { type: 'user', transaction_type: 'invoice_payment', user: charge.user, invoice_payload: charge.payload },
    });
    if (!this.notifyRefunds) return;
    const chat = { id: charge.user.id, type: 'private', first_name: charge.user.first_name };
    this.host.push({
      message: {
        message_id: this.host.nextMessageId(charge.user.id),
        date: now(),
        chat,
        from: charge.user,
        refunded_payment: { currency: 'XTR', total_amount: charge.amount, invoice_payload: charge.payload, telegram_payment_charge_id: charge.id },
      },
    });
  }
}

function now(): number {
  return Math.floor(Date.now() / 1000);
}
