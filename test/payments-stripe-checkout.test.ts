/**
 * POST /api/v2/billing/checkout: a Stripe Checkout Session made with the official client against
 * the fake Stripe API, with the form fields Stripe documents: a token pack is a one-off payment,
 * a plan a monthly subscription, both priced from the product file, the account and product in
 * our metadata (and the subscription's). It credits nothing (only the webhook does); it needs a
 * session; it refuses an unknown product (404) and a plan below the one running (409) without
 * calling Stripe; Stripe's failures are a 502 of the catalogue; without STRIPE_SECRET_KEY it is
 * the catalogue's feature_disabled.
 */
import { ConfigError, loadConfig } from '../shared/config';
import { LedgerEntry, Payment } from '../shared/db/entities';
import { errorCatalogue } from '../shared/errors';
import { useTestApp } from './helpers/app';
import { expectAuditClean } from './helpers/payments';
import { STRIPE_WEBHOOK, useStripeApp } from './helpers/stripe';
import { registerUser, userOnPlan } from './helpers/users';

describe('with Stripe configured', () => {
  const s = useStripeApp();
  afterEach(() => expectAuditClean(s.app));

  const sessionRequests = () => s.stripe.requestsTo('POST', '/v1/checkout/sessions');

  it('makes a one-off payment session for a token pack, priced from the file, crediting nothing yet', async () => {
    const user = await registerUser(s.app);
    const before = sessionRequests().length;
    const res = await s.checkout(user, 'tokens-500');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: expect.stringMatching(/^cs_test_/), url: `https://checkout.stripe.com/c/pay/${res.body.id}` });
    expect(sessionRequests()).toHaveLength(before + 1);
    const sent = sessionRequests().at(-1);
    expect(sent?.headers.authorization).toBe(`Bearer ${s.stripe.secretKey}`);
    expect(sent?.headers['content-type']).toMatch(/^application\/x-www-form-urlencoded/);
    expect(sent?.headers['stripe-version']).toBeTruthy();
    expect(sent?.form).toEqual({
      mode: 'payment',
      'line_items[0][quantity]': '1',
      'line_items[0][price_data][currency]': 'usd',
      'line_items[0][price_data][unit_amount]': '299',
      'line_items[0][price_data][product_data][name]': '500 tokens',
      client_reference_id: String(user.id),
      'metadata[gensvc_user_id]': String(user.id),
      'metadata[gensvc_product_id]': 'tokens-500',
      'payment_intent_data[metadata][gensvc_user_id]': String(user.id),
      'payment_intent_data[metadata][gensvc_product_id]': 'tokens-500',
      customer_email: user.email,
      success_url: 'https://shop.example.test/overview?checkout=success&session_id={CHECKOUT_SESSION_ID}',
      cancel_url: 'https://shop.example.test/overview?checkout=cancelled',
    });
    expect(await s.app.container.db.repo(Payment).countBy({ userId: user.id })).toBe(0);
    expect(await s.app.container.db.repo(LedgerEntry).countBy({ userId: user.id, reason: 'purchase' })).toBe(0);
  });

  it('makes a monthly subscription session for a plan, with our metadata on the subscription too', async () => {
    const user = await userOnPlan(s.app, 'basic');
    const res = await s.checkout(user, 'pro-monthly');
    expect(res.status).toBe(200);
    expect(sessionRequests().at(-1)?.form).toEqual({
      mode: 'subscription',
      'line_items[0][quantity]': '1',
      'line_items[0][price_data][currency]': 'usd',
      'line_items[0][price_data][unit_amount]': '1999',
      'line_items[0][price_data][recurring][interval]': 'month',
      'line_items[0][price_data][product_data][name]': 'Pro plan',
      client_reference_id: String(user.id),
      'metadata[gensvc_user_id]': String(user.id),
      'metadata[gensvc_product_id]': 'pro-monthly',
      'subscription_data[metadata][gensvc_user_id]': String(user.id),
      'subscription_data[metadata][gensvc_product_id]': 'pro-monthly',
      customer_email: user.email,
      success_url: 'https://shop.example.test/overview?checkout=success&session_id={CHECKOUT_SESSION_ID}',
      cancel_url: 'https://shop.example.test/overview?checkout=cancelled',
    });
    expect((await s.app.container.users.getById(user.id)).plan).toBe('basic');
  });

  it('refuses a plan below the one running (409), an unknown product (404) and a bad body (422) without calling Stripe', async () => {
    const vip = await userOnPlan(s.app, 'vip');
    const before = s.stripe.requests.length;
    const downgrade = await s.checkout(vip, 'basic-monthly');
    expect(downgrade.status).toBe(409);
    expect(downgrade.body).toEqual({ detail: errorCatalogue.plan_downgrade_not_allowed.detail, code: 'plan_downgrade_not_allowed' });
    const unknown = await s.checkout(vip, 'tokens-7');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: 'Unknown product', code: 'not_found' });
    for (const body of [{}, { product: '' }, { product: 7 }, { product: 'x'.repeat(65) }]) {
      const bad = await s.app.http().post('/api/v2/billing/checkout').set('authorization', `Bearer ${vip.accessToken}`).send(body);
      expect(bad.status).toBe(422);
      expect(bad.body.code).toBe('validation_failed');
    }
    expect(s.stripe.requests.length).toBe(before);
    // The same plan (a renewal bought by hand) and a better one are sold.
    expect((await s.checkout(vip, 'vip-monthly')).status).toBe(200);
    expect((await s.checkout(vip, 'elite-monthly')).status).toBe(200);
  });

  it('needs a session: no credentials 401, an API key 403 api_key_not_allowed', async () => {
    const vip = await userOnPlan(s.app, 'vip');
    const { secret } = await s.app.container.apiKeys.create(vip.id, 'server');
    const before = s.stripe.requests.length;
    const anonymous = await s.app.http().post('/api/v2/billing/checkout').send({ product: 'tokens-500' });
    expect(anonymous.status).toBe(401);
    const byKey = await s.app.http().post('/api/v2/billing/checkout').set('authorization', `Bearer ${secret}`).send({ product: 'tokens-500' });
    expect(byKey.status).toBe(403);
    expect(byKey.body.code).toBe('api_key_not_allowed');
    expect(s.stripe.requests.length).toBe(before);
  });

  it("answers Stripe's refusals and failures with the catalogue's 502, never a 5xx of our own", async () => {
    const user = await registerUser(s.app);
    s.stripe.failNext({ status: 400, type: 'invalid_request_error', code: 'parameter_invalid_integer', message: 'Invalid integer: abc' });
    const refused = await s.checkout(user, 'tokens-500');
    expect(refused.status).toBe(502);
    expect(refused.body).toEqual({ detail: errorCatalogue.payment_provider_error.detail, code: 'payment_provider_error' });
    s.stripe.failNext({ status: 500, type: 'api_error', message: 'Something went wrong on our end' });
    expect((await s.checkout(user, 'tokens-500')).status).toBe(502);
    s.stripe.failNext({ status: 401, type: 'authentication_error', message: 'Invalid API Key provided' });
    expect((await s.checkout(user, 'tokens-500')).status).toBe(502);
    // The operator sees Stripe's own message; nothing is logged as a crash.
    expect(s.log.lines.filter((l) => l.msg === 'stripe: creating a checkout session failed').map((l) => l.type)).toEqual(['StripeInvalidRequestError', 'StripeAPIError', 'StripeAuthenticationError']);
    expect(s.log.errors()).toEqual([]);
    expect((await s.checkout(user, 'tokens-500')).status).toBe(200);
  });
});

