/**
 * Buying on the web (real Chromium): the overview's Buy button opens a Stripe Checkout session
 * for that product; coming back from a paid checkout the page says so and shows the balance
 * the webhook credited; a cancelled one says nothing was charged; the refusals (a plan below the
 * one running, card payments not set up) are said in words with what to do instead.
 */
import path from 'node:path';
import type { Page } from 'playwright-core';
import { FakeProvider } from './helpers/fake-provider';
import { FakeStripe } from './helpers/fake-stripe';
import { signIn, useDashboard } from './helpers/browser';
import './helpers/locator-matchers';
import { STRIPE_WEBHOOK, STRIPE_WEBHOOK_SECRET } from './helpers/stripe';
import { registerUser, TestUser } from './helpers/users';

const CATALOG_PATH = path.join(__dirname, 'fixtures/catalog.json');
const stripe = new FakeStripe();


/** Stripe's payment page is not reachable from here (nor wanted): the browser gets a stand-in. */
async function standInForStripe(page: Page): Promise<string[]> {
  const visited: string[] = [];
  await page.route('https://checkout.stripe.com/**', async (route) => {
    visited.push(route.request().url());
    await route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>Stripe Checkout</title><p>Pay</p>' });
  });
  return visited;
}

describe('buying in the dashboard', () => {
  beforeAll(() => stripe.start());
  afterAll(() => stripe.close());
  const d = useDashboard(
    () => ({ CATALOG_PATH, STRIPE_SECRET_KEY: stripe.secretKey, STRIPE_WEBHOOK_SECRET, STRIPE_API_BASE: stripe.baseUrl }),
    { providers: [new FakeProvider('fake').adapter()] },
  );

  it('Buy opens Checkout for the product; back from a paid one, the balance shows the credit', async () => {
    const user = await registerUser(d.rig.app);
    const { context, page } = await d.rig.newPage();
    const visited = await standInForStripe(page);
    await signIn(page, user);
    await page.getByRole('button', { name: 'Buy 500 tokens' }).click();
    await page.waitForURL('https://checkout.stripe.com/**');
    const session = stripe.requestsTo('POST', '/v1/checkout/sessions').at(-1);
    expect(session?.form).toMatchObject({ mode: 'payment', client_reference_id: String(user.id), 'metadata[gensvc_product_id]': 'tokens-500' });
    expect(visited).toHaveLength(1);
    const sessionId = /\/pay\/(cs_test_\w+)/.exec(visited[0] ?? '')?.[1] ?? '';

    // Stripe takes the payment and calls the webhook; the buyer comes back to the success URL.
    const completed = stripe.completeSession(sessionId);
    const payload = JSON.stringify(stripe.event('checkout.session.completed', completed));
    await d.rig.app.http().post(STRIPE_WEBHOOK).set('content-type', 'application/json').set('stripe-signature', stripe.sign(payload, STRIPE_WEBHOOK_SECRET)).send(payload).expect(200);
    await page.goto(`/overview?checkout=success&session_id=${sessionId}`);
    await page.getByText('Thank you! Stripe confirms the payment in a moment').waitFor();
    await page.getByTestId('balance-total').getByText('550').waitFor();
    await context.close();
  });

  it('a cancelled checkout says nothing was charged, in Russian too', async () => {
    const user = await registerUser(d.rig.app);
    await d.rig.app.http().patch('/api/v2/user/settings').set('authorization', `Bearer ${user.accessToken}`).send({ language: 'ru' }).expect(200);
    const { context, page } = await d.rig.newPage();
    await signIn(page, user);
    await page.goto('/overview?checkout=cancelled');
    await page.getByText('Оплата отменена: ничего не списано.').waitFor();
    await context.close();
  });

  it('a plan below the running one is refused in words, and Checkout is not opened', async () => {
    const user = await registerUser(d.rig.app);
    await d.rig.app.container.users.setPlan(user.id, 'pro');
    const before = stripe.requestsTo('POST', '/v1/checkout/sessions').length;
    const { context, page } = await d.rig.newPage();
    await standInForStripe(page);
    await signIn(page, user);
    await page.getByRole('button', { name: 'Buy Basic' }).click();
    await page.getByText('Your plan now is higher than this one').waitFor();
    expect(page.url()).toMatch(/\/overview$/);
    expect(stripe.requestsTo('POST', '/v1/checkout/sessions')).toHaveLength(before);
    await context.close();
  });
});
