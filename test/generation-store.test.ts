/**
 * The plain-SQL writes and reads of the generation hot path (db/raw.ts, db/rows.ts,
 * generation/store.ts) on each store: rows read back as TypeORM reads them, a failed batch
 * leaves nothing behind, and one completion's server-side variables never leak into the next.
 */
import path from 'node:path';
import { ApiKey, Generation, LedgerEntry, User, Webhook } from '../shared/db/entities';
import { positional } from '../shared/db/raw';
import { EntityRows } from '../shared/db/rows';
import { CompletionSet, pendingGeneration } from '../shared/generation/store';
import { useTestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { userOnPlan } from './helpers/users';

const fake = new FakeProvider('fake');
const t = useTestApp({ CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json') }, { providers: [fake.adapter()] });

function pendingRow(userId: number, price: number, idempotencyKey: string | null = null): Generation {
  return pendingGeneration({
    userId,
    modelSlug: 'fake-text',
    category: 'text',
    source: 'api',
    prompt: 'p',
    input: '{}',
    price,
    seed: null,
    etaSeconds: null,
    idempotencyKey,
    requestHash: null,
    scheduleId: null,
    assistantId: null,
    createdAt: t.app.clock.now(),
  });
}

function completion(price: number): CompletionSet {
  const now = t.app.clock.now();
  return {
    status: 'completed',
    provider: 'fake',
    resultText: 'done',
    resultKey: null,
    thumbnailKey: null,
    resultMetadata: '{}',
    usage: null,
    seed: null,
    progress: 100,
    tokensSpent: price,
    processingMs: 5,
    completedAt: now,
    leaseUntil: null,
    updatedAt: now,
  };
}

async function userRow(id: number) {
  return t.app.container.db.repo(User).findOneByOrFail({ id });
}

describe('entity rows', () => {
  it('reads a user with every column set exactly as TypeORM does', async () => {
    const user = await userOnPlan(t.app, 'vip', 7);
    const { db } = t.app.container;
    await db.repo(User).update({ id: user.id }, { avatarUrl: 'https://example.test/a.png', messengerUsername: 'someone', notificationsEnabled: false, heldTokens: 3 });
    const rows = new EntityRows(db.source, User);
    const [raw] = await db.read<Record<string, unknown>>({ sql: `SELECT ${rows.selectList('u', 'x_')} FROM users u WHERE u.id = :id`, params: { id: user.id } });
    const expected = await userRow(user.id);
    expect(expected.planExpiresAt).toBeInstanceOf(Date);
    expect(rows.hydrate(raw!, 'x_')).toEqual(expected);
    expect(rows.hydrate(raw!, 'x_')).toBeInstanceOf(User);
  });

  it('writes a generation that TypeORM reads back field for field', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const row = pendingRow(user.id, 2, 'rows-key');
    row.seed = 42;
    row.isFavorited = true;
    row.leaseUntil = new Date(t.app.clock.now().getTime() + 60_000);
    const held = await t.app.container.generationStore.insertHeld(row, null);
    if (!held.held) throw new Error('not held');
    const stored = await t.app.container.db.repo(Generation).findOneByOrFail({ id: held.id });
    expect({ ...stored }).toEqual({ ...row, id: held.id });
  });

  it('names only the columns a new row fills, and reads each shape back field for field', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const bare = pendingRow(user.id, 1);
    const filled = pendingRow(user.id, 1, 'shapes-key');
    filled.seed = 7;
    filled.etaSeconds = 30;
    const statements: string[] = [];
    const billing = t.app.container.billing;
    const holdThen = billing.holdThen.bind(billing);
    const spy = jest.spyOn(billing, 'holdThen').mockImplementation((hold, writes) => {
      statements.push(...writes.map((write) => write.sql));
      return holdThen(hold, writes);
    });
    try {
      for (const row of [bare, filled]) {
        const held = await t.app.container.generationStore.insertHeld(row, null);
        if (!held.held) throw new Error('not held');
        expect({ ...(await t.app.container.db.repo(Generation).findOneByOrFail({ id: held.id })) }).toEqual({ ...row, id: held.id });
      }
    } finally {
      spy.mockRestore();
    }
    // The bare row's INSERT leaves its null columns (and their values) out; the filled one names them.
    expect(statements[0]).not.toMatch(/`seed`|`idempotency_key`|`result_text`|`completed_at`/);
    for (const column of ['`seed`', '`eta_seconds`', '`idempotency_key`']) expect(statements[1]).toContain(column);
  });

  it('authenticates an API key and reads its owner in one statement', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const { secret } = await t.app.container.apiKeys.create(user.id, 'k');
    const found = await t.app.container.apiKeys.authenticate(secret);
    expect(found?.user).toEqual(await userRow(user.id));
    expect(found?.key).toMatchObject({ userId: user.id, id: (await t.app.container.db.repo(ApiKey).findOneByOrFail({ userId: user.id })).id });
  });
});

