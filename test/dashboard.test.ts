/**
 * The dashboard in real Chromium against the real app (README "The dashboard"): a newcomer
 * registers, sees the free allowance, streams a text generation and pays exactly the price shown,
 * makes an image that is then in history, favorites, filters and deletes; the session survives a
 * reload; the password can be reset from the mailed link; nothing breaks the page's CSP.
 */
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { FakeProvider } from './helpers/fake-provider';
import { cspViolations, screenshot, useDashboard } from './helpers/browser';
import './helpers/locator-matchers';
import type { PageWindow } from './helpers/page-globals';

const CATALOG_PATH = path.join(__dirname, 'fixtures/catalog.json');
const fake = new FakeProvider('fake');
// Long enough that the words arrive over a few hundred milliseconds (5 ms apart).
fake.reply = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');

describe('a newcomer in the dashboard', () => {
  const d = useDashboard({ CATALOG_PATH }, { providers: [fake.adapter()], worker: true });
  let context: BrowserContext;
  let page: Page;
  const email = `newcomer-${Date.now()}@example.test`;
  const password = 'a long enough password';

  beforeAll(async () => {
    ({ context, page } = await d.rig.newPage());
  });
  afterAll(async () => {
    await context?.close();
  });

  async function accessTokenFor(): Promise<string> {
    const res = await d.rig.app.http().post('/api/v2/auth/login').send({ email, password });
    return res.body.access_token as string;
  }

  it('registers and lands on the overview with the free allowance', async () => {
    await page.goto('/');
    await page.waitForURL('**/sign-in');
    await page.getByRole('link', { name: 'Create an account' }).click();
    await page.getByLabel('Name (optional)').fill('Newcomer');
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Create an account' }).click();
    await page.waitForURL('**/overview');
    await page.getByTestId('plan-name').waitFor();
    expect(await page.getByTestId('plan-name').textContent()).toBe('Starter');
    expect(await page.getByTestId('balance-total').textContent()).toBe('50');
    expect(await page.getByTestId('balance-subscription').textContent()).toBe('50');
    expect(await page.getByTestId('balance-bonus').textContent()).toBe('0');
    expect(await page.getByTestId('balance-held').textContent()).toBe('0');
    expect(await page.getByTestId('usage-period').textContent()).toBe('Used this period: 0 of 50 tokens');
    expect(await page.getByTestId('usage-hour').textContent()).toBe('This hour: 5 of 5 generations left');
    expect(await page.getByTestId('usage-day').textContent()).toBe('Today: 20 of 20 generations left');
    expect(await page.getByTestId('header-balance').textContent()).toBe('Balance: 50 tokens');
    await screenshot(page, 'overview-new-account');
  });

  it('keeps the session across a reload (refresh cookie), with the access token only in memory', async () => {
    await page.reload();
    await page.getByTestId('plan-name').waitFor();
    const stored = await page.evaluate(() => {
      const w = globalThis as unknown as PageWindow;
      return JSON.stringify({ ...w.localStorage }) + JSON.stringify({ ...w.sessionStorage }) + w.document.cookie;
    });
    expect(stored).not.toMatch(/eyJ/); // no JWT where a script could read it
    const cookies = await context.cookies();
    const refresh = cookies.find((c) => c.name === 'refresh_token');
    expect(refresh).toMatchObject({ httpOnly: true, path: '/api/v2/auth' });
  });

  it('renews an expired access token from the cookie without the person noticing', async () => {
    let refreshes = 0;
    page.on('request', (request) => {
      if (request.url().endsWith('/api/v2/auth/refresh')) refreshes++;
    });
    d.rig.app.clock.advance(16 * 60); // past the access token's 15 minutes
    await page.getByRole('link', { name: 'History' }).click();
    await page.waitForURL('**/history');
    await page.getByTestId('history-empty').waitFor();
    expect(refreshes).toBe(1);
    expect(page.url()).toMatch(/\/history$/);
    // Back to the browser's time, so that both keep counting the same days.
    d.rig.app.clock.set(new Date());
  });

  it('streams a text generation and charges exactly the price it showed', async () => {
    await page.getByRole('link', { name: 'Playground' }).click();
    await page.waitForURL('**/playground');
    await page.getByLabel('Model').selectOption('fake-text');
    await page.getByLabel('Prompt', { exact: true }).fill('Tell me about the sea');
    await expect(page.getByTestId('price')).toHaveTextLater('Price: 2 tokens');
    const shownPrice = Number(/(\d+) tokens/.exec((await page.getByTestId('price').textContent()) ?? '')?.[1]);
    const before = await page.getByTestId('header-balance').textContent();
    expect(before).toBe('Balance: 50 tokens');

    // Record every text the output shows while it streams.
    await page.evaluate(() => {
      const w = globalThis as unknown as PageWindow;
      const seen: string[] = [];
      w.__streamed = seen;
      new w.MutationObserver(() => {
        const output = w.document.querySelector('[data-testid="output-text"]');
        if (output?.textContent && seen.at(-1) !== output.textContent) seen.push(output.textContent);
      }).observe(w.document.body, { subtree: true, childList: true, characterData: true });
    });
    await page.getByRole('button', { name: 'Generate for 2 tokens' }).click();
    await page.getByTestId('charged').waitFor();
    const streamed = await page.evaluate(() => (globalThis as unknown as PageWindow).__streamed ?? []);
    expect(streamed.at(-1)).toBe(fake.reply);
    // It grew word by word on screen: several partial texts before the whole one.
    const partial = streamed.filter((text) => text.length < fake.reply.length && fake.reply.startsWith(text));
    expect(partial.length).toBeGreaterThanOrEqual(3);
    expect(await page.getByTestId('charged').textContent()).toContain(`Charged ${shownPrice} tokens. Balance: ${50 - shownPrice}.`);
    await expect(page.getByTestId('header-balance')).toHaveTextLater(`Balance: ${50 - shownPrice} tokens`);

    const token = await accessTokenFor();
    const balance = await d.rig.app.http().get('/api/v2/user/balance').set('authorization', `Bearer ${token}`);
    expect(balance.body.token_balance).toBe(50 - shownPrice);
    await screenshot(page, 'playground-text');
  });

  it('runs an asynchronous image model: progress, then the image inline, then it is in history', async () => {
    await page.getByLabel('Model').selectOption('fake-art');
    await page.getByLabel('Prompt', { exact: true }).fill('a lighthouse at dusk');
    await expect(page.getByTestId('price')).toHaveTextLater('Price: 6 tokens');
    await page.getByRole('button', { name: 'Generate for 6 tokens' }).click();
    const image = page.getByTestId('output-media').locator('img');
    await image.waitFor();
    // The file really loaded (same origin, allowed by the CSP), not a broken image.
    await page.waitForFunction(() => {
      const img = (globalThis as unknown as PageWindow).document.querySelector('[data-testid="output-media"] img');
      return img !== null && img.complete && img.naturalWidth > 0;
    });
    expect(await image.getAttribute('src')).toMatch(new RegExp(`^${d.rig.baseUrl}/files/results/`));
    await expect(page.getByTestId('header-balance')).toHaveTextLater('Balance: 42 tokens');

    await page.getByRole('link', { name: 'Open in history' }).click();
    await page.waitForURL('**/history');
    await page.getByTestId('history-item').first().waitFor();
    expect(await page.getByTestId('history-item').count()).toBe(2);
    const first = page.getByTestId('history-item').first();
    expect(await first.locator('.item-title').textContent()).toBe('Fake artistic image');
    await first.locator('img').waitFor();
    await screenshot(page, 'history');
  });

  it('favorites, filters and deletes in history', async () => {
    const art = page.getByTestId('history-item').filter({ hasText: 'a lighthouse at dusk' });
    await art.getByRole('button', { name: 'Favorite' }).click();
    await expect(art.getByRole('button', { name: 'Favorite' })).toHaveAttributeLater('aria-pressed', 'true');

    await page.getByLabel('Favorites only').check();
    await expect(page.getByTestId('history-item')).toHaveCountLater(1);
    expect(await page.getByTestId('history-item').first().textContent()).toContain('a lighthouse at dusk');
    await page.getByLabel('Favorites only').uncheck();
    await expect(page.getByTestId('history-item')).toHaveCountLater(2);

    await page.getByLabel('Category').selectOption('text');
    await expect(page.getByTestId('history-item').filter({ hasText: 'a lighthouse at dusk' })).toHaveCountLater(0);
    await expect(page.getByTestId('history-item')).toHaveCountLater(1);
    expect(await page.getByTestId('history-item').first().textContent()).toContain('Tell me about the sea');

    // Delete the text one, through the confirmation dialog.
    await page.getByTestId('history-item').first().getByRole('button', { name: 'Delete' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain('Delete this generation and its files?');
    await dialog.getByRole('button', { name: 'Delete' }).click();
    await page.getByTestId('history-empty').waitFor();

    await page.getByLabel('Category').selectOption('');
    await expect(page.getByTestId('history-item')).toHaveCountLater(1);
    const token = await accessTokenFor();
    const history = await d.rig.app.http().get('/api/v2/user/history').set('authorization', `Bearer ${token}`);
    expect(history.body.items.map((i: { model_slug: string; is_favorited: boolean }) => [i.model_slug, i.is_favorited])).toEqual([['fake-art', true]]);
  });

  it('charts what was spent today on the overview, with the numbers in a table too', async () => {
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByTestId('balance-total').waitFor();
    expect(await page.getByTestId('balance-total').textContent()).toBe('42');
    expect(await page.getByTestId('usage-period').textContent()).toBe('Used this period: 8 of 50 tokens');
    expect(await page.getByTestId('usage-hour').textContent()).toBe('This hour: 3 of 5 generations left');
    await page.locator('.chart canvas').waitFor();
    await page.getByText('Tokens spent per day, as a table').click();
    const rows = page.locator('details table tbody tr');
    expect(await rows.count()).toBe(14);
    // All of it today (or yesterday and today, should the run cross midnight).
    const perDay = (await rows.locator('td:last-child').allTextContents()).map(Number);
    expect(perDay.reduce((a, b) => a + b, 0)).toBe(8);
    await screenshot(page, 'overview-after-use');
  });

  it('says in words what to do when the balance is too low', async () => {
    await page.getByRole('link', { name: 'Playground' }).click();
    await page.getByLabel('Model').selectOption('fake-expensive');
    await page.getByLabel('Prompt', { exact: true }).fill('too dear');
    await expect(page.getByTestId('price')).toHaveTextLater('Price: 1,000,000 tokens');
    await page.getByRole('button', { name: 'Generate for 1,000,000 tokens' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toContain('This costs 1000000 tokens and you have 42.');
    await alert.getByRole('link', { name: 'Top up or upgrade' }).click();
    await page.waitForURL('**/overview#top-up');
    await page.getByRole('heading', { name: 'Top up or upgrade' }).waitFor();
  });

  it('says until when to wait once the hourly limit is reached', async () => {
    // The free plan allows 5 generations an hour; the page has asked for 3 so far.
    const token = await accessTokenFor();
    const used = await d.rig.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${token}`);
    const left = Number(used.headers['x-ratelimit-remaining-hour']);
    for (let i = 0; i < left; i++) {
      await d.rig.app.http().post('/api/v2/generate').set('authorization', `Bearer ${token}`).send({ model: 'fake-text', prompt: 'spend the hour' }).expect(200);
    }
    await page.getByRole('link', { name: 'Playground' }).click();
    await page.getByLabel('Model').selectOption('fake-text');
    await page.getByLabel('Prompt', { exact: true }).fill('one more');
    await page.getByRole('button', { name: 'Generate for 2 tokens' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    const text = (await alert.textContent()) ?? '';
    const at = /^You have reached your plan’s limit for now\. Try again at (\d{2}):(\d{2})\.$/.exec(text);
    expect([text, at !== null]).toEqual([text, true]);
    // Within the hour to come, in the reader's clock.
    const now = new Date();
    const minutesAhead = ((Number(at?.[1]) * 60 + Number(at?.[2]) - (now.getHours() * 60 + now.getMinutes())) + 1440) % 1440;
    expect(minutesAhead).toBeLessThanOrEqual(61);
  });

  it('signs out, and back in after resetting the password from the mailed link', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL('**/sign-in**');
    await page.getByRole('link', { name: 'Forgot your password?' }).click();
    await page.getByLabel('E-mail').fill(email);
    await page.getByRole('button', { name: 'Send the link' }).click();
    await page.getByText('a link is on its way').waitFor();
    const mail = d.rig.app.mailbox.last(email);
    const link = /(http\S+reset-password\?token=\S+)/.exec(mail?.text ?? '')?.[1];
    expect(link).toBeDefined();
    await page.goto(link as string);
    await page.getByLabel('New password').fill('a brand new password');
    await page.getByRole('button', { name: 'Set the password' }).click();
    await page.getByText('Your password is changed').waitFor();
    // The same link a second time is refused, with the way out.
    await page.goto(link as string);
    await page.getByLabel('New password').fill('another new password');
    await page.getByRole('button', { name: 'Set the password' }).click();
    await page.getByText('This link has expired or was already used.').waitFor();

    await page.goto('/sign-in');
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('The e-mail or the password is wrong.').waitFor();
    await page.getByLabel('Password').fill('a brand new password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/overview');
    expect(await cspViolations(page)).toEqual([]);
  });
});

