/**
 * Webhooks (decisions.md "Other records"): registration with the URL rules and the per-user cap,
 * signed deliveries of generation events to a loopback receiver, retries with backoff, the
 * delivery log, the test ping, and disabling after 24 h of failures.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { WebhookDelivery } from '../shared/db/entities';
import { retryDelaySeconds } from '../shared/webhooks';
import { startTestApp, TestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { registerUser, TestUser } from './helpers/users';

interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
}

const fake = new FakeProvider('fake');
let app: TestApp;
let receiver: http.Server;
let port = 0;
const received: Received[] = [];
let answer = 200;

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(answer);
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()));
  port = (receiver.address() as { port: number }).port;
  app = await startTestApp(
    { CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json'), URL_FETCH_ALLOW: `127.0.0.1:${port}` },
    { providers: [fake.adapter()], worker: true },
  );
});
afterAll(async () => {
  await app.close();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});
beforeEach(() => {
  received.length = 0;
  answer = 200;
  fake.reset();
});

function auth(user: TestUser): [string, string] {
  return ['authorization', `Bearer ${user.accessToken}`];
}

async function waitFor<T>(check: () => Promise<T | undefined> | T | undefined, timeoutMs = 5000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() - started > timeoutMs) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

it('registers, lists without the secret, and deletes; caps at 10; refuses private URLs', async () => {
  const user = await registerUser(app);
  const created = await app.http().post('/api/v2/webhooks').set(...auth(user)).send({ url: `http://127.0.0.1:${port}/hook`, events: ['generation.completed'] });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({ id: expect.any(Number), url: `http://127.0.0.1:${port}/hook`, events: ['generation.completed'], secret: expect.stringMatching(/^whsec_/), created_at: expect.any(String) });
  const list = await app.http().get('/api/v2/webhooks').set(...auth(user));
  expect(list.body.total).toBe(1);
  expect(list.body.webhooks[0].secret).toBeUndefined();

  for (const url of ['http://127.0.0.2:9/x', 'http://[::1]:9/x', 'http://169.254.169.254/latest']) {
    const refused = await app.http().post('/api/v2/webhooks').set(...auth(user)).send({ url });
    expect(refused.status).toBe(422);
  }
  expect((await app.http().post('/api/v2/webhooks').set(...auth(user)).send({ url: `http://127.0.0.1:${port}/x`, events: ['nope'] })).status).toBe(422);
  for (let i = 0; i < 9; i++) await app.http().post('/api/v2/webhooks').set(...auth(user)).send({ url: `http://127.0.0.1:${port}/h${i}` });
  expect((await app.http().post('/api/v2/webhooks').set(...auth(user)).send({ url: `http://127.0.0.1:${port}/h10` })).status).toBe(422);

  const stranger = await registerUser(app);
  expect((await app.http().delete(`/api/v2/webhooks/${created.body.id}`).set(...auth(stranger))).status).toBe(404);
  expect((await app.http().delete(`/api/v2/webhooks/${created.body.id}`).set(...auth(user))).status).toBe(204);
});

it('delivers a signed generation.completed event with the spec 6.1 payload', async () => {
  const user = await registerUser(app);
  const hook = (await app.http().post('/api/v2/webhooks').set(...auth(user)).send({ url: `http://127.0.0.1:${port}/events` })).body;
  const gen = await app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-image', prompt: 'a kite' });
  const delivery = await waitFor(() => received.find((r) => r.body.includes(`"generation_id":${gen.body.id}`)));
  const payload = JSON.parse(delivery.body);
  expect(payload).toMatchObject({ event: 'generation.completed', generation_id: gen.body.id, status: 'completed', model_slug: 'fake-image', result_url: gen.body.result_url, tokens_spent: 4 });
  const timestamp = String(delivery.headers['x-webhook-timestamp']);
  const expected = `sha256=${crypto.createHmac('sha256', hook.secret).update(`${timestamp}.${delivery.body}`).digest('hex')}`;
  expect(delivery.headers['x-webhook-signature']).toBe(expected);
  expect(delivery.headers['x-webhook-id']).toMatch(/^\d+$/);
  expect(delivery.headers['content-type']).toBe('application/json');

  fake.next({ kind: 'refuse', message: 'nope' });
  const failed = await app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-image', prompt: 'x' });
  const failedDelivery = await waitFor(() => received.find((r) => r.body.includes(`"generation_id":${failed.body.id}`)));
  expect(JSON.parse(failedDelivery.body)).toMatchObject({ event: 'generation.failed', status: 'failed', tokens_spent: 0 });

  const log = await app.http().get(`/api/v2/webhooks/${hook.id}/deliveries`).set(...auth(user));
  expect(log.body.total).toBe(2);
  expect(log.body.items[0]).toMatchObject({ status: 'succeeded', attempts: 1, last_status_code: 200 });
});

it('only sends the events a webhook asked for', async () => {
  const user = await registerUser(app);
  await app.http().post('/api/v2/webhooks').set(...auth(user)).send({ url: `http://127.0.0.1:${port}/only-failed`, events: ['generation.failed'] });
  const gen = await app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-image', prompt: 'quiet' });
  await new Promise((r) => setTimeout(r, 200));
  expect(received.filter((r) => r.body.includes(`"generation_id":${gen.body.id}`))).toHaveLength(0);
});

it('retries a failing receiver with backoff, logs attempts, and disables a webhook failing for 24 h', async () => {
  const user = await registerUser(app);
  const hook = (await app.http().post('/api/v2/webhooks').set(...auth(user)).send({ url: `http://127.0.0.1:${port}/flaky` })).body;
  answer = 500;
  const ping = await app.http().post(`/api/v2/webhooks/${hook.id}/test`).set(...auth(user));
  expect(ping.body).toMatchObject({ event: 'ping', status: 'pending', attempts: 1, last_status_code: 500, last_error: 'HTTP 500' });
  expect(new Date(ping.body.next_attempt_at).getTime() - app.clock.now().getTime()).toBe(retryDelaySeconds(1) * 1000);
  expect(retryDelaySeconds(2)).toBe(2 * retryDelaySeconds(1));

  // The retry is due: the job (run here directly) delivers, and now the receiver answers.
  answer = 204;
  app.clock.advance(retryDelaySeconds(1));
  await app.container.webhooks.deliver(ping.body.id);
  const row = await app.container.db.repo(WebhookDelivery).findOneByOrFail({ id: ping.body.id });
  expect(row).toMatchObject({ status: 'succeeded', attempts: 2, lastStatusCode: 204 });
  // Delivered twice in all (the signature differs only by its timestamp).
  expect(received.filter((r) => r.body.includes('"event":"ping"'))).toHaveLength(2);

  // Failing for more than 24 h disables it.
  answer = 500;
  const first = await app.http().post(`/api/v2/webhooks/${hook.id}/test`).set(...auth(user));
  expect(first.body.status).toBe('pending');
  app.clock.advance(24 * 3600 + 1);
  // A day later the access token has expired: sign in again.
  user.accessToken = (await app.http().post('/api/v2/auth/login').send({ email: user.email, password: user.password })).body.access_token;
  const later = await app.http().post(`/api/v2/webhooks/${hook.id}/test`).set(...auth(user));
  expect(later.body.attempts).toBe(1);
  const list = await app.http().get('/api/v2/webhooks').set(...auth(user));
  expect(list.body.webhooks[0]).toMatchObject({ is_active: false, disabled_at: expect.any(String) });
  // The delivery that started 24 h ago has given up.
  await app.container.webhooks.deliver(first.body.id);
  const old = await app.container.db.repo(WebhookDelivery).findOneByOrFail({ id: first.body.id });
  expect(old.status).toBe('failed');
});

it('turns a disabled webhook back on: its failure streak forgotten, new events delivered again; another user\'s is 404', async () => {
  const user = await registerUser(app);
  const hook = (await app.http().post('/api/v2/webhooks').set(...auth(user)).send({ url: `http://127.0.0.1:${port}/back-on` })).body;
  // Disabled the way the service does it: its deliveries fail for 24 h.
  answer = 500;
  await app.http().post(`/api/v2/webhooks/${hook.id}/test`).set(...auth(user));
  app.clock.advance(24 * 3600 + 1);
  user.accessToken = (await app.http().post('/api/v2/auth/login').send({ email: user.email, password: user.password })).body.access_token;
  await app.http().post(`/api/v2/webhooks/${hook.id}/test`).set(...auth(user));
  const disabled = (await app.http().get('/api/v2/webhooks').set(...auth(user))).body.webhooks[0];
  expect(disabled).toMatchObject({ is_active: false, disabled_at: expect.any(String), failing_since: expect.any(String) });

  // While disabled, a generation's event is not sent.
  answer = 200;
  received.length = 0;
  const quiet = await app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-image', prompt: 'unheard' });
  expect(quiet.status).toBe(200);
  await new Promise((r) => setTimeout(r, 200));
  expect(received.filter((r) => r.body.includes(`"generation_id":${quiet.body.id}`))).toHaveLength(0);

  const stranger = await registerUser(app);
  const refused = await app.http().post(`/api/v2/webhooks/${hook.id}/enable`).set(...auth(stranger));
  expect(refused.status).toBe(404);
  expect(refused.body).toEqual({ detail: 'Not found', code: 'not_found' });
  expect((await app.http().get('/api/v2/webhooks').set(...auth(user))).body.webhooks[0].is_active).toBe(false);
  expect((await app.http().post('/api/v2/webhooks/999999999/enable').set(...auth(user))).status).toBe(404);

  const enabled = await app.http().post(`/api/v2/webhooks/${hook.id}/enable`).set(...auth(user));
  expect(enabled.status).toBe(200);
  expect(enabled.body).toEqual({ id: hook.id, url: hook.url, events: hook.events, is_active: true, failing_since: null, disabled_at: null, created_at: hook.created_at });
  // Enabling an active webhook is answered as it is.
  const again = await app.http().post(`/api/v2/webhooks/${hook.id}/enable`).set(...auth(user));
  expect(again.status).toBe(200);
  expect(again.body).toEqual(enabled.body);

  const heard = await app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-image', prompt: 'heard again' });
  const delivery = await waitFor(() => received.find((r) => r.body.includes(`"generation_id":${heard.body.id}`)));
  expect(JSON.parse(delivery.body)).toMatchObject({ event: 'generation.completed', generation_id: heard.body.id });

  // The streak starts again: one failure now is not a day of failures.
  answer = 500;
  const failing = await app.http().post(`/api/v2/webhooks/${hook.id}/test`).set(...auth(user));
  expect(failing.body.status).toBe('pending');
  const after = (await app.http().get('/api/v2/webhooks').set(...auth(user))).body.webhooks[0];
  expect(after).toMatchObject({ is_active: true, disabled_at: null, failing_since: app.clock.now().toISOString() });
});
