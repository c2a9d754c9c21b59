/**
 * Reconciliation of Telegram Stars with the payments table: every page of `getStarTransactions`
 * against every `telegram` payment. A StarTransaction's id is the charge id of the payment it
 * records (`telegram_payment_charge_id`), and a refund is an outgoing transaction with the same
 * id, so the two sides meet on it.
 */
import type { StarTransaction } from 'grammy/types';
import type { Database } from '../db/database';
import { Payment } from '../db/entities';
import type { StarsApi } from './stars';

/** Telegram's largest page. */
const PAGE = 100;

export type MismatchKind =
  /** Telegram took the Stars (and did not refund them) but no payment credits them. */
  | 'charge_not_credited'
  /** A payment credited under a charge id Telegram does not list. */
  | 'payment_unknown_to_telegram'
  /** Telegram refunded the charge but its payment is still credited. */
  | 'refund_not_reversed'
  /** The payment was reversed but Telegram did not refund the charge. */
  | 'reversed_not_refunded'
  /** Telegram and the payment disagree on the Stars paid. */
  | 'amount_differs';

export interface Mismatch {
  kind: MismatchKind;
  charge_id: string;
  telegram_user_id: number | null;
  telegram_amount: number | null;
  payment_id: number | null;
  user_id: number | null;
  amount: number | null;
  invoice_payload: string | null;
}

export interface Reconciliation {
  ok: boolean;
  telegram_charges: number;
  telegram_refunds: number;
  payments: number;
  mismatches: Mismatch[];
}

interface Charge {
  amount: number;
  telegramUserId: number;
  payload: string | null;
}

async function allTransactions(api: StarsApi): Promise<StarTransaction[]> {
  const all: StarTransaction[] = [];
  for (let offset = 0; ; offset += PAGE) {
    const page = await api.getStarTransactions({ offset, limit: PAGE });
    all.push(...page.transactions);
    if (page.transactions.length < PAGE) return all;
  }
}

export async function reconcileStars(api: StarsApi, db: Database): Promise<Reconciliation> {
  const charges = new Map<string, Charge>();
  const refunded = new Set<string>();
  for (const tx of await allTransactions(api)) {
    // Incoming from a person paying an invoice: a charge. Outgoing to a person: a refund of the charge with this id.
    if (tx.source?.type === 'user' && tx.source.transaction_type === 'invoice_payment') {
      charges.set(tx.id, { amount: tx.amount, telegramUserId: tx.source.user.id, payload: tx.source.invoice_payload ?? null });
    } else if (tx.receiver?.type === 'user') {
      refunded.add(tx.id);
    }
  }
  const payments = await db.repo(Payment).find({ where: { provider: 'telegram' }, order: { id: 'ASC' } });
  const mismatches: Mismatch[] = [];
  const report = (kind: MismatchKind, chargeId: string, charge: Charge | undefined, payment: Payment | undefined) =>
    mismatches.push({
      kind,
      charge_id: chargeId,
      telegram_user_id: charge?.telegramUserId ?? null,
      telegram_amount: charge?.amount ?? null,
      payment_id: payment?.id ?? null,
      user_id: payment?.userId ?? null,
      amount: payment?.amount ?? null,
      invoice_payload: charge?.payload ?? null,
    });
  const ours = new Map(payments.map((p) => [p.externalId, p]));
  for (const [id, charge] of charges) {
    if (!ours.has(id) && !refunded.has(id)) report('charge_not_credited', id, charge, undefined);
  }
  for (const payment of payments) {
    const id = payment.externalId;
    const charge = charges.get(id);
    if (!charge) {
      report('payment_unknown_to_telegram', id, undefined, payment);
      continue;
    }
    if (charge.amount !== payment.amount) report('amount_differs', id, charge, payment);
    if (refunded.has(id) && payment.status === 'credited') report('refund_not_reversed', id, charge, payment);
    if (!refunded.has(id) && payment.status === 'reversed') report('reversed_not_refunded', id, charge, payment);
  }
  return { ok: mismatches.length === 0, telegram_charges: charges.size, telegram_refunds: refunded.size, payments: payments.length, mismatches };
}
