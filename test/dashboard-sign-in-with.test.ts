/**
 * Signing in to the dashboard with Telegram and with the identity provider (real Chromium), with
 * no third party's script on the page: Telegram's login is its redirect protocol
 * (oauth.telegram.org/auth → return_to#tgAuthResult=<base64url JSON of the signed fields>),
 * played here by intercepting oauth.telegram.org; the identity provider is the fake OpenID
 * provider on loopback (authorization code with PKCE S256; the state, and the `iss` of RFC 9207,
 * checked on return).
 */
import crypto from 'node:crypto';
import type { Page, Route } from 'playwright-core';
import { widgetHash, WidgetData } from '../shared/auth/messenger-login';
import { Identity, User } from '../shared/db/entities';
import { useTestApp } from './helpers/app';
import { cspViolations, screenshot, seriousAxeViolations, useDashboard } from './helpers/browser';
import { startFakeOidc } from './helpers/fake-oidc';
import type { FakeOidcProvider } from './helpers/fake-oidc';
import './helpers/locator-matchers';

const BOT_TOKEN = '7000000001:AAH-test-bot-token_for-gensvc';

/** Plays oauth.telegram.org: checks the request, then sends the browser back as Telegram does. */
function telegramAnswering(fields: (returnTo: URL) => WidgetData, seen: URL[]): (route: Route) => Promise<void> {
  return async (route) => {
    const url = new URL(route.request().url());
    seen.push(url);
    const returnTo = new URL(url.searchParams.get('return_to') ?? '');
    const encoded = Buffer.from(JSON.stringify(fields(returnTo))).toString('base64url');
    await route.fulfill({ status: 302, headers: { location: `${returnTo.toString()}#tgAuthResult=${encoded}` } });
  };
}

describe('GET /auth/providers', () => {
  const t = useTestApp();
  it('offers neither button on a server without a bot token or OIDC', async () => {
    const res = await t.app.http().get('/api/v2/auth/providers').expect(200);
    expect(res.body).toEqual({ telegram: null, identity_provider: null });
  });
});

