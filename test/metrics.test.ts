/**
 * README "Observability": GET /metrics behind METRICS_TOKEN (missing or wrong: 401), the
 * Prometheus text of this process: requests by route template and status, generations by model,
 * category and end state, tokens captured and released (equal to what the ledger and the rows
 * say), provider calls, errors and retries, jobs and queues, open SSE streams, holds outstanding,
 * the stores; and the same metrics of a process without the API on METRICS_PORT.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { loadConfig } from '../shared/config';
import { runWithLogContext } from '../shared/observability/context';
import { startMetricsServer } from '../shared/observability/metrics-server';
import { startTestApp, TestApp, useTestApp } from './helpers/app';
import { freePort, runEntry } from './helpers/child-process';
import { downProvider, FakeProvider } from './helpers/fake-provider';
import { Exposition } from './helpers/prometheus';
import { storeKind } from './helpers/stores';
import { registerUser, TestUser, userOnPlan } from './helpers/users';

const TOKEN = 'metrics-token-0123456789abcdef';
const CATALOG = path.join(__dirname, 'fixtures/catalog.json');
const fake = new FakeProvider('fake');
const t = useTestApp({ CATALOG_PATH: CATALOG, METRICS_TOKEN: TOKEN }, { providers: [fake.adapter(), downProvider()], worker: true });

beforeEach(() => fake.reset());

async function scrape(app: TestApp = t.app): Promise<Exposition> {
  const res = await app.http().get('/metrics').set('authorization', `Bearer ${TOKEN}`);
  expect(res.status).toBe(200);
  return new Exposition(res.text);
}

async function waitFor<T>(check: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() - started > timeoutMs) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 25));
  }
}

function auth(user: TestUser): [string, string] {
  return ['authorization', `Bearer ${user.accessToken}`];
}

async function generate(user: TestUser, body: object): Promise<{ id: number; status: string }> {
  const res = await t.app.http().post('/api/v2/generate').set(...auth(user)).send(body);
  expect(res.status).toBe(200);
  return { id: Number(String(res.body.id).replace('gen_', '')), status: res.body.status };
}

async function ended(user: TestUser, id: number): Promise<string> {
  return waitFor(async () => {
    const res = await t.app.http().get(`/api/v2/generate/${id}`).set(...auth(user));
    return res.body.status === 'pending' ? undefined : (res.body.status as string);
  });
}

describe('who may read /metrics', () => {
  it('no credentials: 401 not_authenticated; a wrong token or scheme: 401 invalid_token', async () => {
    const none = await t.app.http().get('/metrics');
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ detail: 'Not authenticated', code: 'not_authenticated' });
    for (const header of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, 'Bearer x', `Basic ${TOKEN}`, TOKEN]) {
      const wrong = await t.app.http().get('/metrics').set('authorization', header);
      expect(wrong.status).toBe(401);
      expect(wrong.body.code).toBe('invalid_token');
      expect(wrong.text).not.toContain('gensvc_');
    }
  });

  it('the token: the text exposition, with the process metrics', async () => {
    const res = await t.app.http().get('/metrics').set('authorization', `bearer  ${TOKEN}`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(res.headers['cache-control']).toBe('no-store');
    const metrics = new Exposition(res.text);
    for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes']) {
      expect(metrics.declares(name)).toBe(true);
    }
    for (const name of ['gensvc_http_requests_total', 'gensvc_http_request_duration_seconds', 'gensvc_generations_total', 'gensvc_tokens_captured_total', 'gensvc_tokens_released_total', 'gensvc_provider_call_duration_seconds', 'gensvc_provider_errors_total', 'gensvc_provider_retries_total', 'gensvc_queue_depth', 'gensvc_queue_wait_seconds', 'gensvc_jobs_running', 'gensvc_jobs_total', 'gensvc_sse_streams_open', 'gensvc_holds_outstanding', 'gensvc_held_tokens']) {
      expect(metrics.declares(name)).toBe(true);
    }
  });

  it('the Grafana dashboard (ops/grafana-dashboard.json) is valid JSON and draws only metrics this process declares', async () => {
    const text = fs.readFileSync(path.join(__dirname, '..', 'ops', 'grafana-dashboard.json'), 'utf8');
    const dashboard = JSON.parse(text) as { panels: Array<{ type: string; targets?: Array<{ expr: string }> }> };
    const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((target) => target.expr));
    expect(exprs.length).toBeGreaterThan(20);
    const metrics = await scrape();
    const names = new Set(exprs.flatMap((expr) => [...expr.matchAll(/\b(gensvc_[a-z_]+|process_[a-z_]+|nodejs_[a-z0-9_]+)/g)].map((m) => (m[1] as string).replace(/_(bucket|count|sum)$/, ''))));
    for (const name of names) expect([name, metrics.declares(name)]).toEqual([name, true]);
  });

  it('METRICS_PORT needs METRICS_TOKEN, and the token must be long enough', () => {
    expect(() => loadConfig({ METRICS_PORT: '9100' })).toThrow(/METRICS_PORT: needs METRICS_TOKEN/);
    expect(() => loadConfig({ METRICS_TOKEN: 'short' })).toThrow(/METRICS_TOKEN: must be at least 16 characters/);
    expect(() => loadConfig({ METRICS_PORT: 'x', METRICS_TOKEN: TOKEN })).toThrow(/METRICS_PORT: must be a port number/);
    expect(loadConfig({ METRICS_PORT: '9100', METRICS_TOKEN: TOKEN }).metrics).toEqual({ port: 9100, token: TOKEN });
    expect(loadConfig({}).metrics).toEqual({ port: undefined, token: undefined });
  });
});

describe('HTTP requests', () => {
  it('count by the route template and status, never the raw path', async () => {
    const user = await registerUser(t.app);
    const before = await scrape();
    const unknown = await t.app.http().get('/api/v2/generate/gen_987654').set(...auth(user));
    expect(unknown.status).toBe(404);
    expect((await t.app.http().get('/no/such/path-123')).status).toBe(404);
    expect((await t.app.http().delete('/api/v2/generate/5')).status).toBe(405);
    const after = await scrape();
    const delta = (labels: Record<string, string>) => after.value('gensvc_http_requests_total', labels) - before.value('gensvc_http_requests_total', labels);
    expect(delta({ method: 'GET', route: '/api/v2/generate/:id', status: '404' })).toBe(1);
    expect(delta({ method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
    expect(delta({ method: 'DELETE', route: '/api/v2/generate/:id', status: '405' })).toBe(1);
    expect(after.value('gensvc_http_request_duration_seconds_count', { method: 'GET', route: '/api/v2/generate/:id' })).toBeGreaterThanOrEqual(1);
    expect(after.find('gensvc_http_request_duration_seconds_bucket', { method: 'GET', route: '/api/v2/generate/:id', le: '+Inf' })).toHaveLength(1);
    expect(after.text).not.toContain('987654');
    expect(after.text).not.toContain('path-123');
  });
});

describe('generations, providers, tokens', () => {
  it('a completed, a refused and a queued generation: counted by model, category and end state', async () => {
    const user = await userOnPlan(t.app, 'basic', 100);
    const before = await scrape();
    expect((await generate(user, { model: 'fake-text', prompt: 'hello' })).status).toBe('completed');
    fake.next({ kind: 'refuse', message: 'no' });
    expect((await generate(user, { model: 'fake-text', prompt: 'refused' })).status).toBe('failed');
    const queued = await generate(user, { model: 'fake-art', prompt: 'a kite' });
    expect(await ended(user, queued.id)).toBe('completed');
    const after = await waitFor(async () => {
      const metrics = await scrape();
      return metrics.value('gensvc_jobs_total', { queue: 'generation.run', outcome: 'completed' }) > before.value('gensvc_jobs_total', { queue: 'generation.run', outcome: 'completed' }) ? metrics : undefined;
    });
    const delta = (name: string, labels: Record<string, string>) => after.value(name, labels) - before.value(name, labels);
    expect(delta('gensvc_generations_total', { model: 'fake-text', category: 'text', status: 'completed' })).toBe(1);
    expect(delta('gensvc_generations_total', { model: 'fake-text', category: 'text', status: 'failed' })).toBe(1);
    expect(delta('gensvc_generations_total', { model: 'fake-art', category: 'image', status: 'completed' })).toBe(1);
    expect(delta('gensvc_generation_duration_seconds_count', { model: 'fake-art', category: 'image', status: 'completed' })).toBe(1);
    expect(delta('gensvc_provider_call_duration_seconds_count', { provider: 'fake', category: 'text', outcome: 'ok' })).toBe(1);
    expect(delta('gensvc_provider_call_duration_seconds_count', { provider: 'fake', category: 'text', outcome: 'error' })).toBe(1);
    expect(delta('gensvc_provider_call_duration_seconds_count', { provider: 'fake', category: 'image', outcome: 'ok' })).toBe(1);
    expect(delta('gensvc_provider_errors_total', { provider: 'fake', kind: 'refused' })).toBe(1);
    // The queued one went through the queue: waited, ran, and nothing is left waiting or running.
    expect(delta('gensvc_queue_wait_seconds_count', { queue: 'generation.run' })).toBe(1);
    expect(delta('gensvc_job_duration_seconds_count', { queue: 'generation.run' })).toBe(1);
    expect(after.value('gensvc_jobs_running', { queue: 'generation.run' })).toBe(0);
    expect(after.value('gensvc_queue_depth', { queue: 'generation.run', state: 'waiting' })).toBe(0);
  });

  it('retries: the request retry, a fallback and a job retry, by provider and reason', async () => {
    const user = await userOnPlan(t.app, 'basic', 100);
    const before = await scrape();
    fake.next({ kind: 'unavailable' });
    expect((await generate(user, { model: 'fake-text', prompt: 'again' })).status).toBe('completed');
    expect((await generate(user, { model: 'fallback-text', prompt: 'elsewhere' })).status).toBe('completed');
    fake.next({ kind: 'unavailable' });
    const queued = await generate(user, { model: 'fake-art', prompt: 'retried' });
    // The job's second attempt comes after its backoff (2 s).
    expect(await ended(user, queued.id)).toBe('completed');
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string>) => after.value(name, labels) - before.value(name, labels);
    expect(delta('gensvc_provider_retries_total', { provider: 'fake', reason: 'retry' })).toBe(1);
    expect(delta('gensvc_provider_retries_total', { provider: 'fake', reason: 'fallback' })).toBe(1);
    expect(delta('gensvc_provider_retries_total', { provider: 'fake', reason: 'job_retry' })).toBe(1);
    expect(delta('gensvc_provider_errors_total', { provider: 'fake', kind: 'unavailable' })).toBe(2);
    expect(delta('gensvc_provider_errors_total', { provider: 'down', kind: 'unavailable' })).toBe(1);
    expect(delta('gensvc_jobs_total', { queue: 'generation.run', outcome: 'retried' })).toBe(1);
  }, 20_000);

  it('tokens captured and released equal what the ledger and the rows say', async () => {
    const user = await userOnPlan(t.app, 'elite', 100);
    await generate(user, { model: 'fake-premium', prompt: 'ten' });
    fake.next({ kind: 'refuse', message: 'no' });
    await generate(user, { model: 'fake-premium', prompt: 'refused' });
    const metrics = await scrape();
    const db = t.app.container.db;
    const [ledger] = await db.read<{ captured: unknown }>({ sql: "SELECT COALESCE(SUM(-amount), 0) AS captured FROM token_ledger WHERE reason = 'generation'", params: {} });
    const [rows] = await db.read<{ released: unknown; pending: unknown }>({
      sql: "SELECT COALESCE(SUM(CASE WHEN status = 'failed' THEN price WHEN status = 'completed' THEN price - tokens_spent ELSE 0 END), 0) AS released, SUM(CASE WHEN status = 'pending' THEN 1 ELSE 0 END) AS pending FROM generations",
      params: {},
    });
    expect(Number(rows?.pending)).toBe(0);
    expect(Number(ledger?.captured)).toBeGreaterThan(0);
    expect(metrics.value('gensvc_tokens_captured_total')).toBe(Number(ledger?.captured));
    expect(Number(rows?.released)).toBeGreaterThan(0);
    expect(metrics.value('gensvc_tokens_released_total')).toBe(Number(rows?.released));
    expect(metrics.value('gensvc_holds_outstanding')).toBe(0);
    expect(metrics.value('gensvc_held_tokens')).toBe(0);
  });
});

describe('streams, holds and stores', () => {
  it('an open stream and its hold show while it runs, and go when the client leaves', async () => {
    const user = await userOnPlan(t.app, 'basic', 100);
    fake.next({ kind: 'hang' });
    const address = t.app.server.address() as { port: number };
    const request = http.request({ host: '127.0.0.1', port: address.port, path: '/api/v2/generate', method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${user.accessToken}` } });
    const response = new Promise<http.IncomingMessage>((resolve, reject) => {
      request.on('response', resolve);
      request.on('error', reject);
    });
    request.end(JSON.stringify({ model: 'fake-text', prompt: 'hold on', stream: true }));
    const res = await response;
    expect(res.headers['content-type']).toMatch(/text\/event-stream/);
    res.on('data', () => undefined);
    res.on('error', () => undefined);
    const during = await scrape();
    expect(during.value('gensvc_sse_streams_open')).toBe(1);
    expect(during.value('gensvc_holds_outstanding')).toBe(1);
    expect(during.value('gensvc_held_tokens')).toBe(2);
    request.destroy();
    await waitFor(async () => {
      const metrics = await scrape();
      return metrics.value('gensvc_sse_streams_open') === 0 && metrics.value('gensvc_holds_outstanding') === 0 ? true : undefined;
    });
  });

  it('the stores: the MySQL pool and Redis when they are used', async () => {
    const metrics = await scrape();
    if (storeKind() === 'mysql-redis') {
      expect(metrics.value('gensvc_db_pool_connections', { state: 'open' })).toBeGreaterThanOrEqual(1);
      expect(metrics.value('gensvc_db_pool_connections', { state: 'limit' })).toBeGreaterThanOrEqual(1);
      expect(metrics.value('gensvc_redis_up', { connection: 'main' })).toBe(1);
    } else {
      // SQLite has one connection and no pool; no Redis is configured.
      expect(metrics.find('gensvc_db_pool_connections')).toHaveLength(0);
      expect(metrics.find('gensvc_redis_up')).toHaveLength(0);
    }
    for (const queue of ['generation.run', 'webhook.deliver']) {
      expect(metrics.find('gensvc_queue_depth', { queue, state: 'waiting' })).toHaveLength(1);
    }
  });
});

describe('the metrics of a process without the API (METRICS_PORT)', () => {
  it('served on their own port: the token, else 401; any other path 404', async () => {
    const server = await startMetricsServer(t.app.container.metrics, { port: 0, token: TOKEN, host: '127.0.0.1' });
    try {
      const base = `http://127.0.0.1:${server.port}`;
      expect((await fetch(`${base}/metrics`)).status).toBe(401);
      expect((await fetch(`${base}/metrics`, { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status).toBe(401);
      expect((await fetch(`${base}/other`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(404);
      const res = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(res.status).toBe(200);
      const metrics = new Exposition(await res.text());
      expect(metrics.value('gensvc_jobs_total', { queue: 'generation.run', outcome: 'completed' })).toBeGreaterThanOrEqual(1);
    } finally {
      await server.close();
    }
  });
});

const redisOnly = storeKind() === 'mysql-redis' ? describe : describe.skip;

redisOnly('the worker role on METRICS_PORT (a real process)', () => {
  it('serves its metrics, counting the jobs it ran, whose log lines carry the request id that queued them', async () => {
    // An app that runs no jobs: the child worker is the only one on this queue.
    const producer = await startTestApp({ CATALOG_PATH: CATALOG });
    const metricsPort = await freePort();
    const worker = runEntry('worker/main.ts', { ...producer.stores.env, CATALOG_PATH: CATALOG, METRICS_PORT: String(metricsPort), METRICS_TOKEN: TOKEN, LOG_LEVEL: 'debug' });
    try {
      await worker.waitForOutput(/worker ready/, 20_000);
      await runWithLogContext({ requestId: 'from-the-web-0001' }, () => producer.container.queue.enqueue('maintenance.run', { task: 'expire' }));
      const scrapeWorker = async (): Promise<Exposition> => {
        const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
        expect(res.status).toBe(200);
        return new Exposition(await res.text());
      };
      const metrics = await waitFor(async () => {
        const m = await scrapeWorker();
        return m.value('gensvc_jobs_total', { queue: 'maintenance.run', outcome: 'completed' }) === 1 ? m : undefined;
      }, 15_000);
      expect(metrics.value('gensvc_queue_wait_seconds_count', { queue: 'maintenance.run' })).toBe(1);
      expect(metrics.declares('process_cpu_user_seconds_total')).toBe(true);
      expect((await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status).toBe(401);
      const output = await worker.waitForOutput(/"requestId":"from-the-web-0001"[^\n]*"msg":"job done"/, 5_000);
      expect(output).toMatch(/"job":"maintenance.run"[^\n]*"requestId":"from-the-web-0001"|"requestId":"from-the-web-0001"[^\n]*"job":"maintenance.run"/);
    } finally {
      worker.kill('SIGTERM');
      const { code, output } = await worker.exit;
      expect(output).toMatch(/"part":"metrics"[^\n]*"msg":"stopped"/);
      expect(code).toBe(0);
      await producer.close();
    }
  }, 60_000);
});