describe('without Stripe configured', () => {
  const t = useTestApp();

  it('answers checkout and the webhook with feature_disabled, naming the variable', async () => {
    const user = await registerUser(t.app);
    const checkout = await t.app.http().post('/api/v2/billing/checkout').set('authorization', `Bearer ${user.accessToken}`).send({ product: 'tokens-500' });
    expect(checkout.status).toBe(errorCatalogue.feature_disabled.status);
    expect(checkout.body).toEqual({ detail: 'Stripe Checkout is not configured on this server (STRIPE_SECRET_KEY)', code: 'feature_disabled' });
    const webhook = await t.app.http().post(STRIPE_WEBHOOK).set('content-type', 'application/json').set('stripe-signature', 't=1,v1=00').send('{}');
    expect(webhook.status).toBe(errorCatalogue.feature_disabled.status);
    expect(webhook.body).toEqual({ detail: 'The Stripe webhook is not configured on this server (STRIPE_WEBHOOK_SECRET)', code: 'feature_disabled' });
  });
});

describe('with Stripe unreachable', () => {
  // A port nothing listens on: the connection is refused.
  const t = useTestApp({ STRIPE_SECRET_KEY: 'sk_test_unreachable', STRIPE_API_BASE: 'http://127.0.0.1:9' });

  it("answers 502 saying the payment provider could not be reached", async () => {
    const user = await registerUser(t.app);
    const res = await t.app.http().post('/api/v2/billing/checkout').set('authorization', `Bearer ${user.accessToken}`).send({ product: 'tokens-500' });
    expect(res.status).toBe(502);
    expect(res.body).toEqual({ detail: 'The payment provider could not be reached; try again later', code: 'payment_provider_error' });
  });
});

describe('the Stripe variables', () => {
  it('are validated at boot, each bad one named', () => {
    const bad = { STRIPE_SECRET_KEY: 'pk_live_publishable', STRIPE_WEBHOOK_SECRET: 'secret', STRIPE_API_BASE: 'api.stripe.com', STRIPE_SUCCESS_URL: 'thanks' };
    let problems: string[] = [];
    try {
      loadConfig(bad);
    } catch (error) {
      problems = (error as ConfigError).problems;
    }
    expect(problems.map((p) => p.split(':')[0]).sort()).toEqual(['STRIPE_API_BASE', 'STRIPE_SECRET_KEY', 'STRIPE_SUCCESS_URL', 'STRIPE_WEBHOOK_SECRET']);
    const good = loadConfig({ STRIPE_SECRET_KEY: 'sk_live_abc', STRIPE_WEBHOOK_SECRET: 'whsec_abc', STRIPE_API_BASE: 'http://127.0.0.1:12111/', PUBLIC_BASE_URL: 'https://x.test' });
    expect(good.stripe).toEqual({
      secretKey: 'sk_live_abc',
      webhookSecret: 'whsec_abc',
      apiBase: 'http://127.0.0.1:12111',
      successUrl: 'https://x.test/overview?checkout=success&session_id={CHECKOUT_SESSION_ID}',
      cancelUrl: 'https://x.test/overview?checkout=cancelled',
    });
  });
});
