/**
 * POST /api/v2/providers/stripe/webhook, driven as Stripe drives it: events made by the fake
 * Stripe from purchases made through POST /billing/checkout, signed with the official
 * `generateTestHeaderString` and posted as raw bytes. Each event has its effect at most once,
 * delivered twice, ten times at once or out of order (a refund before its payment is a retryable
 * 503 that records nothing); a plan's first month is credited once whether the session's or the
 * invoice's event comes first; renewals extend once per invoice; a full refund reverses once
 * under the shortfall rule; a bad signature changes nothing. The ledger audit is clean after
 * every test, and nothing is logged as a crash.
 */
import { deleteAccount } from '../shared/accounts/delete-account';
import { addMonths } from '../shared/clock';
import { LedgerEntry, Payment, StripeEvent } from '../shared/db/entities';
import { bucketsOf, expectAuditClean, rowsOfPayment } from './helpers/payments';
import { STRIPE_WEBHOOK_SECRET, useStripeApp } from './helpers/stripe';
import { registerUser, TestUser } from './helpers/users';

const s = useStripeApp();
afterEach(async () => {
  await expectAuditClean(s.app);
  expect(s.log.errors()).toEqual([]);
});

type Json = Record<string, unknown>;
const DAY = 24 * 3600;

const note = (externalId: string) => `stripe:${externalId}`;
const counts = async () => ({
  payments: await s.app.container.db.repo(Payment).count(),
  ledger: await s.app.container.db.repo(LedgerEntry).count(),
  events: await s.app.container.db.repo(StripeEvent).count(),
});

async function spend100(user: TestUser): Promise<void> {
  const res = await s.app.http().post('/api/v2/generate').set('authorization', `Bearer ${user.accessToken}`).send({ model: 'spend-100', prompt: 'spend' });
  expect(res.status).toBe(200);
}

/** A pack bought and its completion delivered: the session, credited. */
async function boughtPack(user: TestUser, product = 'tokens-500'): Promise<Json> {
  const session = await s.buy(user, product);
  const res = await s.deliver(s.stripe.event('checkout.session.completed', session));
  expect(res.body).toEqual({ received: true, outcome: 'credited' });
  return session;
}

