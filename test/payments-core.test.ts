/**
 * The payments core (shared/payments/payments.ts), called as the Stripe and Telegram Stars
 * handlers will call it: a pack credits bonus tokens, a plan starts or extends, each exactly once
 * per (provider, external id) however often and however concurrently it is notified; a refund
 * reverses once, never below zero (the rest is the payment's shortfall), and shortens or ends a
 * plan. Every credit and reversal is one ledger row noted `<provider>:<external id>`, and the
 * ledger audit is clean after every test (including its payment rules, checked at the end).
 */
import crypto from 'node:crypto';
import { deleteAccount } from '../shared/accounts/delete-account';
import { auditLedger } from '../shared/billing/audit';
import { addDays, addMonths } from '../shared/clock';
import { LedgerEntry, Payment, User } from '../shared/db/entities';
import type { Purchase } from '../shared/payments/payments';
import { useTestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { bucketsOf, expectAuditClean, rowsOfPayment, spendingCatalog } from './helpers/payments';
import { registerUser, TestUser } from './helpers/users';

const t = useTestApp({ CATALOG_PATH: spendingCatalog() }, { providers: [new FakeProvider('fake').adapter()] });

afterEach(() => expectAuditClean(t.app));

const payments = () => t.app.container.payments;
const now = () => t.app.clock.now();
const chargeId = () => `charge-${crypto.randomBytes(6).toString('hex')}`;
const HOUR = 3600;

function stars(userId: number, productId: string): Purchase {
  return { provider: 'telegram', externalId: chargeId(), userId, productId, paid: { amount: 150, currency: 'XTR' } };
}

function stripe(userId: number, productId: string): Purchase {
  return { provider: 'stripe', externalId: `in_${crypto.randomBytes(8).toString('hex')}`, userId, productId, paid: { amount: 1999, currency: 'usd' } };
}

const noteOf = (p: Pick<Purchase, 'provider' | 'externalId'>) => `${p.provider}:${p.externalId}`;
const paymentsOf = (p: Pick<Purchase, 'provider' | 'externalId'>) => t.app.container.db.repo(Payment).countBy({ provider: p.provider, externalId: p.externalId });

async function spend(user: TestUser, model: 'spend-100' | 'hold-100'): Promise<void> {
  const res = await t.app.http().post('/api/v2/generate').set('authorization', `Bearer ${user.accessToken}`).send({ model, prompt: 'spend' });
  expect(res.status).toBe(200);
  expect(res.body.status).toBe(model === 'spend-100' ? 'completed' : 'pending');
}

describe('crediting a token pack', () => {
  it('adds its bonus tokens with one purchase row noted with the charge id, and records what was paid', async () => {
    const user = await registerUser(t.app);
    const charge = stars(user.id, 'tokens-500');
    const outcome = await payments().creditPurchase(charge);
    expect(outcome.status).toBe('credited');
    expect(outcome.payment).toMatchObject({
      provider: 'telegram',
      externalId: charge.externalId,
      userId: user.id,
      productId: 'tokens-500',
      kind: 'tokens',
      tokens: 500,
      plan: null,
      amount: 150,
      currency: 'XTR',
      status: 'credited',
    });
    expect(await bucketsOf(t.app, user.id)).toMatchObject({ plan: 'free', subscription: 50, bonus: 500 });
    const rows = await rowsOfPayment(t.app, noteOf(charge));
    expect(rows.map((r) => [r.userId, r.reason, r.amount, r.bonusAfter])).toEqual([[user.id, 'purchase', 500, 500]]);
  });

  it('credits once when the same charge is notified twice: the second answer is the first payment', async () => {
    const user = await registerUser(t.app);
    const charge = stars(user.id, 'tokens-2000');
    const first = await payments().creditPurchase(charge);
    const second = await payments().creditPurchase(charge);
    expect(second).toEqual({ status: 'duplicate', payment: first.payment });
    expect((await bucketsOf(t.app, user.id)).bonus).toBe(2000);
    expect(await rowsOfPayment(t.app, noteOf(charge))).toHaveLength(1);
    expect(await paymentsOf(charge)).toBe(1);
  });

  it('credits 20 simultaneous notifications of one charge once: one payment, one ledger row', async () => {
    const user = await registerUser(t.app);
    const charge = stripe(user.id, 'tokens-500');
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => payments().creditPurchase(charge)));
    expect(outcomes.filter((o) => o.status === 'credited')).toHaveLength(1);
    expect(outcomes.filter((o) => o.status === 'duplicate')).toHaveLength(19);
    expect(new Set(outcomes.map((o) => o.payment.id)).size).toBe(1);
    expect((await bucketsOf(t.app, user.id)).bonus).toBe(500);
    expect(await rowsOfPayment(t.app, noteOf(charge))).toHaveLength(1);
    expect(await paymentsOf(charge)).toBe(1);
  });

  it('credits nothing for a product the file does not list, an account that does not exist, or an external id too long for the ledger note', async () => {
    const user = await registerUser(t.app);
    const unknownProduct = stars(user.id, 'tokens-7');
    await expect(payments().creditPurchase(unknownProduct)).rejects.toMatchObject({ code: 'not_found', detail: 'Unknown product' });
    const nobody = stars(2_147_000_000, 'tokens-500');
    await expect(payments().creditPurchase(nobody)).rejects.toMatchObject({ code: 'not_found', detail: 'Unknown account' });
    await expect(payments().creditPurchase({ ...stars(user.id, 'tokens-500'), externalId: 'x'.repeat(201) })).rejects.toThrow(/1-200 characters/);
    expect(await paymentsOf(unknownProduct)).toBe(0);
    expect(await paymentsOf(nobody)).toBe(0);
    expect(await bucketsOf(t.app, user.id)).toMatchObject({ subscription: 50, bonus: 0 });
  });
});

