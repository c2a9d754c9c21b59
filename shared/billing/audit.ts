/**
 * The ledger audit an operator runs (`admin audit-ledger`) and every chaos and fuzz test runs
 * after its work: each rule the billing module promises, checked against the whole store.
 * - every account's ledger sums to its balance, and its last row shows the buckets as they are;
 * - no bucket is below zero, now or after any ledger row;
 * - a completed generation that charged has exactly one debit of what it charged, and nothing
 *   else (a failed or pending one, or a free one) has any;
 * - what an account holds is the sum of the prices of its pending generations;
 * - each payment has its one credit row and, once reversed, its one refund row (payment-audit.ts).
 */
import type { Database } from '../db/database';
import { auditPayments, PaymentAuditRule } from './payment-audit';

export type AuditRule = 'ledger_sum' | 'last_row' | 'negative_bucket' | 'debit_count' | 'debit_amount' | 'held_tokens' | PaymentAuditRule;

export interface AuditViolation {
  rule: AuditRule;
  userId: number;
  generationId?: number;
  paymentId?: number;
  detail: string;
}

export interface AuditReport {
  ok: boolean;
  accounts: number;
  generations: number;
  payments: number;
  violations: AuditViolation[];
}

const ACCOUNTS = `SELECT u.id, u.subscription_tokens AS subscription, u.bonus_tokens AS bonus, u.held_tokens AS held,
    (SELECT COALESCE(SUM(l.amount), 0) FROM token_ledger l WHERE l.user_id = u.id) AS ledger,
    (SELECT COALESCE(SUM(g.price), 0) FROM generations g WHERE g.user_id = u.id AND g.status = 'pending') AS pending
  FROM users u ORDER BY u.id`;

/** Each account's newest ledger row (the highest id). */
const LAST_ROWS = `SELECT l.user_id, l.subscription_after AS subscription, l.bonus_after AS bonus FROM token_ledger l
  WHERE l.id = (SELECT MAX(m.id) FROM token_ledger m WHERE m.user_id = l.user_id)`;

const NEGATIVE_ROWS = 'SELECT id, user_id, subscription_after AS subscription, bonus_after AS bonus FROM token_ledger WHERE user_id IS NOT NULL AND (subscription_after < 0 OR bonus_after < 0)';

const DEBITS = `SELECT g.id, g.user_id, g.status, g.tokens_spent AS spent, COUNT(l.id) AS debits, COALESCE(SUM(l.amount), 0) AS debited
  FROM generations g LEFT JOIN token_ledger l ON l.generation_id = g.id AND l.reason = 'generation'
  GROUP BY g.id, g.user_id, g.status, g.tokens_spent`;

type Num = number | string;

export async function auditLedger(db: Database): Promise<AuditReport> {
  const violations: AuditViolation[] = [];
  const accounts = await db.read<{ id: Num; subscription: Num; bonus: Num; held: Num; ledger: Num; pending: Num }>({ sql: ACCOUNTS });
  for (const a of accounts) {
    const userId = Number(a.id);
    const [subscription, bonus, held, ledger, pending] = [a.subscription, a.bonus, a.held, a.ledger, a.pending].map(Number) as [number, number, number, number, number];
    if (ledger !== subscription + bonus) violations.push({ rule: 'ledger_sum', userId, detail: `ledger sums to ${ledger}, balance is ${subscription + bonus}` });
    if (subscription < 0 || bonus < 0 || held < 0) violations.push({ rule: 'negative_bucket', userId, detail: `subscription ${subscription}, bonus ${bonus}, held ${held}` });
    if (held !== pending) violations.push({ rule: 'held_tokens', userId, detail: `holds ${held}, pending generations cost ${pending}` });
  }
  const balances = new Map(accounts.map((a) => [Number(a.id), { subscription: Number(a.subscription), bonus: Number(a.bonus) }]));
  for (const row of await db.read<{ user_id: Num; subscription: Num; bonus: Num }>({ sql: LAST_ROWS })) {
    const now = balances.get(Number(row.user_id));
    if (now && (Number(row.subscription) !== now.subscription || Number(row.bonus) !== now.bonus)) {
      violations.push({ rule: 'last_row', userId: Number(row.user_id), detail: `last ledger row says ${row.subscription}/${row.bonus}, the account has ${now.subscription}/${now.bonus}` });
    }
  }
  for (const row of await db.read<{ id: Num; user_id: Num; subscription: Num; bonus: Num }>({ sql: NEGATIVE_ROWS })) {
    violations.push({ rule: 'negative_bucket', userId: Number(row.user_id), detail: `ledger row ${row.id} left ${row.subscription}/${row.bonus}` });
  }
  const generations = await db.read<{ id: Num; user_id: Num; status: string; spent: Num; debits: Num; debited: Num }>({ sql: DEBITS });
  for (const g of generations) {
    const [spent, debits, debited] = [Number(g.spent), Number(g.debits), Number(g.debited)];
    const expected = g.status === 'completed' && spent > 0 ? 1 : 0;
    const where = { userId: Number(g.user_id), generationId: Number(g.id) };
    if (debits !== expected) violations.push({ rule: 'debit_count', ...where, detail: `${g.status} generation charged ${spent} has ${debits} debits` });
    else if (expected === 1 && debited !== -spent) violations.push({ rule: 'debit_amount', ...where, detail: `charged ${spent}, debited ${-debited}` });
  }
  const payments = await auditPayments(db);
  violations.push(...payments.violations);
  return { ok: violations.length === 0, accounts: accounts.length, generations: generations.length, payments: payments.payments, violations };
}