describe('checkout.session.completed for a token pack', () => {
  it('credits the pack once under the session id, with what was paid; the same event again writes nothing', async () => {
    const user = await registerUser(s.app);
    const session = await s.buy(user, 'tokens-500');
    const event = s.stripe.event('checkout.session.completed', session);
    const first = await s.deliver(event);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ received: true, outcome: 'credited' });
    const after = await counts();
    const again = await s.deliver(event);
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ received: true, outcome: 'already_processed' });
    expect(await counts()).toEqual(after);

    const [payment] = await s.paymentsOf(String(session.id));
    expect(payment).toMatchObject({ userId: user.id, productId: 'tokens-500', kind: 'tokens', tokens: 500, amount: 299, currency: 'usd', status: 'credited' });
    expect(await bucketsOf(s.app, user.id)).toMatchObject({ bonus: 500 });
    expect((await rowsOfPayment(s.app, note(String(session.id)))).map((r) => [r.reason, r.amount])).toEqual([['purchase', 500]]);
    expect(await s.eventRows(String(event.id))).toEqual([
      expect.objectContaining({ type: 'checkout.session.completed', objectId: session.id, userId: user.id, outcome: 'credited', paymentExternalId: session.id, paymentIntent: session.payment_intent }),
    ]);
  });

  it('credits once when the same event is delivered 10 times at once: one payment, one ledger row, one event row', async () => {
    const user = await registerUser(s.app);
    const session = await s.buy(user, 'tokens-2000');
    const event = s.stripe.event('checkout.session.completed', session);
    const before = await counts();
    const answers = await Promise.all(Array.from({ length: 10 }, () => s.deliver(event)));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    const outcomes = answers.map((a) => a.body.outcome as string);
    expect(outcomes.filter((o) => o === 'credited')).toHaveLength(1);
    expect(outcomes.every((o) => ['credited', 'already_processed'].includes(o))).toBe(true);
    expect(await counts()).toEqual({ payments: before.payments + 1, ledger: before.ledger + 1, events: before.events + 1 });
    expect(await bucketsOf(s.app, user.id)).toMatchObject({ bonus: 2000 });
  });

  it('waits for an asynchronous payment: an unpaid completion credits nothing, async_payment_succeeded credits', async () => {
    const user = await registerUser(s.app);
    const checkout = await s.checkout(user, 'tokens-500');
    const unpaid = s.stripe.completeSession(String(checkout.body.id), 'unpaid');
    expect((await s.deliver(s.stripe.event('checkout.session.completed', unpaid))).body.outcome).toBe('awaiting_payment');
    expect(await s.paymentsOf(String(unpaid.id))).toEqual([]);
    const paid = s.stripe.completeSession(String(checkout.body.id), 'paid');
    expect((await s.deliver(s.stripe.event('checkout.session.async_payment_succeeded', paid))).body.outcome).toBe('credited');
    expect(await bucketsOf(s.app, user.id)).toMatchObject({ bonus: 500 });
  });

  it('ignores, writing nothing, a session our checkout did not make and an event type it does not handle', async () => {
    const before = await counts();
    const foreign = { id: 'cs_test_foreign', object: 'checkout.session', mode: 'payment', payment_status: 'paid', metadata: { order: '42' }, amount_total: 500, currency: 'usd', payment_intent: 'pi_foreign', invoice: null };
    for (const event of [s.stripe.event('checkout.session.completed', foreign), s.stripe.event('customer.created', { id: 'cus_1', object: 'customer' }), s.stripe.event('payment_intent.succeeded', { id: 'pi_1', object: 'payment_intent' })]) {
      const res = await s.deliver(event);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ received: true, outcome: 'ignored' });
    }
    expect(await counts()).toEqual(before);
  });

  it('records, crediting nothing, a paid session whose product the file no longer lists (it needs a manual refund)', async () => {
    const user = await registerUser(s.app);
    const session = await s.buy(user, 'tokens-500');
    const gone = { ...session, metadata: { ...(session.metadata as Json), gensvc_product_id: 'tokens-retired' } };
    const res = await s.deliver(s.stripe.event('checkout.session.completed', gone));
    expect(res.body.outcome).toBe('not_credited');
    expect(await s.paymentsOf(String(session.id))).toEqual([]);
    expect(await bucketsOf(s.app, user.id)).toMatchObject({ bonus: 0 });
    expect(s.log.lines.some((l) => l.msg === 'stripe: a payment could not be credited: refund it by hand' && l.productId === 'tokens-retired')).toBe(true);
  });

  it('records, crediting nothing, a payment of an account deleted meanwhile; a deleted account\'s event rows lose its id', async () => {
    const user = await registerUser(s.app);
    const earlier = await boughtPack(user, 'tokens-500');
    const session = await s.buy(user, 'tokens-2000');
    await deleteAccount(s.app.container, user.id);
    const event = s.stripe.event('checkout.session.completed', session);
    expect((await s.deliver(event)).body.outcome).toBe('not_credited');
    expect(await s.paymentsOf(String(session.id))).toEqual([]);
    const rows = await s.app.container.db.repo(StripeEvent).find({ where: [{ objectId: String(earlier.id) }, { eventId: String(event.id) }] });
    expect(rows.map((r) => [r.outcome, r.userId])).toEqual([
      ['credited', null],
      ['not_credited', user.id],
    ]);
  });

  it('refuses a signed event of the wrong shape with 422 naming the field, writing nothing', async () => {
    const user = await registerUser(s.app);
    const session = await s.buy(user, 'tokens-500');
    const before = await counts();
    const res = await s.deliver(s.stripe.event('checkout.session.completed', { ...session, amount_total: 'a lot' }));
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ code: 'validation_failed', errors: [{ field: 'data.object.amount_total' }] });
    const notAnEvent = await s.deliver({ hello: 'world' });
    expect(notAnEvent.status).toBe(422);
    expect(await counts()).toEqual(before);
  });
});

