/**
 * The ledger audit's rules for payments (shared/payments): each payment and its ledger rows,
 * matched by the rows' note `<provider>:<external id>`.
 * - a payment has exactly one credit row (`purchase`, or `redemption` for a code), of its
 *   account, and a token payment's row credits exactly its tokens;
 * - a reversed payment has exactly one `refund` row (none when its account was deleted before
 *   the refund), a credited one none; a token payment's refund took back `reversed_tokens`, and
 *   that plus its shortfall is what it credited;
 * - no `purchase`, `redemption` or `refund` row names a payment that does not exist.
 * The balance rules (the ledger sums to the balance) are audit.ts's and hold for these rows too.
 */
import type { Database } from '../db/database';

export type PaymentAuditRule = 'payment_credit' | 'payment_reversal' | 'payment_orphan';

export interface PaymentViolation {
  rule: PaymentAuditRule;
  userId: number;
  paymentId?: number;
  detail: string;
}

type Num = number | string;

interface PaymentRow {
  id: Num;
  provider: string;
  external_id: string;
  user_id: Num | null;
  kind: string;
  tokens: Num;
  status: string;
  reversed_tokens: Num;
  shortfall_tokens: Num;
}

interface LedgerRow {
  id: Num;
  user_id: Num | null;
  amount: Num;
  reason: string;
  note: string | null;
}

const PAYMENTS = 'SELECT id, provider, external_id, user_id, kind, tokens, status, reversed_tokens, shortfall_tokens FROM payments ORDER BY id';
const PAYMENT_ROWS = "SELECT id, user_id, amount, reason, note FROM token_ledger WHERE reason IN ('purchase', 'redemption', 'refund') ORDER BY id";

export async function auditPayments(db: Database): Promise<{ payments: number; violations: PaymentViolation[] }> {
  const violations: PaymentViolation[] = [];
  const payments = await db.read<PaymentRow>({ sql: PAYMENTS });
  const rowsByNote = new Map<string, LedgerRow[]>();
  for (const row of await db.read<LedgerRow>({ sql: PAYMENT_ROWS })) {
    const note = row.note ?? '';
    rowsByNote.set(note, [...(rowsByNote.get(note) ?? []), row]);
  }
  for (const p of payments) {
    const note = `${p.provider}:${p.external_id}`;
    const rows = rowsByNote.get(note) ?? [];
    rowsByNote.delete(note);
    const userId = p.user_id === null ? 0 : Number(p.user_id);
    const where = { userId, paymentId: Number(p.id) };
    const creditReason = p.provider === 'code' ? 'redemption' : 'purchase';
    const credits = rows.filter((r) => r.reason === creditReason);
    const refunds = rows.filter((r) => r.reason === 'refund');
    const strays = rows.filter((r) => r.reason !== creditReason && r.reason !== 'refund');
    const foreign = rows.filter((r) => p.user_id !== null && Number(r.user_id) !== userId);
    if (credits.length !== 1) violations.push({ rule: 'payment_credit', ...where, detail: `payment ${note} has ${credits.length} ${creditReason} rows` });
    else if (p.kind === 'tokens' && Number(credits[0]?.amount) !== Number(p.tokens)) {
      violations.push({ rule: 'payment_credit', ...where, detail: `payment ${note} credited ${p.tokens} tokens, its row ${credits[0]?.amount}` });
    }
    if (strays.length > 0) violations.push({ rule: 'payment_credit', ...where, detail: `payment ${note} has ${strays.length} rows of another kind of payment` });
    if (foreign.length > 0) violations.push({ rule: 'payment_credit', ...where, detail: `payment ${note} has ${foreign.length} rows of another account` });
    const expectedRefunds = p.status === 'reversed' ? (p.user_id === null ? refunds.length : 1) : 0;
    if (refunds.length !== expectedRefunds || refunds.length > 1) {
      violations.push({ rule: 'payment_reversal', ...where, detail: `${p.status} payment ${note} has ${refunds.length} refund rows` });
    } else if (p.kind === 'tokens' && p.status === 'reversed') {
      const takenBack = refunds.length === 1 ? -Number(refunds[0]?.amount) : 0;
      if (takenBack !== Number(p.reversed_tokens) || Number(p.reversed_tokens) + Number(p.shortfall_tokens) !== Number(p.tokens)) {
        violations.push({ rule: 'payment_reversal', ...where, detail: `payment ${note} of ${p.tokens} tokens: refund row took ${takenBack}, the payment says ${p.reversed_tokens} taken and ${p.shortfall_tokens} short` });
      }
    }
  }
  for (const [note, rows] of rowsByNote) {
    for (const row of rows) {
      violations.push({ rule: 'payment_orphan', userId: row.user_id === null ? 0 : Number(row.user_id), detail: `ledger row ${row.id} (${row.reason}) names no payment: ${note || '(no note)'}` });
    }
  }
  return { payments: payments.length, violations };
}
