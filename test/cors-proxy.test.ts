/**
 * CORS for the configured origins (with credentials: the refresh cookie), and the proxy setting:
 * X-Forwarded-* are believed only with TRUST_PROXY (decisions.md "Operating", "Limits").
 */
import { Session } from '../shared/db/entities';
import type { TestApp } from './helpers/app';
import { useTestApp } from './helpers/app';
import { registerUser, uniqueEmail } from './helpers/users';

const CATALOG_PATH = `${__dirname}/fixtures/catalog.json`;
const APP_ORIGIN = 'https://app.example';
const OTHER_ORIGIN = 'https://admin.example';
const EVIL_ORIGIN = 'https://evil.example';

function varyList(value: string | undefined): string[] {
  return (value ?? '').split(/,\s*/).map((v) => v.toLowerCase());
}

describe('CORS with CORS_ORIGINS set', () => {
  const t = useTestApp({ CATALOG_PATH, CORS_ORIGINS: `${APP_ORIGIN}, ${OTHER_ORIGIN}` });

  it('allows a listed origin, with credentials', async () => {
    const res = await t.app.http().get('/health').set('origin', APP_ORIGIN);
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
    expect(res.headers['access-control-allow-credentials']).toBe('true');
    expect(varyList(res.headers.vary)).toContain('origin');
  });

  it('allows every listed origin, echoing the one that asked', async () => {
    const res = await t.app.http().get('/health').set('origin', OTHER_ORIGIN);
    expect(res.headers['access-control-allow-origin']).toBe(OTHER_ORIGIN);
  });

  it('exposes the request id, rate-limit and Retry-After headers to the browser', async () => {
    const res = await t.app.http().get('/health').set('origin', APP_ORIGIN);
    const exposed = (res.headers['access-control-expose-headers'] ?? '').split(/,\s*/).map((h: string) => h.toLowerCase());
    expect(exposed).toEqual(
      expect.arrayContaining(['x-request-id', 'x-ratelimit-limit-hour', 'x-ratelimit-remaining-hour', 'x-ratelimit-limit-day', 'x-ratelimit-remaining-day', 'retry-after']),
    );
  });

  it('answers a preflight of a listed origin', async () => {
    const res = await t.app
      .http()
      .options('/api/v2/auth/login')
      .set('origin', APP_ORIGIN)
      .set('access-control-request-method', 'POST')
      .set('access-control-request-headers', 'content-type, authorization, idempotency-key');
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
    expect(res.headers['access-control-allow-credentials']).toBe('true');
    expect(res.headers['access-control-allow-methods']).toMatch(/POST/);
    const allowedHeaders = (res.headers['access-control-allow-headers'] ?? '').toLowerCase();
    for (const h of ['content-type', 'authorization', 'idempotency-key']) expect(allowedHeaders).toContain(h);
  });

  it('answers a preflight of a route that needs authentication without asking for it', async () => {
    const res = await t.app
      .http()
      .options('/api/v2/user/me')
      .set('origin', APP_ORIGIN)
      .set('access-control-request-method', 'PATCH')
      .set('access-control-request-headers', 'authorization, content-type');
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
  });

  it('gives an unlisted origin no Access-Control-Allow-Origin', async () => {
    const res = await t.app.http().get('/health').set('origin', EVIL_ORIGIN);
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    expect(res.headers['access-control-allow-credentials']).toBeUndefined();
    expect(varyList(res.headers.vary)).toContain('origin');
  });

  it('gives an unlisted origin no preflight approval', async () => {
    const res = await t.app
      .http()
      .options('/api/v2/auth/login')
      .set('origin', EVIL_ORIGIN)
      .set('access-control-request-method', 'POST')
      .set('access-control-request-headers', 'content-type');
    expect(res.status).toBeLessThan(500);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    expect(res.headers['access-control-allow-credentials']).toBeUndefined();
    expect(res.headers['access-control-allow-methods']).toBeUndefined();
  });

  it.each(['null', 'https://app.example.evil.example', 'http://app.example', 'https://APP.example', `${APP_ORIGIN}/`, '*'])(
    'does not allow the look-alike origin %s',
    async (origin) => {
      const res = await t.app.http().get('/health').set('origin', origin);
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
    },
  );

  it('sends no CORS headers to a request without Origin', async () => {
    const res = await t.app.http().get('/health');
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('keeps the CORS headers on error responses, so the browser can read them', async () => {
    const unauth = await t.app.http().get('/api/v2/user/me').set('origin', APP_ORIGIN);
    expect(unauth.status).toBe(401);
    expect(unauth.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
    expect(unauth.headers['access-control-allow-credentials']).toBe('true');
    expect(unauth.body.code).toBe('not_authenticated');

    const missing = await t.app.http().get('/api/v2/nope').set('origin', APP_ORIGIN);
    expect(missing.status).toBe(404);
    expect(missing.headers['access-control-allow-origin']).toBe(APP_ORIGIN);

    const invalid = await t.app.http().post('/api/v2/auth/register').set('origin', APP_ORIGIN).send({ email: 'nope' });
    expect(invalid.status).toBe(422);
    expect(invalid.headers['access-control-allow-origin']).toBe(APP_ORIGIN);

    const evil = await t.app.http().get('/api/v2/user/me').set('origin', EVIL_ORIGIN);
    expect(evil.status).toBe(401);
    expect(evil.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('carries the rate-limit headers on an authenticated cross-origin response', async () => {
    const user = await registerUser(t.app);
    const res = await t.app.http().get('/api/v2/user/me').set('origin', APP_ORIGIN).set('authorization', `Bearer ${user.accessToken}`);
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
    expect(res.headers['x-ratelimit-remaining-hour']).toBe('5');
  });
});

describe('CORS without CORS_ORIGINS', () => {
  const t = useTestApp({ CATALOG_PATH });

  it('allows no origin at all', async () => {
    for (const origin of [APP_ORIGIN, 'http://localhost:3000']) {
      const res = await t.app.http().get('/health').set('origin', origin);
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
      const preflight = await t.app.http().options('/api/v2/auth/login').set('origin', origin).set('access-control-request-method', 'POST');
      expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
    }
  });
});

async function registerFrom(app: TestApp, headers: Record<string, string>): Promise<{ sessionIp: string | null; cookie: string }> {
  let request = app.http().post('/api/v2/auth/register');
  for (const [name, value] of Object.entries(headers)) request = request.set(name, value);
  const res = await request.send({ email: uniqueEmail('proxy'), password: 'password123' });
  expect(res.status).toBe(201);
  const session = await app.container.db.repo(Session).findOneByOrFail({ userId: res.body.user.id });
  const cookie = ([] as string[]).concat(res.headers['set-cookie'] ?? []).find((c) => c.startsWith('refresh_token=')) ?? '';
  return { sessionIp: session.ip, cookie };
}

describe('behind a trusted proxy (TRUST_PROXY=true)', () => {
  const t = useTestApp({ CATALOG_PATH, TRUST_PROXY: 'true' });

  it('takes the client address from X-Forwarded-For', async () => {
    const { sessionIp } = await registerFrom(t.app, { 'x-forwarded-for': '203.0.113.7' });
    expect(sessionIp).toBe('203.0.113.7');
  });

  it('takes the first address of a chain of proxies', async () => {
    const { sessionIp } = await registerFrom(t.app, { 'x-forwarded-for': '198.51.100.23, 10.0.0.2, 10.0.0.1' });
    expect(sessionIp).toBe('198.51.100.23');
  });

  it('uses the socket address without the header', async () => {
    const { sessionIp } = await registerFrom(t.app, {});
    expect(sessionIp).toMatch(/127\.0\.0\.1$/);
  });

  it('marks the refresh cookie Secure when the proxy says the request came over https', async () => {
    const https = await registerFrom(t.app, { 'x-forwarded-proto': 'https' });
    expect(https.cookie).toMatch(/;\s*secure/i);
    const http = await registerFrom(t.app, { 'x-forwarded-proto': 'http' });
    expect(http.cookie).not.toMatch(/;\s*secure/i);
  });
});

describe('not behind a trusted proxy (TRUST_PROXY unset)', () => {
  const t = useTestApp({ CATALOG_PATH });

  it('ignores X-Forwarded-For', async () => {
    const { sessionIp } = await registerFrom(t.app, { 'x-forwarded-for': '203.0.113.7' });
    expect(sessionIp).toMatch(/127\.0\.0\.1$/);
  });

  it('ignores X-Forwarded-Proto', async () => {
    const { cookie } = await registerFrom(t.app, { 'x-forwarded-proto': 'https' });
    expect(cookie).not.toMatch(/;\s*secure/i);
  });
});