describe('the signature', () => {
  it('refuses with 400, changing nothing: another secret, a changed body, no header, a stale timestamp, a garbled header', async () => {
    const user = await registerUser(s.app);
    const session = await s.buy(user, 'tokens-500');
    const event = s.stripe.event('checkout.session.completed', session);
    const payload = JSON.stringify(event);
    const now = Math.floor(s.app.clock.now().getTime() / 1000);
    const before = await counts();
    const post = (body: string, header?: string) => {
      const req = s.app.http().post('/api/v2/providers/stripe/webhook').set('content-type', 'application/json');
      return (header === undefined ? req : req.set('stripe-signature', header)).send(body);
    };
    const attempts = [
      post(payload, s.stripe.sign(payload, 'whsec_someoneelsessecret000000000000')),
      post(payload.replace('"tokens-500"', '"tokens-10000"'), s.stripe.sign(payload, STRIPE_WEBHOOK_SECRET)),
      post(payload),
      post(payload, s.stripe.sign(payload, STRIPE_WEBHOOK_SECRET, now - 600)),
      post(payload, 'v1=deadbeef'),
      post(payload, `t=${now},v0=${'0'.repeat(64)}`),
      post('', s.stripe.sign(payload, STRIPE_WEBHOOK_SECRET)),
    ];
    for (const res of await Promise.all(attempts)) {
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'invalid_stripe_signature', detail: expect.stringMatching(/^Invalid Stripe-Signature/) });
    }
    expect(await counts()).toEqual(before);
    expect(await bucketsOf(s.app, user.id)).toMatchObject({ bonus: 0 });
    // The genuine delivery still works afterwards.
    expect((await post(payload, s.stripe.sign(payload, STRIPE_WEBHOOK_SECRET))).body.outcome).toBe('credited');
  });

  it('answers a signed body that is not JSON (or empty) with 400 malformed_request', async () => {
    for (const body of ['{not json', '']) {
      const raw = await s.app.http().post('/api/v2/providers/stripe/webhook').set('content-type', 'application/json').set('stripe-signature', s.stripe.sign(body, STRIPE_WEBHOOK_SECRET)).send(body);
      expect(raw.status).toBe(400);
      expect(raw.body.code).toBe('malformed_request');
    }
  });
});