describe('named parameters', () => {
  it('turns :names into placeholders with their values in order, a name used twice bound twice', () => {
    expect(positional({ sql: 'UPDATE t SET a = :a WHERE id = :id AND a <> :a', params: { id: 7, a: 'x', unused: 1 } })).toEqual({
      sql: 'UPDATE t SET a = ? WHERE id = ? AND a <> ?',
      values: ['x', 7, 'x'],
    });
  });

  it("leaves session assignments and quoted text alone", () => {
    expect(positional({ sql: "SET @v := ROW_COUNT(); SELECT ':not_a_name', @v = :one", params: { one: 1 } })).toEqual({
      sql: "SET @v := ROW_COUNT(); SELECT ':not_a_name', @v = ?",
      values: [1],
    });
  });

  it('refuses a statement whose parameter is missing, rather than bind NULL', () => {
    expect(() => positional({ sql: 'UPDATE users SET held_tokens = :price WHERE id = :userId', params: { price: 3 } })).toThrow(/a parameter of this statement is missing/);
    expect(() => positional({ sql: 'SELECT :a', params: { a: undefined } })).toThrow(/missing/);
  });
});

describe('hold and insert', () => {
  it('changes nothing when the balance cannot cover the price, on any pooled connection', async () => {
    const store = t.app.container.generationStore;
    // Every pooled connection first runs a hold that succeeds (its session says "held")...
    const rich = await userOnPlan(t.app, 'vip');
    const held = await Promise.all(Array.from({ length: 30 }, () => store.insertHeld(pendingRow(rich.id, 1), null)));
    expect(held.every((h) => h.held)).toBe(true);
    // ...and then one that cannot: nothing of the earlier batch may carry over.
    const user = await userOnPlan(t.app, 'free');
    const before = await userRow(user.id);
    const results = await Promise.all(Array.from({ length: 30 }, () => store.insertHeld(pendingRow(user.id, before.subscriptionTokens + 1), null)));
    expect(results.every((r) => !r.held)).toBe(true);
    expect(await userRow(user.id)).toEqual(before);
    expect(await t.app.container.db.repo(Generation).countBy({ userId: user.id })).toBe(0);
  });

  it('rolls the hold back when the insert fails (a key another request took)', async () => {
    const user = await userOnPlan(t.app, 'free');
    const store = t.app.container.generationStore;
    const first = await store.insertHeld(pendingRow(user.id, 2, 'taken'), null);
    expect(first.held).toBe(true);
    // Compared by message: better-sqlite3 makes its errors with the constructor of the first test
    // file that loaded it in this jest worker, so they are not `instanceof Error` in later files.
    const second = await store.insertHeld(pendingRow(user.id, 5, 'taken'), null).then(
      (result) => ({ resolved: result, rows: [] as unknown[] }),
      (error: Error) => ({ rejected: error.message }),
    );
    if ('resolved' in second) second.rows = await t.app.container.db.read({ sql: 'SELECT id, user_id, idempotency_key, status FROM generations WHERE user_id = :userId', params: { userId: user.id } });
    expect(second).toEqual({ rejected: expect.stringMatching(/Duplicate entry|UNIQUE constraint/) });
    expect((await userRow(user.id)).heldTokens).toBe(2);
    expect(await t.app.container.db.repo(Generation).countBy({ userId: user.id })).toBe(1);
    // The connection that failed is usable again: the next batch commits normally.
    const next = await store.insertHeld(pendingRow(user.id, 3, 'free-key'), null);
    expect(next.held).toBe(true);
    expect((await userRow(user.id)).heldTokens).toBe(5);
  });

  it('lets go of a stale key in the same transaction', async () => {
    const user = await userOnPlan(t.app, 'free');
    const store = t.app.container.generationStore;
    const old = await store.insertHeld(pendingRow(user.id, 1, 'reused'), null);
    if (!old.held) throw new Error('not held');
    // Refused for the balance: the old row keeps its key.
    const refused = await store.insertHeld(pendingRow(user.id, 10_000, 'reused'), old.id);
    expect(refused.held).toBe(false);
    expect((await t.app.container.db.repo(Generation).findOneByOrFail({ id: old.id })).idempotencyKey).toBe('reused');
    const again = await store.insertHeld(pendingRow(user.id, 1, 'reused'), old.id);
    expect(again.held).toBe(true);
    expect((await t.app.container.db.repo(Generation).findOneByOrFail({ id: old.id })).idempotencyKey).toBeNull();
  });
});

