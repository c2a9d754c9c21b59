/**
 * The dashboard in a real browser: Debian's `chromium` (installed by `npm run setup` and
 * `.ci/run`) driven by playwright-core, against a real app on fresh stores serving the built
 * dashboard. Screenshots go to test-output/screenshots (gitignored) for review, not comparison.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { projectRoot } from '../../shared/config';
import { startTestApp, TestApp, TestAppOptions } from './app';
import type { PageWindow } from './page-globals';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const SCREENSHOT_DIR = path.join(projectRoot(), 'test-output', 'screenshots');
const WEB_SOURCES = [path.join(projectRoot(), 'web')];

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(full) : fs.statSync(full).mtimeMs);
  }
  return newest;
}

/**
 * The built dashboard: dist/web when it is newer than every file of web/ (as `npm run build`
 * left it), otherwise a fresh build into a temporary directory (about a second with Vite).
 */
export function builtDashboard(): { dir: string; cleanup(): void } {
  const built = path.join(projectRoot(), 'dist', 'web');
  const index = path.join(built, 'index.html');
  const sources = Math.max(...WEB_SOURCES.map(newestMtime));
  if (fs.existsSync(index) && fs.statSync(index).mtimeMs > sources) return { dir: built, cleanup: () => undefined };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gensvc-web-build-'));
  const vite = path.join(projectRoot(), 'node_modules', 'vite', 'bin', 'vite.js');
  const result = spawnSync(process.execPath, [vite, 'build', '--config', path.join(projectRoot(), 'web', 'vite.config.mts'), '--outDir', dir, '--emptyOutDir', '--logLevel', 'warn'], {
    cwd: projectRoot(),
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`vite build failed:\n${result.stdout}\n${result.stderr}`);
  return { dir, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

export interface DashboardRig {
  app: TestApp;
  browser: Browser;
  baseUrl: string;
  /** A fresh browser profile (cookies, storage) with the page's CSP violations recorded. */
  newPage(options?: { viewport?: { width: number; height: number } }): Promise<{ context: BrowserContext; page: Page }>;
}

/** Starts the app (serving the built dashboard, files at its own URL) and Chromium for the file. */
/** `env` may be a function, read when the app starts (after the suite's other beforeAll hooks started its fakes). */
export function useDashboard(env: Record<string, string> | (() => Record<string, string>) = {}, options: TestAppOptions = {}): { readonly rig: DashboardRig } {
  const holder: { rig?: DashboardRig; cleanup?: () => void } = {};
  beforeAll(async () => {
    const web = builtDashboard();
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const app = await startTestApp({ WEB_DIR: web.dir, PUBLIC_BASE_URL: baseUrl, ...(typeof env === 'function' ? env() : env) }, { ...options, port });
    // The browser keeps real time: the server's clock starts there too, so "today" is one day for both.
    app.clock.set(new Date());
    const browser = await chromium.launch({
      executablePath: CHROMIUM_PATH,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    holder.cleanup = web.cleanup;
    holder.rig = {
      app,
      browser,
      baseUrl,
      async newPage(pageOptions = {}) {
        const context = await browser.newContext({ baseURL: baseUrl, viewport: pageOptions.viewport ?? { width: 1280, height: 900 }, locale: 'en-GB' });
        // Every violation of the page's Content-Security-Policy, kept for the test to read.
        await context.addInitScript(() => {
          const w = globalThis as unknown as PageWindow;
          const seen: string[] = [];
          w.__cspViolations = seen;
          w.document.addEventListener('securitypolicyviolation', (event) => seen.push(`${event.violatedDirective} ${event.blockedURI}`));
        });
        const page = await context.newPage();
        return { context, page };
      },
    };
  }, 120_000);
  afterAll(async () => {
    await holder.rig?.browser.close();
    await holder.rig?.app.close();
    holder.cleanup?.();
  });
  return {
    get rig(): DashboardRig {
      if (!holder.rig) throw new Error('dashboard rig not started');
      return holder.rig;
    },
  };
}

/** Signs in through the page's own form, as a person does, and waits for the overview. */
export async function signIn(page: Page, who: { email: string; password: string }): Promise<void> {
  await page.goto('/sign-in');
  await page.getByLabel('E-mail').fill(who.email);
  await page.getByLabel('Password').fill(who.password);
  // Exact: with a bot token or OIDC set, "Sign in with Telegram" and the like are buttons too.
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.waitForURL('**/overview');
}

export async function cspViolations(page: Page): Promise<string[]> {
  return page.evaluate(() => (globalThis as unknown as PageWindow).__cspViolations ?? []);
}

/** axe-core's serious and critical findings on the page as it stands. */
export async function seriousAxeViolations(page: Page): Promise<Array<{ id: string; impact: string | null; help: string; targets: string[] }>> {
  if (!(await page.evaluate(() => (globalThis as unknown as PageWindow).axe !== undefined))) {
    // Evaluated through the DevTools protocol: a <script> tag (addScriptTag) is inline script,
    // which the page's own policy rightly refuses.
    await page.evaluate(fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8'));
  }
  const violations = await page.evaluate(async () => {
    const w = globalThis as unknown as PageWindow;
    if (!w.axe) throw new Error('axe-core did not load');
    const result = await w.axe.run(w.document, {});
    // A run that checked nothing would pass anything: make sure it looked.
    if (result.passes.length === 0) throw new Error('axe-core checked no rule');
    return result.violations;
  });
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(' ')) }));
}

export async function screenshot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
}

/** The page is no wider than the screen (nothing to scroll sideways on a phone). */
export async function horizontalOverflow(page: Page): Promise<number> {
  return page.evaluate(() => {
    const w = globalThis as unknown as PageWindow;
    return w.document.documentElement.scrollWidth - w.innerWidth;
  });
}