describe('a plan: the first month, renewals, the end of the subscription', () => {
  it("credits the first month once, whether the session's event or the first invoice's comes first", async () => {
    for (const order of [['session', 'invoice'], ['invoice', 'session']] as const) {
      const user = await registerUser(s.app);
      const start = s.app.clock.now();
      const session = await s.buy(user, 'pro-monthly');
      const invoice = s.stripe.invoices.get(String(session.invoice)) as Json;
      const events = { session: s.stripe.event('checkout.session.completed', session), invoice: s.stripe.event('invoice.paid', invoice) };
      expect((await s.deliver(events[order[0]])).body.outcome).toBe('credited');
      expect((await s.deliver(events[order[1]])).body.outcome).toBe('duplicate');
      const payments = await s.paymentsOf(String(invoice.id));
      expect(payments).toEqual([expect.objectContaining({ userId: user.id, kind: 'plan', plan: 'pro', amount: 1999, currency: 'usd', planFrom: start, planUntil: addMonths(start, 1) })]);
      expect(await bucketsOf(s.app, user.id)).toMatchObject({ plan: 'pro', subscription: 3000, expiresAt: addMonths(start, 1) });
      expect(await rowsOfPayment(s.app, note(String(invoice.id)))).toHaveLength(1);
      // Both events are recorded, each against the one payment.
      for (const event of Object.values(events)) expect((await s.eventRows(String(event.id)))[0]).toMatchObject({ paymentExternalId: invoice.id });
    }
  });

  it('extends the plan a month per renewal invoice, once each however often and however concurrently it is delivered', async () => {
    const user = await registerUser(s.app);
    const session = await s.buy(user, 'basic-monthly');
    await s.deliver(s.stripe.event('checkout.session.completed', session));
    const expiry = (await bucketsOf(s.app, user.id)).expiresAt as Date;
    s.app.clock.advance(29 * DAY);
    const renewal = s.stripe.renew(String(session.subscription));
    const event = s.stripe.event('invoice.paid', renewal);
    const answers = await Promise.all(Array.from({ length: 10 }, () => s.deliver(event)));
    expect(answers.filter((a) => a.body.outcome === 'credited')).toHaveLength(1);
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect((await s.deliver(event)).body.outcome).toBe('already_processed');
    expect(await bucketsOf(s.app, user.id)).toMatchObject({ plan: 'basic', expiresAt: addMonths(expiry, 1) });
    expect((await rowsOfPayment(s.app, note(String(renewal.id)))).map((r) => [r.reason, r.amount])).toEqual([['purchase', 0]]);
    expect(await s.eventRows(String(event.id))).toHaveLength(1);

    const second = s.stripe.renew(String(session.subscription));
    expect((await s.deliver(s.stripe.event('invoice.paid', second))).body.outcome).toBe('credited');
    expect((await bucketsOf(s.app, user.id)).expiresAt).toEqual(addMonths(addMonths(expiry, 1), 1));
  });

  it('does not credit a paid invoice that is not a month of the plan (a proration), recording it', async () => {
    const user = await registerUser(s.app);
    const session = await s.buy(user, 'basic-monthly');
    await s.deliver(s.stripe.event('checkout.session.completed', session));
    const before = await bucketsOf(s.app, user.id);
    const proration: Json = { ...s.stripe.renew(String(session.subscription)), billing_reason: 'subscription_update' };
    expect((await s.deliver(s.stripe.event('invoice.paid', proration))).body.outcome).toBe('not_credited');
    expect(await bucketsOf(s.app, user.id)).toEqual(before);
    expect(await s.paymentsOf(String(proration.id))).toEqual([]);
  });

  it('records the end of a subscription; the plan runs to its expiry, untouched', async () => {
    const user = await registerUser(s.app);
    const session = await s.buy(user, 'vip-monthly');
    await s.deliver(s.stripe.event('checkout.session.completed', session));
    const before = await bucketsOf(s.app, user.id);
    const ledger = await s.app.container.db.repo(LedgerEntry).countBy({ userId: user.id });
    const event = s.stripe.event('customer.subscription.deleted', s.stripe.cancel(String(session.subscription)));
    expect((await s.deliver(event)).body).toEqual({ received: true, outcome: 'subscription_ended' });
    expect(await s.eventRows(String(event.id))).toEqual([expect.objectContaining({ objectId: session.subscription, userId: user.id, outcome: 'subscription_ended', paymentExternalId: null })]);
    expect((await s.deliver(event)).body.outcome).toBe('already_processed');
    expect(await bucketsOf(s.app, user.id)).toEqual(before);
    expect(await s.app.container.db.repo(LedgerEntry).countBy({ userId: user.id })).toBe(ledger);
  });
});