describe('crediting a plan', () => {
  it('starts a plan the account is not on as setPlan does: a new period with its allowance, for a month from now', async () => {
    const user = await registerUser(t.app);
    const start = now();
    const charge = stripe(user.id, 'pro-monthly');
    const { payment } = await payments().creditPurchase(charge);
    expect(payment).toMatchObject({ kind: 'plan', plan: 'pro', tokens: 0, planFrom: start, planUntil: addMonths(start, 1), amount: 1999, currency: 'usd' });
    const row = await t.app.container.db.repo(User).findOneByOrFail({ id: user.id });
    expect(row).toMatchObject({ plan: 'pro', planExpiresAt: addMonths(start, 1), subscriptionTokens: 3000, periodStartedAt: start, nextRefillAt: addMonths(start, 1), tokensUsedThisPeriod: 0 });
    const rows = await rowsOfPayment(t.app, noteOf(charge));
    expect(rows.map((r) => [r.reason, r.amount, r.subscriptionAfter])).toEqual([['purchase', 2950, 3000]]);
  });

  it('extends the plan the account is on by a month from its expiry, moving no tokens but still writing the payment\'s ledger row', async () => {
    const user = await registerUser(t.app);
    await payments().creditPurchase(stars(user.id, 'basic-monthly'));
    const expiry = (await bucketsOf(t.app, user.id)).expiresAt as Date;
    t.app.clock.advance(10 * 24 * HOUR);
    const renewal = stars(user.id, 'basic-monthly');
    const { payment } = await payments().creditPurchase(renewal);
    expect(payment).toMatchObject({ planFrom: expiry, planUntil: addMonths(expiry, 1) });
    expect(await bucketsOf(t.app, user.id)).toMatchObject({ plan: 'basic', expiresAt: addMonths(expiry, 1), subscription: 1000 });
    expect((await rowsOfPayment(t.app, noteOf(renewal))).map((r) => [r.reason, r.amount])).toEqual([['purchase', 0]]);
  });

  it('extends with each recurring payment: early renewals from the expiry, a late one (after the expiry, before the clock moved the account) from now', async () => {
    const user = await registerUser(t.app);
    await payments().creditPurchase(stars(user.id, 'vip-monthly'));
    let expiry = (await bucketsOf(t.app, user.id)).expiresAt as Date;
    for (const early of [24 * HOUR, HOUR]) {
      t.app.clock.set(new Date(expiry.getTime() - early * 1000));
      await payments().creditPurchase(stars(user.id, 'vip-monthly'));
      expect((await bucketsOf(t.app, user.id)).expiresAt).toEqual(addMonths(expiry, 1));
      expiry = addMonths(expiry, 1);
    }
    t.app.clock.set(new Date(expiry.getTime() + 2 * HOUR * 1000));
    const late = await payments().creditPurchase(stars(user.id, 'vip-monthly'));
    expect(late.payment).toMatchObject({ planFrom: now(), planUntil: addMonths(now(), 1) });
    expect(await bucketsOf(t.app, user.id)).toMatchObject({ plan: 'vip', expiresAt: addMonths(now(), 1) });
    expect(await t.app.container.db.repo(Payment).countBy({ userId: user.id })).toBe(4);
  });

  it('extends once for a renewal notified 20 times at once', async () => {
    const user = await registerUser(t.app);
    await payments().creditPurchase(stars(user.id, 'pro-monthly'));
    const expiry = (await bucketsOf(t.app, user.id)).expiresAt as Date;
    const renewal = stars(user.id, 'pro-monthly');
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => payments().creditPurchase(renewal)));
    expect(outcomes.filter((o) => o.status === 'credited')).toHaveLength(1);
    expect((await bucketsOf(t.app, user.id)).expiresAt).toEqual(addMonths(expiry, 1));
    expect(await rowsOfPayment(t.app, noteOf(renewal))).toHaveLength(1);
  });
});

