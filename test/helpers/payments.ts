/** What the payment suites share: a catalog to spend tokens with, the audit, ledger rows by payment. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { auditLedger } from '../../shared/billing/audit';
import { LedgerEntry, User } from '../../shared/db/entities';
import type { TestApp } from './app';

interface CatalogEntry {
  slug: string;
  sync: boolean;
  price: Record<string, unknown>;
  [field: string]: unknown;
}

/**
 * The fixture catalog plus `spend-100` (a synchronous text model that costs 100 tokens) and
 * `hold-100` (a queued one: with no worker it stays pending, holding 100): real ways to spend
 * and to hold tokens before a refund.
 */
export function spendingCatalog(): string {
  const fixture = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'catalog.json'), 'utf8')) as { models: CatalogEntry[] };
  const text = fixture.models.find((m) => m.slug === 'fake-text');
  if (!text) throw new Error('the fixture catalog has no fake-text');
  fixture.models.push(
    { ...text, slug: 'spend-100', name: 'Spend 100', price: { base: 100 } },
    { ...text, slug: 'hold-100', name: 'Hold 100', sync: false, eta_seconds: 5, supports_streaming: false, price: { base: 100 } },
  );
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'gensvc-catalog-')), 'catalog.json');
  fs.writeFileSync(file, JSON.stringify(fixture));
  return file;
}

/** The ledger audit (admin audit-ledger) finds nothing. */
export async function expectAuditClean(app: TestApp): Promise<void> {
  const report = await auditLedger(app.container.db);
  expect(report.violations).toEqual([]);
}

/** The ledger rows of one payment (their note is `<provider>:<external id>`). */
export function rowsOfPayment(app: TestApp, note: string): Promise<LedgerEntry[]> {
  return app.container.db.repo(LedgerEntry).find({ where: { note }, order: { id: 'ASC' } });
}

export async function bucketsOf(app: TestApp, userId: number) {
  const user = await app.container.db.repo(User).findOneByOrFail({ id: userId });
  return { plan: user.plan, subscription: user.subscriptionTokens, bonus: user.bonusTokens, held: user.heldTokens, expiresAt: user.planExpiresAt };
}