describe('charge.refunded', () => {
  it('reverses a fully refunded pack once, under the shortfall rule; redelivered or notified again, nothing more', async () => {
    const user = await registerUser(s.app);
    const session = await boughtPack(user, 'tokens-500');
    // 50 subscription + 500 bonus; three generations of 100 leave 0 + 250.
    for (let i = 0; i < 3; i++) await spend100(user);
    const refund = s.stripe.event('charge.refunded', s.stripe.refund(String(session.payment_intent)));
    expect((await s.deliver(refund)).body.outcome).toBe('reversed');
    expect((await s.paymentsOf(String(session.id)))[0]).toMatchObject({ status: 'reversed', reversedTokens: 250, shortfallTokens: 250, refundReference: refund.id });
    expect(await bucketsOf(s.app, user.id)).toMatchObject({ subscription: 0, bonus: 0 });
    expect((await s.deliver(refund)).body.outcome).toBe('already_processed');
    // Stripe notifies each refund of a charge; a second one finds the payment reversed already.
    const another = s.stripe.event('charge.refunded', s.stripe.refund(String(session.payment_intent)));
    expect((await s.deliver(another)).body.outcome).toBe('already_reversed');
    expect((await rowsOfPayment(s.app, note(String(session.id)))).map((r) => [r.reason, r.amount])).toEqual([
      ['purchase', 500],
      ['refund', -250],
    ]);
  });

  it('reverses once when the refund is delivered 10 times at once', async () => {
    const user = await registerUser(s.app);
    const session = await boughtPack(user, 'tokens-2000');
    const refund = s.stripe.event('charge.refunded', s.stripe.refund(String(session.payment_intent)));
    const answers = await Promise.all(Array.from({ length: 10 }, () => s.deliver(refund)));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(answers.filter((a) => a.body.outcome === 'reversed')).toHaveLength(1);
    expect((await rowsOfPayment(s.app, note(String(session.id)))).filter((r) => r.reason === 'refund')).toHaveLength(1);
    expect(await bucketsOf(s.app, user.id)).toMatchObject({ bonus: 0 });
  });

  it('answers a refund that arrives before its payment with a retryable 503, recording nothing; after the payment, one reversal', async () => {
    const user = await registerUser(s.app);
    const session = await s.buy(user, 'tokens-500');
    const refund = s.stripe.event('charge.refunded', s.stripe.refund(String(session.payment_intent)));
    const before = await counts();
    const early = await s.deliver(refund);
    expect(early.status).toBe(503);
    expect(early.body).toEqual({ detail: 'The payment this refund belongs to has not been credited yet; retry later', code: 'payment_not_yet_credited' });
    expect(await counts()).toEqual(before);
    // Stripe asked which session the PaymentIntent belongs to (it is not in our record yet).
    expect(s.stripe.requestsTo('GET', '/v1/checkout/sessions').at(-1)?.query).toMatchObject({ payment_intent: session.payment_intent });

    expect((await s.deliver(s.stripe.event('checkout.session.completed', session))).body.outcome).toBe('credited');
    expect((await s.deliver(refund)).body.outcome).toBe('reversed');
    expect((await s.deliver(refund)).body.outcome).toBe('already_processed');
    expect((await rowsOfPayment(s.app, note(String(session.id)))).map((r) => r.reason)).toEqual(['purchase', 'refund']);
    expect(await bucketsOf(s.app, user.id)).toMatchObject({ bonus: 0 });
    // A refusal, logged as one: never as a crash.
    expect(s.log.lines.some((l) => l.code === 'payment_not_yet_credited' && l.level <= 30)).toBe(true);
  });

  it("reverses a subscription's renewal, found through the invoice Stripe says the charge paid: the month comes off the expiry", async () => {
    const user = await registerUser(s.app);
    const session = await s.buy(user, 'pro-monthly');
    await s.deliver(s.stripe.event('checkout.session.completed', session));
    const expiry = (await bucketsOf(s.app, user.id)).expiresAt as Date;
    const renewal = s.stripe.renew(String(session.subscription));
    await s.deliver(s.stripe.event('invoice.paid', renewal));
    expect((await bucketsOf(s.app, user.id)).expiresAt).toEqual(addMonths(expiry, 1));
    const refund = s.stripe.event('charge.refunded', s.stripe.refund(s.stripe.paymentIntentOfInvoice(String(renewal.id))));
    expect((await s.deliver(refund)).body.outcome).toBe('reversed');
    expect(s.stripe.requestsTo('GET', '/v1/invoice_payments').at(-1)?.query).toMatchObject({ 'payment[type]': 'payment_intent', 'expand[0]': 'data.invoice' });
    expect(await bucketsOf(s.app, user.id)).toMatchObject({ plan: 'pro', expiresAt: expiry });
    expect((await s.paymentsOf(String(renewal.id)))[0]).toMatchObject({ status: 'reversed' });
    expect((await s.paymentsOf(String(session.invoice)))[0]).toMatchObject({ status: 'credited' });
  });

  it('leaves the purchase standing after a partial refund (recorded), and ignores the refund of a charge that is not ours', async () => {
    const user = await registerUser(s.app);
    const session = await boughtPack(user, 'tokens-500');
    const partial = s.stripe.event('charge.refunded', s.stripe.refund(String(session.payment_intent), 100));
    expect((await s.deliver(partial)).body.outcome).toBe('partial_refund');
    expect((await s.paymentsOf(String(session.id)))[0]).toMatchObject({ status: 'credited' });
    expect(await bucketsOf(s.app, user.id)).toMatchObject({ bonus: 500 });

    const before = await counts();
    const foreign = { id: 'ch_foreign', object: 'charge', amount: 100, amount_refunded: 100, payment_intent: 'pi_not_ours', refunded: true };
    expect((await s.deliver(s.stripe.event('charge.refunded', foreign))).body.outcome).toBe('ignored');
    expect(await counts()).toEqual(before);
  });
});