describe('signing in with Telegram and with the identity provider', () => {
  let oidc: FakeOidcProvider;
  beforeAll(async () => {
    oidc = await startFakeOidc();
  });
  afterAll(async () => {
    await oidc.close();
  });
  const d = useDashboard(() => ({
    TELEGRAM_BOT_TOKEN: BOT_TOKEN,
    OIDC_ISSUER: oidc.issuer,
    OIDC_CLIENT_ID: oidc.clientId,
    OIDC_CLIENT_SECRET: oidc.clientSecret,
    OIDC_NAME: 'Acme ID',
  }));
  const nowSeconds = (): number => Math.floor(d.rig.app.clock.now().getTime() / 1000);

  async function toSignIn(page: Page): Promise<void> {
    await page.goto('/sign-in');
    await page.getByRole('button', { name: 'Sign in with Telegram' }).waitFor();
  }

  it('the public configuration names the bot and the provider', async () => {
    const res = await d.rig.app.http().get('/api/v2/auth/providers').expect(200);
    expect(res.body).toEqual({
      telegram: { bot_id: 7000000001 },
      identity_provider: { name: 'Acme ID', issuer: oidc.issuer, authorization_endpoint: `${oidc.issuer}/authorize`, client_id: oidc.clientId, scope: 'openid email profile' },
    });
  });

  it('Sign in with Telegram: Telegram’s signed answer signs the person in; a tampered one is refused', async () => {
    const { context, page } = await d.rig.newPage();
    const seen: URL[] = [];
    await page.route('https://oauth.telegram.org/**', telegramAnswering(() => {
      // A name beyond Latin-1: the JSON is UTF-8 under the base64url.
      const fields: WidgetData = { id: 620_000_001, first_name: 'Таня', username: 'tanya_tg', auth_date: nowSeconds() };
      return { ...fields, hash: widgetHash(fields, BOT_TOKEN) };
    }, seen));
    await toSignIn(page);
    await page.getByRole('button', { name: 'Sign in with Acme ID' }).waitFor();
    expect(await seriousAxeViolations(page)).toEqual([]);
    await screenshot(page, 'sign-in-with-providers');
    await page.getByRole('button', { name: 'Sign in with Telegram' }).click();
    await page.waitForURL('**/overview');
    expect(seen).toHaveLength(1);
    expect(seen[0]!.pathname).toBe('/auth');
    expect(Object.fromEntries(seen[0]!.searchParams)).toEqual({
      bot_id: '7000000001',
      origin: d.rig.baseUrl,
      request_access: 'write',
      return_to: `${d.rig.baseUrl}/auth/telegram`,
    });
    const identity = await d.rig.app.container.db.repo(Identity).findOneByOrFail({ kind: 'messenger', subject: '620000001' });
    const user = await d.rig.app.container.db.repo(User).findOneByOrFail({ id: identity.userId });
    expect(user.name).toBe('Таня');
    // The signed fields do not stay in the address bar.
    expect(new URL(page.url()).hash).toBe('');
    expect(await cspViolations(page)).toEqual([]);
    await context.close();

    const tampered = await d.rig.newPage();
    await tampered.page.route('https://oauth.telegram.org/**', telegramAnswering(() => {
      const fields: WidgetData = { id: 620_000_002, first_name: 'Eve', auth_date: nowSeconds() };
      return { ...fields, id: 620_000_001, hash: widgetHash(fields, BOT_TOKEN) };
    }, []));
    await toSignIn(tampered.page);
    await tampered.page.getByRole('button', { name: 'Sign in with Telegram' }).click();
    await tampered.page.getByText('Telegram did not confirm this sign-in, or it is too old. Try again.').waitFor();
    expect(new URL(tampered.page.url()).pathname).toBe('/auth/telegram');
    await tampered.context.close();
  });

  it('Sign in with Acme ID: the code flow with state and PKCE signs the person in; a forged return or an answer from another issuer is refused', async () => {
    oidc.authorizeAs = { sub: 'acme-1', now: nowSeconds(), claims: { email: 'ann@acme.test', email_verified: true, name: 'Ann Acme' } };
    const { context, page } = await d.rig.newPage();
    // Sent to sign in from a page, the person comes back to that page after the trip to the provider.
    await page.goto('/history');
    await page.waitForURL('**/sign-in?next=%2Fhistory');
    await page.getByRole('button', { name: 'Sign in with Acme ID' }).click();
    await page.waitForURL('**/history');

    const asked = oidc.authorizeRequests.at(-1)!;
    expect(asked).toMatchObject({ client_id: oidc.clientId, response_type: 'code', scope: 'openid email profile', redirect_uri: `${d.rig.baseUrl}/auth/callback`, code_challenge_method: 'S256' });
    expect(asked.state).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const exchanged = oidc.tokenRequests.at(-1)!.form;
    expect(exchanged.redirect_uri).toBe(`${d.rig.baseUrl}/auth/callback`);
    expect(crypto.createHash('sha256').update(exchanged.code_verifier ?? '').digest('base64url')).toBe(asked.code_challenge);
    const identity = await d.rig.app.container.db.repo(Identity).findOneByOrFail({ kind: 'identity_provider', subject: `${oidc.issuer}|acme-1` });
    const user = await d.rig.app.container.db.repo(User).findOneByOrFail({ id: identity.userId });
    expect(user.email).toBe('ann@acme.test');
    expect(new URL(page.url()).search).toBe('');
    expect(await cspViolations(page)).toEqual([]);
    await context.close();

    // A return this tab did not start (a forged link with someone's code) is not sent to the API.
    const forged = await d.rig.newPage();
    const exchanges = oidc.tokenRequests.length;
    await forged.page.goto('/auth/callback?code=stolen&state=guessed');
    await forged.page.getByText('This sign-in was not started on this page').waitFor();
    expect(oidc.tokenRequests).toHaveLength(exchanges);

    // A mix-up (RFC 9207): this tab's own state, but the answer names another issuer. Refused
    // like a return this tab did not start, and the code is not sent to the API.
    oidc.responseIssuer = 'https://evil.example.test';
    try {
      await toSignIn(forged.page);
      await forged.page.getByRole('button', { name: 'Sign in with Acme ID' }).click();
      await forged.page.getByText('This sign-in was not started on this page').waitFor();
      expect(new URL(oidc.authorizeRequests.at(-1)!.redirect_uri!).pathname).toBe('/auth/callback');
      expect(oidc.tokenRequests).toHaveLength(exchanges);
    } finally {
      oidc.responseIssuer = undefined;
    }

    // The provider saying no (the person cancelled) is said too.
    oidc.authorizeAs = null;
    await toSignIn(forged.page);
    await forged.page.getByRole('button', { name: 'Sign in with Acme ID' }).click();
    await forged.page.getByText('The identity provider did not sign you in (access_denied).').waitFor();
    await forged.context.close();
  });
});
