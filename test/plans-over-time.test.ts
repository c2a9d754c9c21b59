/**
 * Plans over time: monthly refills (once per period, bonus carried over, a ledger row), paid
 * plans falling back to free at expiry (API keys stop working), file retention by plan, and the
 * admin ledger command. Time is moved, never slept.
 */
import path from 'node:path';
import { runAdminCommand } from '../cli/admin-commands';
import { Generation, LedgerEntry, User } from '../shared/db/entities';
import { useTestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { registerUser, userOnPlan } from './helpers/users';

const fake = new FakeProvider('fake');
const t = useTestApp({ CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json') }, { providers: [fake.adapter()] });

async function row(id: number): Promise<User> {
  return t.app.container.db.repo(User).findOneByOrFail({ id });
}

it('refills the subscription bucket at next_refill_at, once per period, keeping bonus tokens', async () => {
  const user = await registerUser(t.app);
  await t.app.container.users.grantTokens(user.id, 7);
  await t.app.http().post('/api/v2/generate').set('authorization', `Bearer ${user.accessToken}`).send({ model: 'fake-text', prompt: 'spend' });
  expect(await row(user.id)).toMatchObject({ subscriptionTokens: 48, bonusTokens: 7, tokensUsedThisPeriod: 2 });
  const before = (await row(user.id)).nextRefillAt;

  t.app.clock.set(new Date(before.getTime() - 1000));
  expect(await t.app.container.maintenance.refill()).toBe(0);
  t.app.clock.set(new Date(before.getTime() + 1000));
  expect(await t.app.container.maintenance.refill()).toBeGreaterThanOrEqual(1);
  const after = await row(user.id);
  expect(after).toMatchObject({ subscriptionTokens: 50, bonusTokens: 7, tokensUsedThisPeriod: 0 });
  expect(after.nextRefillAt.getTime()).toBeGreaterThan(before.getTime() + 27 * 86_400_000);
  // A second run in the same period changes nothing.
  await t.app.container.maintenance.refill();
  const refills = await t.app.container.db.repo(LedgerEntry).findBy({ userId: user.id, reason: 'refill' });
  expect(refills).toHaveLength(1);
  expect(refills[0]).toMatchObject({ amount: 2, subscriptionAfter: 50, bonusAfter: 7 });
});

it('moves an expired paid plan back to free; its API keys stop working', async () => {
  const user = await userOnPlan(t.app, 'vip');
  const key = (await t.app.http().post('/api/v2/keys').set('authorization', `Bearer ${user.accessToken}`).send({ name: 'k' })).body.key as string;
  expect((await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${key}`)).status).toBe(200);
  const expires = (await row(user.id)).planExpiresAt as Date;
  t.app.clock.set(new Date(expires.getTime() + 1000));
  expect((await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${key}`)).status).toBe(403);
  expect(await t.app.container.maintenance.expirePlans()).toBeGreaterThanOrEqual(1);
  expect(await row(user.id)).toMatchObject({ plan: 'free', planExpiresAt: null, subscriptionTokens: 50 });
  const ledger = await t.app.container.db.repo(LedgerEntry).findBy({ userId: user.id, reason: 'plan_change' });
  expect(ledger.at(-1)).toMatchObject({ note: 'vip -> free' });
});

it('deletes result files past the plan\'s retention; the URL then 404s and the history row stays', async () => {
  t.app.clock.set(new Date('2027-03-01T00:00:00Z'));
  const user = await registerUser(t.app);
  const auth = ['authorization', `Bearer ${user.accessToken}`] as const;
  const res = await t.app.http().post('/api/v2/generate').set(...auth).send({ model: 'fake-image', prompt: 'keep me a week' });
  const filePath = new URL(res.body.result_url).pathname;
  expect((await t.app.http().get(filePath)).status).toBe(200);
  t.app.clock.advance(6 * 86_400);
  await t.app.container.maintenance.applyRetention();
  expect((await t.app.http().get(filePath)).status).toBe(200);
  t.app.clock.advance(2 * 86_400);
  expect(await t.app.container.maintenance.applyRetention()).toBeGreaterThanOrEqual(1);
  expect((await t.app.http().get(filePath)).status).toBe(404);
  const kept = await t.app.container.db.repo(Generation).findOneByOrFail({ id: res.body.id });
  expect(kept).toMatchObject({ status: 'completed', resultKey: null });
  const elite = await userOnPlan(t.app, 'elite');
  const forever = await t.app.http().post('/api/v2/generate').set('authorization', `Bearer ${elite.accessToken}`).send({ model: 'fake-image', prompt: 'keep forever' });
  t.app.clock.advance(3650 * 86_400);
  await t.app.container.maintenance.applyRetention();
  expect((await t.app.http().get(new URL(forever.body.result_url).pathname)).status).toBe(200);
});

it('shows a user\'s ledger on the admin command line', async () => {
  const user = await registerUser(t.app);
  await t.app.container.users.grantTokens(user.id, 5);
  const out = (await runAdminCommand(t.app.container, ['ledger', '--email', user.email])) as { balance: number; items: Array<{ reason: string; amount: number }> };
  expect(out.balance).toBe(55);
  expect(out.items.map((i) => i.reason)).toEqual(['grant', 'signup_allowance']);
});
