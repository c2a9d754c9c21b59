/**
 * The dashboard for everyone (real Chromium): no serious or critical axe-core finding on any
 * page, in English and in Russian; usable by keyboard alone (sign in, move between pages,
 * generate); nothing wider than a phone's screen; the language follows the account's setting.
 * Screenshots of every page, desktop and phone, go to test-output/screenshots.
 */
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { FakeProvider } from './helpers/fake-provider';
import { cspViolations, horizontalOverflow, screenshot, seriousAxeViolations, signIn, useDashboard } from './helpers/browser';
import './helpers/locator-matchers';
import { TestUser, userOnPlan } from './helpers/users';

/** axe on every page at two sizes: over a minute on a loaded 2-core machine. */
const AXE_SWEEP_TIMEOUT_MS = 240_000;

const CATALOG_PATH = path.join(__dirname, 'fixtures/catalog.json');
const PHONE = { width: 390, height: 844 };

const SIGNED_OUT_PAGES: Array<[string, string]> = [
  ['sign-in', '/sign-in'],
  ['register', '/register'],
  ['forgot-password', '/forgot-password'],
  ['reset-password', '/reset-password?token=some-token'],
];
const SIGNED_IN_PAGES: Array<[string, string, string]> = [
  ['overview', '/overview', 'Overview'],
  ['playground', '/playground', 'Playground'],
  ['assistants', '/assistants', 'Assistants'],
  ['schedules', '/schedules', 'Schedules'],
  ['history', '/history', 'History'],
  ['transactions', '/transactions', 'Transactions'],
  ['keys', '/keys', 'API keys'],
  ['webhooks', '/webhooks', 'Webhooks'],
  ['settings', '/settings', 'Settings'],
  ['account', '/account', 'Account'],
];


/** Presses Tab until the focused element matches, as a keyboard user would (at most `limit` times). */
async function tabTo(page: Page, matches: (focused: { tag: string; text: string; label: string }) => boolean, limit = 40): Promise<void> {
  for (let i = 0; i < limit; i++) {
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => {
      const active = (globalThis as unknown as { document: { activeElement: { tagName: string; textContent: string | null; labels?: Array<{ textContent: string | null }> } | null } }).document.activeElement;
      return { tag: active?.tagName.toLowerCase() ?? '', text: (active?.textContent ?? '').trim(), label: (active?.labels?.[0]?.textContent ?? '').trim() };
    });
    if (matches(focused)) return;
  }
  throw new Error('Tab never reached the element');
}