describe('reversing a payment (a refund)', () => {
  it('takes a pack back once, with one refund row; a second refund is already_reversed and moves nothing', async () => {
    const user = await registerUser(t.app);
    const charge = stars(user.id, 'tokens-500');
    await payments().creditPurchase(charge);
    const outcome = await payments().reverse({ provider: 'telegram', externalId: charge.externalId, refundReference: 'refund-1' });
    expect(outcome).toMatchObject({ status: 'reversed', plan: null, payment: { status: 'reversed', reversedTokens: 500, shortfallTokens: 0, refundReference: 'refund-1', reversedAt: now() } });
    expect(await bucketsOf(t.app, user.id)).toMatchObject({ subscription: 50, bonus: 0 });
    const again = await payments().reverse({ provider: 'telegram', externalId: charge.externalId });
    expect(again).toMatchObject({ status: 'already_reversed', payment: { refundReference: 'refund-1' } });
    expect((await rowsOfPayment(t.app, noteOf(charge))).map((r) => [r.reason, r.amount])).toEqual([
      ['purchase', 500],
      ['refund', -500],
    ]);
  });

  it('reverses once when 20 refunds of one payment arrive at once', async () => {
    const user = await registerUser(t.app);
    const charge = stripe(user.id, 'tokens-2000');
    await payments().creditPurchase(charge);
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => payments().reverse({ provider: 'stripe', externalId: charge.externalId })));
    expect(outcomes.filter((o) => o.status === 'reversed')).toHaveLength(1);
    expect(outcomes.filter((o) => o.status === 'already_reversed')).toHaveLength(19);
    expect(await bucketsOf(t.app, user.id)).toMatchObject({ bonus: 0, subscription: 50 });
    expect((await rowsOfPayment(t.app, noteOf(charge))).filter((r) => r.reason === 'refund')).toHaveLength(1);
  });

  it('never takes tokens below zero nor from under a running generation: what was spent is the payment\'s shortfall', async () => {
    const user = await registerUser(t.app);
    const charge = stars(user.id, 'tokens-500');
    await payments().creditPurchase(charge);
    // 50 subscription + 500 bonus; four generations of 100 spend subscription first: 0 + 150 left.
    for (let i = 0; i < 4; i++) await spend(user, 'spend-100');
    // A queued one holds 100 of the 150 (no worker runs it here).
    await spend(user, 'hold-100');
    expect(await bucketsOf(t.app, user.id)).toMatchObject({ subscription: 0, bonus: 150, held: 100 });
    const outcome = await payments().reverse({ provider: 'telegram', externalId: charge.externalId });
    expect(outcome).toMatchObject({ status: 'reversed', payment: { reversedTokens: 50, shortfallTokens: 450 } });
    expect(await bucketsOf(t.app, user.id)).toMatchObject({ subscription: 0, bonus: 100, held: 100 });
    expect((await rowsOfPayment(t.app, noteOf(charge))).map((r) => [r.reason, r.amount, r.bonusAfter])).toEqual([
      ['purchase', 500, 500],
      ['refund', -50, 100],
    ]);
  });

  it('takes bonus tokens first, then subscription tokens', async () => {
    const user = await registerUser(t.app);
    const charge = stars(user.id, 'tokens-500');
    await payments().creditPurchase(charge);
    await spend(user, 'spend-100'); // subscription first: 0 + 450
    await t.app.container.users.setPlan(user.id, 'basic'); // 1000 + 450
    await payments().reverse({ provider: 'telegram', externalId: charge.externalId });
    // 450 bonus, then 50 of the subscription tokens.
    expect(await bucketsOf(t.app, user.id)).toMatchObject({ bonus: 0, subscription: 950 });
    const [, refund] = await rowsOfPayment(t.app, noteOf(charge));
    expect(refund).toMatchObject({ reason: 'refund', amount: -500, subscriptionAfter: 950, bonusAfter: 0 });
  });

  it('ends a refunded plan with no time left now, as its expiry would, except that a refund never adds tokens', async () => {
    const spent = await registerUser(t.app);
    const charge = stars(spent.id, 'pro-monthly');
    await payments().creditPurchase(charge);
    await spend(spent, 'spend-100');
    const outcome = await payments().reverse({ provider: 'telegram', externalId: charge.externalId });
    expect(outcome).toMatchObject({ status: 'reversed', plan: 'ended', payment: { reversedTokens: 2850 } });
    expect(await bucketsOf(t.app, spent.id)).toMatchObject({ plan: 'free', expiresAt: null, subscription: 50 });
    expect((await rowsOfPayment(t.app, noteOf(charge))).map((r) => [r.reason, r.amount])).toEqual([
      ['purchase', 2950],
      ['refund', -2850],
    ]);

    // Below the free plan's 50 when refunded: it stays there (the plan's expiry would have set 50).
    const emptied = await registerUser(t.app);
    const second = stars(emptied.id, 'pro-monthly');
    await payments().creditPurchase(second);
    await t.app.container.users.grantTokens(emptied.id, -2990);
    await payments().reverse({ provider: 'telegram', externalId: second.externalId });
    expect(await bucketsOf(t.app, emptied.id)).toMatchObject({ plan: 'free', subscription: 10 });
    expect((await rowsOfPayment(t.app, noteOf(second))).map((r) => [r.reason, r.amount])).toEqual([
      ['purchase', 2950],
      ['refund', 0],
    ]);
  });

  it('takes the refunded month off the expiry while the plan has time left, and ends it with the last one', async () => {
    const user = await registerUser(t.app);
    const first = stars(user.id, 'pro-monthly');
    await payments().creditPurchase(first);
    const expiry = (await bucketsOf(t.app, user.id)).expiresAt as Date;
    const renewal = stars(user.id, 'pro-monthly');
    await payments().creditPurchase(renewal);
    t.app.clock.advance(3 * 24 * HOUR);
    expect(await payments().reverse({ provider: 'telegram', externalId: renewal.externalId })).toMatchObject({ status: 'reversed', plan: 'shortened' });
    expect(await bucketsOf(t.app, user.id)).toMatchObject({ plan: 'pro', expiresAt: expiry, subscription: 3000 });
    expect((await rowsOfPayment(t.app, noteOf(renewal))).map((r) => [r.reason, r.amount])).toEqual([
      ['purchase', 0],
      ['refund', 0],
    ]);
    expect(await payments().reverse({ provider: 'telegram', externalId: first.externalId })).toMatchObject({ plan: 'ended' });
    expect(await bucketsOf(t.app, user.id)).toMatchObject({ plan: 'free', subscription: 50 });
  });

  it('leaves the plan alone when the account has moved to another plan since', async () => {
    const user = await registerUser(t.app);
    const basic = stars(user.id, 'basic-monthly');
    await payments().creditPurchase(basic);
    await payments().creditPurchase(stars(user.id, 'elite-monthly'));
    const before = await bucketsOf(t.app, user.id);
    expect(await payments().reverse({ provider: 'telegram', externalId: basic.externalId })).toMatchObject({ status: 'reversed', plan: 'untouched' });
    expect(await bucketsOf(t.app, user.id)).toEqual(before);
    expect((await rowsOfPayment(t.app, noteOf(basic))).map((r) => [r.reason, r.amount])).toEqual([
      ['purchase', 950],
      ['refund', 0],
    ]);
  });

  it('answers not_found for a payment nobody credited, writing nothing', async () => {
    const ledger = await t.app.container.db.repo(LedgerEntry).count();
    expect(await payments().reverse({ provider: 'stripe', externalId: 'in_never_seen' })).toEqual({ status: 'not_found' });
    expect(await t.app.container.db.repo(LedgerEntry).count()).toBe(ledger);
    expect(await t.app.container.db.repo(Payment).countBy({ externalId: 'in_never_seen' })).toBe(0);
  });

  it('keeps the payment of a deleted account, anonymised; its refund then takes nothing and the whole pack is shortfall', async () => {
    const user = await registerUser(t.app);
    const charge = stars(user.id, 'tokens-500');
    await payments().creditPurchase(charge);
    await deleteAccount(t.app.container, user.id);
    expect(await payments().reverse({ provider: 'telegram', externalId: charge.externalId })).toMatchObject({
      status: 'reversed',
      payment: { userId: null, reversedTokens: 0, shortfallTokens: 500 },
    });
    expect((await rowsOfPayment(t.app, noteOf(charge))).map((r) => [r.userId, r.reason])).toEqual([[null, 'purchase']]);
  });
});

