/**
 * The money rules (shared/billing), the same scenarios on each store: SQLite here, MySQL in the
 * mysql+redis project, where the rules are written a second time as server-side SQL. Holds never
 * exceed the free balance, a capture charges subscription tokens first then bonus (never more
 * than is left), a release lets go once, a balance change never takes a bucket below zero, and
 * every change is a ledger row, so each account's ledger sums to its balance.
 */
import path from 'node:path';
import { Generation, LedgerEntry, User } from '../shared/db/entities';
import { CompletionSet, FailureSet, pendingGeneration } from '../shared/generation/store';
import { useTestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { userOnPlan } from './helpers/users';

const t = useTestApp({ CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json') }, { providers: [new FakeProvider('fake').adapter()] });
const touched = new Set<number>();

async function account(buckets: { subscription: number; bonus: number }): Promise<number> {
  const user = await userOnPlan(t.app, 'free');
  const { db, billing, clock } = t.app.container;
  // A correction then a grant through the billing module itself: each is a ledger row.
  await db.transaction(async (em) => {
    const row = await em.getRepository(User).findOneByOrFail({ id: user.id });
    await billing.change(em, user.id, { subscriptionDelta: buckets.subscription - row.subscriptionTokens, bonusDelta: buckets.bonus, reason: 'correction' }, clock());
  });
  touched.add(user.id);
  return user.id;
}

async function buckets(userId: number) {
  const user = await t.app.container.db.repo(User).findOneByOrFail({ id: userId });
  return { subscription: user.subscriptionTokens, bonus: user.bonusTokens, held: user.heldTokens, usedThisPeriod: user.tokensUsedThisPeriod };
}

function row(userId: number, price: number): Generation {
  return pendingGeneration({
    userId, modelSlug: 'fake-text', category: 'text', source: 'api', prompt: 'p', input: '{}', price, seed: null, etaSeconds: null,
    idempotencyKey: null, requestHash: null, scheduleId: null, assistantId: null, createdAt: t.app.clock.now(),
  });
}

async function hold(userId: number, price: number): Promise<number | null> {
  const held = await t.app.container.generationStore.insertHeld(row(userId, price), null);
  return held.held ? held.id : null;
}

function completed(price: number): CompletionSet {
  const now = t.app.clock.now();
  return { status: 'completed', provider: 'fake', resultText: 'ok', resultKey: null, thumbnailKey: null, resultMetadata: '{}', usage: null, seed: null, progress: 100, tokensSpent: price, processingMs: 1, completedAt: now, leaseUntil: null, updatedAt: now };
}

function failed(): FailureSet {
  const now = t.app.clock.now();
  return { status: 'failed', error: 'x', resultMetadata: null, tokensSpent: 0, leaseUntil: null, processingMs: 1, completedAt: now, updatedAt: now };
}

const complete = (userId: number, id: number, price: number) => t.app.container.generationStore.complete({ id, userId, price }, completed(price), t.app.clock.now());
const fail = (userId: number, id: number, price: number) => t.app.container.generationStore.fail({ id, userId, price }, failed());
const ledger = (userId: number) => t.app.container.db.repo(LedgerEntry).find({ where: { userId }, order: { id: 'ASC' } });

describe('holding', () => {
  it('holds exactly the free balance and not a token more', async () => {
    const userId = await account({ subscription: 6, bonus: 4 });
    expect(await hold(userId, 11)).toBeNull();
    expect(await hold(userId, 7)).not.toBeNull();
    expect(await hold(userId, 4)).toBeNull();
    expect(await hold(userId, 3)).not.toBeNull();
    expect(await hold(userId, 1)).toBeNull();
    expect(await buckets(userId)).toMatchObject({ subscription: 6, bonus: 4, held: 10 });
  });

  it('never holds more than the balance under concurrent requests', async () => {
    const userId = await account({ subscription: 30, bonus: 20 });
    const held = await Promise.all(Array.from({ length: 25 }, () => hold(userId, 3)));
    expect(held.filter((id) => id !== null)).toHaveLength(16);
    expect(await buckets(userId)).toMatchObject({ subscription: 30, bonus: 20, held: 48 });
    expect(await t.app.container.db.repo(Generation).countBy({ userId })).toBe(16);
  });

  it('holds nothing for a free generation, even on an empty balance', async () => {
    const userId = await account({ subscription: 0, bonus: 0 });
    expect(await hold(userId, 0)).not.toBeNull();
    expect(await buckets(userId)).toMatchObject({ held: 0 });
  });
});

describe('capturing', () => {
  it('charges subscription tokens first, then bonus, with one ledger row of the buckets after', async () => {
    const userId = await account({ subscription: 3, bonus: 10 });
    const id = (await hold(userId, 5))!;
    expect(await complete(userId, id, 5)).toMatchObject({ charged: 5, balance: 8 });
    expect(await buckets(userId)).toEqual({ subscription: 0, bonus: 8, held: 0, usedThisPeriod: 5 });
    const last = (await ledger(userId)).at(-1);
    expect(last).toMatchObject({ amount: -5, reason: 'generation', generationId: id, subscriptionAfter: 0, bonusAfter: 8 });
  });

  it('charges only what is left when an operator took tokens from under the hold, and says so on the row', async () => {
    const userId = await account({ subscription: 4, bonus: 2 });
    const id = (await hold(userId, 5))!;
    const { db, billing, clock } = t.app.container;
    await db.transaction((em) => billing.change(em, userId, { subscriptionDelta: -3, bonusDelta: -1, reason: 'correction' }, clock()));
    expect(await complete(userId, id, 5)).toMatchObject({ charged: 2, balance: 0 });
    expect(await buckets(userId)).toEqual({ subscription: 0, bonus: 0, held: 0, usedThisPeriod: 2 });
    expect((await db.repo(Generation).findOneByOrFail({ id })).tokensSpent).toBe(2);
  });

  it('moves nothing when the generation had already ended', async () => {
    const userId = await account({ subscription: 10, bonus: 0 });
    const id = (await hold(userId, 4))!;
    expect(await fail(userId, id, 4)).toBe(true);
    const entries = (await ledger(userId)).length;
    expect(await complete(userId, id, 4)).toBeNull();
    expect(await buckets(userId)).toMatchObject({ subscription: 10, held: 0, usedThisPeriod: 0 });
    expect(await ledger(userId)).toHaveLength(entries);
  });

  it('charges once when the same generation is completed concurrently', async () => {
    const userId = await account({ subscription: 20, bonus: 0 });
    const id = (await hold(userId, 7))!;
    const results = await Promise.all(Array.from({ length: 10 }, () => complete(userId, id, 7)));
    expect(results.filter((r) => r !== null)).toHaveLength(1);
    expect(await buckets(userId)).toMatchObject({ subscription: 13, held: 0 });
    expect((await ledger(userId)).filter((e) => e.generationId === id)).toHaveLength(1);
  });
});

describe('releasing', () => {
  it('lets a hold go once and charges nothing', async () => {
    const userId = await account({ subscription: 10, bonus: 0 });
    const id = (await hold(userId, 6))!;
    const entries = (await ledger(userId)).length;
    const results = await Promise.all([fail(userId, id, 6), fail(userId, id, 6), fail(userId, id, 6)]);
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await buckets(userId)).toMatchObject({ subscription: 10, held: 0 });
    expect(await ledger(userId)).toHaveLength(entries);
  });

  it('never takes the held tokens below zero (an operator reset them)', async () => {
    const userId = await account({ subscription: 10, bonus: 0 });
    const id = (await hold(userId, 6))!;
    await t.app.container.db.repo(User).update({ id: userId }, { heldTokens: 2 });
    expect(await fail(userId, id, 6)).toBe(true);
    expect(await buckets(userId)).toMatchObject({ held: 0 });
  });
});

describe('balance changes', () => {
  it('adds and takes tokens with a ledger row each, and refuses to take a bucket below zero', async () => {
    const userId = await account({ subscription: 5, bonus: 5 });
    const { db, billing, clock } = t.app.container;
    const before = (await ledger(userId)).length;
    expect(await db.transaction((em) => billing.change(em, userId, { subscriptionDelta: 0, bonusDelta: 7, reason: 'grant', note: 'gift' }, clock()))).toEqual({ subscriptionAfter: 5, bonusAfter: 12 });
    expect(await db.transaction((em) => billing.change(em, userId, { subscriptionDelta: -6, bonusDelta: 0, reason: 'correction' }, clock()))).toBeNull();
    expect(await db.transaction((em) => billing.change(em, userId, { subscriptionDelta: 1, bonusDelta: -13, reason: 'correction' }, clock()))).toBeNull();
    expect(await buckets(userId)).toMatchObject({ subscription: 5, bonus: 12 });
    const added = (await ledger(userId)).slice(before);
    expect(added).toEqual([expect.objectContaining({ amount: 7, reason: 'grant', note: 'gift', subscriptionAfter: 5, bonusAfter: 12, generationId: null })]);
  });

  it('rolls the change back with the transaction it is part of', async () => {
    const userId = await account({ subscription: 5, bonus: 0 });
    const { db, billing, clock } = t.app.container;
    const before = (await ledger(userId)).length;
    await expect(
      db.transaction(async (em) => {
        await billing.change(em, userId, { subscriptionDelta: 0, bonusDelta: 9, reason: 'grant' }, clock());
        throw new Error('the rest of the work failed');
      }),
    ).rejects.toThrow('the rest of the work failed');
    expect(await buckets(userId)).toMatchObject({ subscription: 5, bonus: 0 });
    expect(await ledger(userId)).toHaveLength(before);
  });
});

it('leaves every account above with a ledger that sums to its balance', async () => {
  for (const userId of touched) {
    const entries = await ledger(userId);
    const { subscription, bonus } = await buckets(userId);
    expect(entries.reduce((sum, e) => sum + e.amount, 0)).toBe(subscription + bonus);
    const last = entries.at(-1);
    if (last) expect({ subscription: last.subscriptionAfter, bonus: last.bonusAfter }).toEqual({ subscription, bonus });
  }
  expect(touched.size).toBeGreaterThan(10);
});
