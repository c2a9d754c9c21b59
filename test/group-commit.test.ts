/**
 * SQLite's group commit (Database.sqliteWrite): writes asked for together share one COMMIT, yet
 * each stays atomic on its own (a write that throws is rolled back alone and only its caller
 * hears it), and many concurrent billed generations through the API end with every balance and
 * ledger row right. Embedded only: on MySQL each transaction is its own round trip.
 */
import path from 'node:path';
import { LedgerEntry, User } from '../shared/db/entities';
import { useTestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { storeKind } from './helpers/stores';
import { userOnPlan } from './helpers/users';

const embeddedOnly = storeKind() === 'embedded' ? describe : describe.skip;
const fake = new FakeProvider('fake');
const t = useTestApp({ CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json') }, { providers: [fake.adapter()] });

const SET_NAME = 'UPDATE users SET name = :name WHERE id = :id';

embeddedOnly('group commit on SQLite', () => {
  it('keeps each write of a batch atomic on its own: one that throws is rolled back alone', async () => {
    const a = await userOnPlan(t.app, 'free');
    const b = await userOnPlan(t.app, 'free');
    const c = await userOnPlan(t.app, 'free');
    const db = t.app.container.db;
    // Asked for in one turn of the event loop: one batch.
    const first = db.sqliteWrite((sqlite) => sqlite.run({ sql: SET_NAME, params: { id: a.id, name: 'first' } }).affected);
    const failing = db.sqliteWrite((sqlite) => {
      sqlite.run({ sql: SET_NAME, params: { id: b.id, name: 'never' } });
      throw new Error('this write fails after its first statement');
    });
    const third = db.sqliteWrite((sqlite) => sqlite.run({ sql: SET_NAME, params: { id: c.id, name: 'third' } }).affected);
    await expect(first).resolves.toBe(1);
    await expect(failing).rejects.toThrow('this write fails after its first statement');
    await expect(third).resolves.toBe(1);
    const names = async (id: number) => (await db.repo(User).findOneByOrFail({ id })).name;
    expect(await names(a.id)).toBe('first');
    expect(await names(b.id)).not.toBe('never');
    expect(await names(c.id)).toBe('third');
  });

  it('bills every one of many concurrent generations exactly once', async () => {
    const user = await userOnPlan(t.app, 'vip', 1000);
    const key = await t.app.http().post('/api/v2/keys').set('authorization', `Bearer ${user.accessToken}`).send({ name: 'load' });
    const before = (await t.app.container.db.repo(User).findOneByOrFail({ id: user.id }));
    const balanceBefore = before.subscriptionTokens + before.bonusTokens;
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        t.app.http().post('/api/v2/generate').set('authorization', `Bearer ${key.body.key as string}`).send({ model: 'fake-text', prompt: `hello ${i}` }),
      ),
    );
    expect(answers.map((r) => r.status).every((s) => s === 200)).toBe(true);
    const spent = answers.reduce((sum, r) => sum + Number(r.body.tokens_spent), 0);
    expect(spent).toBeGreaterThan(0);
    const after = await t.app.container.db.repo(User).findOneByOrFail({ id: user.id });
    expect(after.subscriptionTokens + after.bonusTokens).toBe(balanceBefore - spent);
    expect(after.heldTokens).toBe(0);
    const ledger = await t.app.container.db.repo(LedgerEntry).findBy({ userId: user.id, reason: 'generation' });
    expect(ledger).toHaveLength(40);
    expect(ledger.reduce((sum, row) => sum - row.amount, 0)).toBe(spent);
  });
});
