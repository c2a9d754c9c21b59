/**
 * README "Observability": every response carries X-Request-Id (a sane incoming one kept, anything
 * else replaced); the log lines of the request, of the job it queued (run by the worker) and of
 * the webhook delivery that job caused all carry that id and the generation's; /ready answers
 * 503 while the process starts or drains and while a store is down, where /health (the spec's)
 * looks only at the stores; /metrics does not exist without METRICS_TOKEN.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '../shared/log';
import { Readiness } from '../shared/observability/readiness';
import { startTestApp, TestApp } from './helpers/app';
import { CapturedLog } from './helpers/captured-log';
import { freePort, runNode } from './helpers/child-process';
import { FakeProvider } from './helpers/fake-provider';
import { storeKind } from './helpers/stores';
import { registerUser } from './helpers/users';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const fake = new FakeProvider('fake');
const captured = new CapturedLog();
let app: TestApp;
let receiver: http.Server;
let port = 0;
const received: string[] = [];

async function waitFor<T>(check: () => T | undefined | Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() - started > timeoutMs) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push(body);
      res.writeHead(200);
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()));
  port = (receiver.address() as { port: number }).port;
  app = await startTestApp(
    { CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json'), URL_FETCH_ALLOW: `127.0.0.1:${port}` },
    { providers: [fake.adapter()], worker: true, log: createLogger('debug', captured) },
  );
});
afterAll(async () => {
  await app.close();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});

describe('X-Request-Id', () => {
  it('is made when the request has none', async () => {
    const res = await app.http().get('/health');
    expect(res.headers['x-request-id']).toMatch(UUID);
    const other = await app.http().get('/health');
    expect(other.headers['x-request-id']).not.toBe(res.headers['x-request-id']);
  });

  it('keeps a sane incoming one, on answers and errors alike', async () => {
    for (const id of ['abc', 'req-42', 'trace.span:01_AB', 'x'.repeat(128), 'f47ac10b-58cc-4372-a567-0e02b2c3d479']) {
      expect((await app.http().get('/health').set('x-request-id', id)).headers['x-request-id']).toBe(id);
    }
    const notFound = await app.http().get('/api/v2/nothing-here').set('x-request-id', 'kept-on-404');
    expect(notFound.status).toBe(404);
    expect(notFound.headers['x-request-id']).toBe('kept-on-404');
    const refused = await app.http().get('/api/v2/user/me').set('x-request-id', 'kept-on-401');
    expect(refused.status).toBe(401);
    expect(refused.headers['x-request-id']).toBe('kept-on-401');
  });

  it('replaces one that is too long, empty of sense or carries other characters', async () => {
    for (const id of ['x'.repeat(129), 'has space', '<script>', 'a/b', 'ünïcode', 'a,b', '"quoted"']) {
      const res = await app.http().get('/health').set('x-request-id', id);
      expect(res.headers['x-request-id']).toMatch(UUID);
    }
  });

  it('a replaced id is the one the log lines carry, never the bad one', async () => {
    captured.clear();
    const res = await app.http().get('/api/v2/nothing').set('x-request-id', 'bad id with spaces');
    const id = res.headers['x-request-id'];
    expect(id).toMatch(UUID);
    const lines = captured.lines.filter((l) => l.requestId !== undefined);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.every((l) => l.requestId === id)).toBe(true);
    expect(JSON.stringify(captured.lines)).not.toContain('bad id with spaces');
  });
});

describe('the request id in the log of everything the request causes', () => {
  it('request, its queued generation in the worker and the webhook delivery it caused carry the id and the generation id', async () => {
    const user = await registerUser(app);
    const auth = ['authorization', `Bearer ${user.accessToken}`] as const;
    await app.http().post('/api/v2/webhooks').set(...auth).send({ url: `http://127.0.0.1:${port}/hook` });
    captured.clear();
    const requestId = 'obs-trace-0001';
    const res = await app.http().post('/api/v2/generate').set(...auth).set('x-request-id', requestId).send({ model: 'fake-art', prompt: 'a lighthouse' });
    expect(res.status).toBe(200);
    expect(res.headers['x-request-id']).toBe(requestId);
    const generationId = res.body.id as number;
    await waitFor(() => received.find((body) => body.includes(`"generation_id":${generationId}`)));
    const delivered = await waitFor(() => captured.withMessage('webhook delivered').find((l) => l.requestId === requestId));
    expect(delivered).toMatchObject({ requestId, generationId, job: 'webhook.deliver' });

    // The request's own line.
    expect(captured.withMessage('request done').find((l) => l.requestId === requestId)).toMatchObject({ route: '/api/v2/generate', status: 200 });
    // The generation's job, run by the worker from the queue (bee-queue over Redis on that store pair).
    const jobs = await waitFor(() => {
      const done = captured.withMessage('job done').filter((l) => l.requestId === requestId);
      return done.length >= 2 ? done : undefined;
    });
    expect(jobs.map((l) => l.job).sort()).toEqual(['generation.run', 'webhook.deliver']);
    for (const line of jobs) expect(line.generationId).toBe(generationId);
    // Nothing of another request carries it.
    const carrying = captured.lines.filter((l) => l.requestId === requestId);
    expect(carrying.every((l) => l.generationId === undefined || l.generationId === generationId)).toBe(true);
  });

  it('a synchronous generation: the lines after its row exists name it', async () => {
    const user = await registerUser(app);
    captured.clear();
    fake.next({ kind: 'crash' }, { kind: 'crash' });
    const res = await app.http().post('/api/v2/generate').set('authorization', `Bearer ${user.accessToken}`).set('x-request-id', 'obs-sync-0002').send({ model: 'fake-text', prompt: 'hello' });
    expect(res.body.status).toBe('failed');
    const generationId = Number(String(res.body.id).replace('gen_', ''));
    // A provider that throws something unexpected is logged as a bug, under the request's id.
    const bug = captured.lines.find((l) => l.requestId === 'obs-sync-0002' && l.level >= 50);
    expect(bug).toMatchObject({ requestId: 'obs-sync-0002', generationId, msg: 'generation failed' });
    // The request's own line names the generation it made, though nothing passed it there.
    expect(captured.withMessage('request done').find((l) => l.requestId === 'obs-sync-0002')).toMatchObject({ generationId, status: 200 });
  });

  it('lines outside any request carry no request id', async () => {
    captured.clear();
    app.container.log.info('outside');
    expect(captured.withMessage('outside')[0]?.requestId).toBeUndefined();
  });
});

describe('/health and /ready', () => {
  it('/ready is 200 with every store up, while the process is ready', async () => {
    const res = await app.http().get('/ready');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ready', db: 'ok', queue: app.container.redis ? 'ok' : 'embedded' });
  });

  it('/ready is 503 while starting and while draining (SIGTERM); /health does not care', async () => {
    const original = app.container.readiness;
    try {
      app.container.readiness = new Readiness(false);
      expect((await app.http().get('/ready')).body).toEqual({ status: 'starting' });
      expect((await app.http().get('/ready')).status).toBe(503);
      app.container.readiness.markStarted();
      expect((await app.http().get('/ready')).status).toBe(200);
      app.container.readiness.markDraining();
      const draining = await app.http().get('/ready');
      expect(draining.status).toBe(503);
      expect(draining.body).toEqual({ status: 'draining' });
      expect((await app.http().get('/health')).status).toBe(200);
    } finally {
      app.container.readiness = original;
    }
  });

  it('/ready and /health are 503 while the database does not answer', async () => {
    const db = app.container.db;
    const original = db.ping.bind(db);
    db.ping = () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:3306'), { code: 'ECONNREFUSED' }));
    try {
      const ready = await app.http().get('/ready');
      expect(ready.status).toBe(503);
      expect(ready.body).toMatchObject({ status: 'unavailable', db: 'down' });
      expect((await app.http().get('/health')).status).toBe(503);
    } finally {
      db.ping = original;
    }
    expect((await app.http().get('/ready')).status).toBe(200);
  });

  it('/ready is 503 while Redis does not answer (mysql+redis only)', async () => {
    const redis = app.container.redis;
    if (!redis) return;
    const original = redis.ping.bind(redis);
    redis.ping = (() => Promise.reject(new Error('Connection is closed.'))) as typeof redis.ping;
    try {
      const ready = await app.http().get('/ready');
      expect(ready.status).toBe(503);
      expect(ready.body).toMatchObject({ status: 'unavailable', db: 'ok', queue: 'down' });
    } finally {
      redis.ping = original;
    }
  });
});

describe('/metrics without METRICS_TOKEN', () => {
  it('does not exist (404), whatever the credentials', async () => {
    for (const authorization of [undefined, 'Bearer anything-at-all-long-enough']) {
      const req = app.http().get('/metrics');
      const res = await (authorization ? req.set('authorization', authorization) : req);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: 'Not found', code: 'not_found' });
    }
  });
});

describe('readiness through the lifecycle (a real process)', () => {
  const embeddedOnly = storeKind() === 'embedded' ? it : it.skip;

  embeddedOnly('/ready is 200 once started, 503 from SIGTERM on while the process drains; /health stays 200', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gensvc-ready-'));
    const port = await freePort();
    const proc = runNode([path.join(__dirname, 'helpers/lifecycle-process.ts')], { DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'info', DRAIN_MS: '4000' });
    const get = (route: string) => fetch(`http://127.0.0.1:${port}${route}`).then(async (r) => ({ status: r.status, body: (await r.json()) as unknown }));
    try {
      await proc.waitForOutput(/web-ready/, 20_000);
      expect(await get('/ready')).toEqual({ status: 200, body: { status: 'ready', db: 'ok', queue: 'embedded' } });
      proc.kill('SIGTERM');
      await proc.waitForOutput(/shutting down/, 5_000);
      expect(await get('/ready')).toEqual({ status: 503, body: { status: 'draining' } });
      expect((await get('/health')).status).toBe(200);
    } finally {
      proc.kill('SIGTERM');
      const { code } = await proc.exit;
      expect(code).toBe(0);
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 40_000);

  embeddedOnly('npm start: one /metrics on PORT covers every role (the queue and jobs too); METRICS_PORT is not opened', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gensvc-metrics-'));
    const [port, metricsPort] = [await freePort(), await freePort()];
    const token = 'npm-start-metrics-token-0001';
    const proc = runNode([path.join(__dirname, '..', 'main.ts')], { DATA_DIR: dataDir, PORT: String(port), METRICS_PORT: String(metricsPort), METRICS_TOKEN: token, LOG_LEVEL: 'info', CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json') });
    try {
      await proc.waitForOutput(/gensvc is up/, 30_000);
      const res = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(200);
      const text = await res.text();
      for (const queue of ['generation.run', 'webhook.deliver', 'schedule.run', 'maintenance.run']) {
        expect(text).toContain(`gensvc_queue_depth{queue="${queue}",state="waiting"} 0`);
      }
      expect(text).toContain('# TYPE gensvc_jobs_total counter');
      expect(text).toContain('gensvc_http_requests_total');
      await expect(fetch(`http://127.0.0.1:${metricsPort}/metrics`)).rejects.toThrow();
    } finally {
      proc.kill('SIGTERM');
      expect((await proc.exit).code).toBe(0);
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
