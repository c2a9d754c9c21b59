/**
 * Security headers on every kind of response (README "API"): JSON, errors, 404s, 405s, files,
 * /health, a CORS preflight and the bot's webhook path; HSTS only over https behind a trusted proxy.
 */
import http from 'node:http';
import path from 'node:path';
import supertest from 'supertest';
import type { Response } from 'supertest';
import { createApp } from '../api/app';
import { BotWebhook, createBotWebhook, SECRET_HEADER } from '../bot/webhook';
import { startTestApp, TestApp, useTestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { FakeTelegram } from './helpers/fake-telegram';
import { registerUser } from './helpers/users';

const CATALOG_PATH = path.join(__dirname, 'fixtures/catalog.json');

function expectSecurityHeaders(res: Response): void {
  expect(res.headers['x-content-type-options']).toBe('nosniff');
  expect(res.headers['referrer-policy']).toBe('no-referrer');
  expect(res.headers['x-frame-options']).toBe('DENY');
  expect(res.headers['content-security-policy']).toBe("default-src 'none';frame-ancestors 'none'");
}

describe('every kind of response carries the security headers', () => {
  const fake = new FakeProvider('fake');
  const t = useTestApp({ CATALOG_PATH, CORS_ORIGINS: 'https://app.example' }, { providers: [fake.adapter()] });

  it('a JSON 200', async () => {
    const user = await registerUser(t.app);
    const res = await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${user.accessToken}`);
    expect(res.status).toBe(200);
    expectSecurityHeaders(res);
    expect(res.headers['cross-origin-resource-policy']).toBe('same-origin');
  });

  it.each([
    ['a 401', (a: TestApp) => a.http().get('/api/v2/user/me'), 401],
    ['a 404 of an unknown path', (a: TestApp) => a.http().get('/nope'), 404],
    ['a 405', (a: TestApp) => a.http().put('/api/v2/auth/login'), 405],
    ['a 422', (a: TestApp) => a.http().post('/api/v2/auth/register').send({ email: 'x' }), 422],
    ['a 400 malformed body', (a: TestApp) => a.http().post('/api/v2/auth/login').set('content-type', 'application/json').send('{"a":'), 400],
    ['a 503 of an unconfigured feature', (a: TestApp) => a.http().post('/api/v2/auth/identity-provider').send({ id_token: 'x' }), 503],
    ['/health', (a: TestApp) => a.http().get('/health'), 200],
    ['a file that does not exist', (a: TestApp) => a.http().get(`/files/results/2026/01/${'0'.repeat(32)}.png`), 404],
  ])('%s', async (_label, send, status) => {
    const res = await send(t.app);
    expect(res.status).toBe(status);
    expectSecurityHeaders(res);
  });

  it('a CORS preflight, with its CORS headers intact', async () => {
    const res = await t.app.http().options('/api/v2/user/me').set('origin', 'https://app.example').set('access-control-request-method', 'GET');
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe('https://app.example');
    expectSecurityHeaders(res);
  });

  it('a file under /files keeps its content type, whole or in part, and may be embedded elsewhere', async () => {
    const stored = await t.app.container.storage.put('results', Buffer.from('<svg onload=alert(1)>'), 'image/png', 'png');
    const whole = await t.app.http().get(`/files/${stored.key}`);
    expect(whole.status).toBe(200);
    expect(whole.headers['content-type']).toBe('image/png');
    expectSecurityHeaders(whole);
    expect(whole.headers['cross-origin-resource-policy']).toBe('cross-origin');
    const part = await t.app.http().get(`/files/${stored.key}`).set('range', 'bytes=0-3');
    expect(part.status).toBe(206);
    expect(part.headers['content-type']).toBe('image/png');
    expectSecurityHeaders(part);
    const beyond = await t.app.http().get(`/files/${stored.key}`).set('range', 'bytes=999-');
    expect(beyond.status).toBe(416);
    expectSecurityHeaders(beyond);
  });

  it('a server-sent event stream', async () => {
    const user = await registerUser(t.app);
    const res = await t.app
      .http()
      .post('/api/v2/generate')
      .set('authorization', `Bearer ${user.accessToken}`)
      .send({ model: 'fake-text', messages: [{ role: 'user', content: 'hi' }], stream: true });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    expectSecurityHeaders(res);
  });

  it('no HSTS over plain http, nor on a forwarded https that is not trusted', async () => {
    expect((await t.app.http().get('/health')).headers['strict-transport-security']).toBeUndefined();
    const forwarded = await t.app.http().get('/health').set('x-forwarded-proto', 'https');
    expect(forwarded.headers['strict-transport-security']).toBeUndefined();
  });
});

describe('HSTS behind a trusted proxy', () => {
  const t = useTestApp({ CATALOG_PATH, TRUST_PROXY: 'true' });

  it('is sent when the proxy says the request came over https, without includeSubDomains', async () => {
    const res = await t.app.http().get('/health').set('x-forwarded-proto', 'https');
    expect(res.headers['strict-transport-security']).toBe('max-age=15552000');
    expectSecurityHeaders(res);
    expect((await t.app.http().get('/health').set('x-forwarded-proto', 'http')).headers['strict-transport-security']).toBeUndefined();
  });
});

describe('the bot webhook path mounted beside the API', () => {
  const tg = new FakeTelegram();
  const hookPath = '/telegram/hook-headers';
  let app: TestApp;
  let webhook: BotWebhook;
  let server: http.Server;

  beforeAll(async () => {
    await tg.start();
    app = await startTestApp({
      CATALOG_PATH,
      TELEGRAM_BOT_TOKEN: '123456:HEADERS-token',
      TELEGRAM_API_ROOT: tg.url,
      BOT_WEBHOOK_URL: `https://bot.example${hookPath}`,
    });
    webhook = createBotWebhook(app.container);
    server = http.createServer(createApp(app.container, { extraRoutes: [webhook.middleware] }).callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    expect(await webhook.register()).toBe(true);
  });

  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await webhook?.stop();
    await app?.close();
    await tg.stop();
  });

  it('answers an update and a wrong secret with the headers', async () => {
    const secret = app.container.config.telegram.webhookSecret ?? '';
    const ok = await supertest(server).post(hookPath).set(SECRET_HEADER, secret).send({ update_id: 1 });
    expect(ok.status).toBe(200);
    expectSecurityHeaders(ok);
    const refused = await supertest(server).post(hookPath).set(SECRET_HEADER, 'wrong').send({ update_id: 2 });
    expect(refused.status).toBe(401);
    expectSecurityHeaders(refused);
  });
});