describe('the dashboard for everyone', () => {
  const fake = new FakeProvider('fake');
  // A webhook's URL is checked when it is added: a loopback one the test allows (nothing is sent).
  const d = useDashboard({ CATALOG_PATH, ASSISTANTS_PATH: path.join(__dirname, 'fixtures/assistants.json'), URL_FETCH_ALLOW: '127.0.0.1:9' }, { providers: [fake.adapter()] });
  let user: TestUser;
  const contexts: BrowserContext[] = [];

  async function freshPage(viewport?: { width: number; height: number }): Promise<Page> {
    const { context, page } = await d.rig.newPage({ viewport });
    contexts.push(context);
    return page;
  }

  beforeAll(async () => {
    user = await userOnPlan(d.rig.app, 'vip');
    // Something in history and a key, so those pages show their lists.
    const auth = `Bearer ${user.accessToken}`;
    await d.rig.app.http().post('/api/v2/generate').set('authorization', auth).send({ model: 'fake-image', prompt: 'a red kite' }).expect(200);
    await d.rig.app.http().post('/api/v2/generate').set('authorization', auth).send({ model: 'fake-text', prompt: 'hello' }).expect(200);
    await d.rig.app.http().post('/api/v2/keys').set('authorization', auth).send({ name: 'laptop' }).expect(201);
    await d.rig.app.http().post('/api/v2/assistants/marketplace/poet/install').set('authorization', auth).expect(201);
    await d.rig.app.http().post('/api/v2/webhooks').set('authorization', auth).send({ url: 'http://127.0.0.1:9/gensvc' }).expect(201);
    await d.rig.app.http().post('/api/v2/scheduled').set('authorization', auth).send({ name: 'morning verse', cron: '0 9 * * *', model: 'fake-text', prompt: 'a verse' }).expect(201);
  });
  afterAll(async () => {
    for (const context of contexts) await context.close();
  });

  it('has no serious accessibility finding on any page, and fits a phone screen', async () => {
    const findings: Record<string, unknown> = {};
    for (const viewport of [undefined, PHONE]) {
      const size = viewport ? 'phone' : 'desktop';
      const page = await freshPage(viewport);
      for (const [name, url] of SIGNED_OUT_PAGES) {
        await page.goto(url);
        await page.getByRole('heading', { level: 1 }).waitFor();
        const found = await seriousAxeViolations(page);
        if (found.length > 0) findings[`${size} ${name}`] = found;
        expect([name, size, await horizontalOverflow(page)]).toEqual([name, size, 0]);
        await screenshot(page, `${name}-${size}`);
      }
      await signIn(page, user);
      for (const [name, url, title] of SIGNED_IN_PAGES) {
        await page.goto(url);
        await page.getByRole('heading', { level: 1, name: title }).waitFor();
        await page.getByText('Loading…').first().waitFor({ state: 'detached' });
        if (name === 'history') await page.getByTestId('history-item').first().waitFor();
        if (name === 'playground') await expect(page.getByTestId('price')).toHaveTextLater('Price: 2 tokens');
        const found = await seriousAxeViolations(page);
        if (found.length > 0) findings[`${size} ${name}`] = found;
        expect([name, size, await horizontalOverflow(page)]).toEqual([name, size, 0]);
        await screenshot(page, `${name}-${size}`);
      }
      expect(await cspViolations(page)).toEqual([]);
    }
    expect(findings).toEqual({});
  }, AXE_SWEEP_TIMEOUT_MS);

  it('works by keyboard alone: sign in, go to the playground, generate', async () => {
    const page = await freshPage();
    await page.goto('/sign-in');
    await page.getByRole('heading', { level: 1 }).waitFor();
    await tabTo(page, (f) => f.tag === 'input' && f.label === 'E-mail');
    await page.keyboard.type(user.email);
    await page.keyboard.press('Tab');
    await page.keyboard.type(user.password);
    await page.keyboard.press('Enter');
    await page.waitForURL('**/overview');
    await page.getByTestId('plan-name').waitFor();

    await tabTo(page, (f) => f.tag === 'a' && f.text === 'Playground');
    await page.keyboard.press('Enter');
    await page.waitForURL('**/playground');
    await expect(page.getByTestId('price')).toHaveTextLater('Price: 2 tokens');
    await tabTo(page, (f) => f.tag === 'textarea' && f.label.startsWith('Prompt'));
    await page.keyboard.type('typed without a mouse');
    await tabTo(page, (f) => f.tag === 'button' && f.text.startsWith('Generate for'));
    await page.keyboard.press('Enter');
    await page.getByTestId('charged').waitFor();
    expect(await page.getByTestId('output-text').textContent()).toBe(fake.reply);
  });

  it('switches to Russian in settings, keeps it across sessions, and stays accessible', async () => {
    const page = await freshPage();
    await signIn(page, user);
    await page.goto('/settings');
    await page.getByRole('heading', { level: 1, name: 'Settings' }).waitFor();
    await page.getByLabel('Русский').check();
    await page.getByRole('heading', { level: 1, name: 'Настройки' }).waitFor();
    expect(await page.evaluate(() => (globalThis as unknown as { document: { documentElement: { lang: string } } }).document.documentElement.lang)).toBe('ru');
    expect(await page.getByRole('navigation').textContent()).toContain('Обзор');

    // The setting is the account's: a new browser signs in and reads Russian.
    const other = await freshPage(PHONE);
    await signIn(other, user);
    await other.getByRole('heading', { level: 1, name: 'Обзор' }).waitFor();
    expect(await other.getByTestId('usage-period').textContent()).toMatch(/^Израсходовано за период: \d+ из 8[\s\u00a0]?000 токенов$/);
    for (const [name, url] of SIGNED_IN_PAGES) {
      await other.goto(url);
      await other.getByRole('heading', { level: 1 }).waitFor();
      await other.getByText('Загрузка…').first().waitFor({ state: 'detached' });
      expect([name, await seriousAxeViolations(other)]).toEqual([name, []]);
      await screenshot(other, `${name}-phone-ru`);
    }
    await other.goto('/playground');
    await other.getByRole('button', { name: /^Сгенерировать за/ }).waitFor();

    // And back to English.
    await page.getByLabel('English').check();
    await page.getByRole('heading', { level: 1, name: 'Settings' }).waitFor();
  });
});
