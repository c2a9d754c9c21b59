/**
 * /docs in a real Chromium (Debian's `chromium`, driven by playwright-core; set CHROMIUM_PATH for
 * another executable): the reference renders every operation under the page's strict policy with
 * no violation and no script error, picks up the browser's session from the refresh cookie, and
 * "Try it out" answers with that session; without a session it says to use Authorize. Skipped
 * (saying so) where no Chromium is installed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Browser, chromium, Page } from 'playwright-core';
import { startTestApp, TestApp } from './helpers/app';

const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const available = fs.existsSync(executablePath);
if (!available) console.warn(`docs-browser: no Chromium at ${executablePath}; skipped`);
const describeInChromium = available ? describe : describe.skip;

const holder: { app?: TestApp; browser?: Browser; base?: string } = {};

beforeAll(async () => {
  if (!available) return;
  holder.app = await startTestApp({ CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json') });
  holder.base = `http://127.0.0.1:${(holder.app.server.address() as { port: number }).port}`;
  holder.browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
}, 60_000);

afterAll(async () => {
  await holder.browser?.close();
  await holder.app?.close();
});

/** A page of a fresh browser context, recording policy violations and script errors. */
async function openPage(): Promise<{ page: Page; problems: string[] }> {
  if (!holder.browser) throw new Error('no browser');
  const context = await holder.browser.newContext({ baseURL: holder.base });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  await page.exposeFunction('reportViolation', (text: string) => problems.push(`csp: ${text}`));
  // Scripts for the page are strings: this project's TypeScript has no DOM types.
  await page.addInitScript({ content: "document.addEventListener('securitypolicyviolation', (e) => window.reportViolation(e.violatedDirective + ' ' + e.blockedURI));" });
  return { page, problems };
}

/** Waits for the status line of /docs to say `text` (a locator: the page's policy refuses evaluated strings). */
async function sessionLineSays(page: Page, text: string, timeout: number): Promise<void> {
  await page.locator('#docs-session', { hasText: text }).waitFor({ timeout });
}

describeInChromium('/docs in Chromium', () => {
  it('renders every operation without a policy violation, signs in with the refresh cookie, and "Try it out" uses the session', async () => {
    const { page, problems } = await openPage();
    const registered = await page.request.post('/api/v2/auth/register', { data: { email: 'reader@example.test', password: 'a long password' } });
    expect(registered.status()).toBe(201);
    await page.goto('/docs');
    await page.waitForSelector('.opblock', { timeout: 60_000 });
    await sessionLineSays(page, 'Signed in', 20_000);
    const documented = ((await (await page.request.get('/api/v2/openapi.json')).json()) as { paths: Record<string, object> }).paths;
    const operations = Object.values(documented).reduce((n, item) => n + Object.keys(item).length, 0);
    expect(await page.locator('.opblock').count()).toBe(operations);

    const me = page.locator('.opblock-get', { has: page.locator('[data-path="/api/v2/user/me"]') }).first();
    await me.locator('.opblock-summary').click();
    await me.getByRole('button', { name: 'Try it out' }).click();
    await me.getByRole('button', { name: 'Execute' }).click();
    const status = me.locator('.live-responses-table tbody .response-col_status').first();
    await status.waitFor({ timeout: 20_000 });
    expect((await status.textContent())?.trim()).toBe('200');
    expect(await me.locator('.live-responses-table .microlight').first().textContent()).toContain('"email": "reader@example.test"');
    expect(problems).toEqual([]);
  }, 120_000);

  it('says to use Authorize when the browser has no session', async () => {
    const { page, problems } = await openPage();
    await page.goto('/docs');
    await sessionLineSays(page, 'Not signed in', 60_000);
    // The refresh answered 401: the only console error is that failed request, which the page expects.
    expect(problems.filter((p) => !/401/.test(p))).toEqual([]);
  }, 120_000);
});