describe('before a checkout: checkPurchase', () => {
  it('refuses a plan below the one running (paying would end it at once), and a product the file does not list', async () => {
    const vip = await registerUser(t.app);
    await t.app.container.users.setPlan(vip.id, 'vip');
    const user = await t.app.container.users.getById(vip.id);
    expect(() => payments().checkPurchase(user, 'basic-monthly')).toThrow(expect.objectContaining({ code: 'plan_downgrade_not_allowed' }));
    expect(payments().checkPurchase(user, 'vip-monthly')).toMatchObject({ kind: 'plan', plan: 'vip' });
    expect(payments().checkPurchase(user, 'elite-monthly')).toMatchObject({ kind: 'plan', plan: 'elite' });
    expect(payments().checkPurchase(user, 'tokens-500')).toMatchObject({ kind: 'token_pack', tokens: 500 });
    expect(() => payments().checkPurchase(user, 'nope')).toThrow(expect.objectContaining({ code: 'not_found' }));
    // Once the better plan has expired, any plan may be bought.
    await t.app.container.users.setPlan(vip.id, 'vip', addDays(now(), -1));
    expect(payments().checkPurchase(await t.app.container.users.getById(vip.id), 'basic-monthly')).toMatchObject({ plan: 'basic' });
  });
});

describe('the ledger audit knows payments', () => {
  it('names a payment without its credit row, a reversal without its refund row, and a row that names no payment', async () => {
    const { db } = t.app.container;
    const user = await registerUser(t.app);
    const charge = stars(user.id, 'tokens-500');
    const { payment } = await payments().creditPurchase(charge);
    const [row] = await rowsOfPayment(t.app, noteOf(charge));
    await db.repo(LedgerEntry).update({ id: row?.id }, { note: 'telegram:someone-else' });
    await db.repo(Payment).update({ id: payment.id }, { status: 'reversed' });
    const report = await auditLedger(db);
    expect(report.ok).toBe(false);
    expect(report.payments).toBeGreaterThan(0);
    expect(report.violations.map((v) => `${v.rule}:${v.userId}`)).toEqual(
      expect.arrayContaining([`payment_credit:${user.id}`, `payment_reversal:${user.id}`, `payment_orphan:${user.id}`]),
    );
    // Put right, so the audit after this test is clean.
    await db.repo(LedgerEntry).update({ id: row?.id }, { note: noteOf(charge) });
    await db.repo(Payment).update({ id: payment.id }, { status: 'credited' });
  });
});