describe('completion', () => {
  it('charges once, and a repeated completion on any pooled connection changes nothing', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const store = t.app.container.generationStore;
    const ids: number[] = [];
    for (let i = 0; i < 30; i++) {
      const held = await store.insertHeld(pendingRow(user.id, 3), null);
      if (!held.held) throw new Error('not held');
      ids.push(held.id);
    }
    const start = await userRow(user.id);
    const results = await Promise.all(ids.map((id) => store.complete({ id, userId: user.id, price: 3 }, completion(3), t.app.clock.now())));
    expect(results.every((r) => r?.charged === 3)).toBe(true);
    const balances = results.map((r) => r?.balance).sort((a, b) => (b ?? 0) - (a ?? 0));
    expect(balances[balances.length - 1]).toBe(start.subscriptionTokens + start.bonusTokens - 90);
    // Every pooled connection has now run a winning completion; repeats must find nothing to do.
    const repeats = await Promise.all(ids.map((id) => store.complete({ id, userId: user.id, price: 3 }, completion(3), t.app.clock.now())));
    expect(repeats.every((r) => r === null)).toBe(true);
    const after = await userRow(user.id);
    expect(after.subscriptionTokens + after.bonusTokens).toBe(start.subscriptionTokens + start.bonusTokens - 90);
    expect(after.heldTokens).toBe(0);
    expect(await t.app.container.db.repo(LedgerEntry).countBy({ userId: user.id, reason: 'generation' })).toBe(30);
  });

  it('charges a free generation nothing and writes no ledger row', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const store = t.app.container.generationStore;
    const held = await store.insertHeld(pendingRow(user.id, 0), null);
    if (!held.held) throw new Error('not held');
    const before = await userRow(user.id);
    expect(await store.complete({ id: held.id, userId: user.id, price: 0 }, completion(0), t.app.clock.now())).toEqual({
      charged: 0,
      balance: before.subscriptionTokens + before.bonusTokens,
      hasWebhooks: false,
    });
    expect(await t.app.container.db.repo(LedgerEntry).countBy({ generationId: held.id })).toBe(0);
  });

  it("tells whether the owner has an active webhook with the charge (disabled ones do not count)", async () => {
    const user = await userOnPlan(t.app, 'vip');
    const { generationStore: store, db } = t.app.container;
    const hook = (url: string, disabledAt: Date | null) =>
      db.repo(Webhook).save({ userId: user.id, url, events: '["generation.completed"]', secret: 's', createdAt: t.app.clock.now(), failingSince: null, disabledAt });
    const kept = await hook('https://hooks.example.test/a', null);
    const disabled = await hook('https://hooks.example.test/b', t.app.clock.now());
    const held = await store.insertHeld(pendingRow(user.id, 1), null);
    if (!held.held) throw new Error('not held');
    const captured = await store.complete({ id: held.id, userId: user.id, price: 1 }, completion(1), t.app.clock.now());
    expect(captured?.hasWebhooks).toBe(true);
    await db.repo(Webhook).update({ id: kept.id }, { disabledAt: t.app.clock.now() });
    const next = await store.insertHeld(pendingRow(user.id, 1), null);
    if (!next.held) throw new Error('not held');
    expect((await store.complete({ id: next.id, userId: user.id, price: 1 }, completion(1), t.app.clock.now()))?.hasWebhooks).toBe(false);
    expect(kept.id).not.toBe(disabled.id);
  });
});
