/**
 * `npm run bench`: throughput and latency of the whole generate pipeline (auth, validation,
 * pricing, limits, hold + insert, provider, capture, presenter) with an instant provider, beside
 * a bare Koa handler returning the same JSON (the ceiling). Runs on the embedded stores, and on
 * MySQL + Redis when BENCH_DATABASE_URL / BENCH_REDIS_URL (or the TEST_ ones) are set.
 *
 *   npm run bench                 # default 8 s per measurement
 *   BENCH_SECONDS=20 npm run bench
 */
import crypto from 'node:crypto';
import { spawn } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import autocannon from 'autocannon';
import Koa from 'koa';
import { createApp } from '../api/app';
import { loadConfig } from '../shared/config';
import { buildContainer, Container } from '../shared/container';
import { Generation } from '../shared/db/entities';
import { startWorker } from '../shared/jobs/worker';
import type { Stoppable } from '../shared/lifecycle';
import { FakeProvider } from '../test/helpers/fake-provider';
import { freshStores } from '../test/helpers/stores';
import { benchLocal } from './local';
import { freePort } from './processes';
import { migrations } from '../migrations';

const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const catalog = path.join(__dirname, '..', 'test', 'fixtures', 'catalog.json');

interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function listen(handler: http.RequestListener): Promise<{ server: http.Server; url: string }> {
  const server = http.createServer(handler);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  return { server, url: `http://127.0.0.1:${address.port}` };
}

async function load(url: string, token: string, body: object, options: { connections: number; rate?: number; seconds?: number }): Promise<LoadResult> {
  const result = await autocannon({
    url: `${url}/api/v2/generate`,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
    connections: options.connections,
    duration: options.seconds ?? seconds,
    overallRate: options.rate,
    // The load generator runs in a worker thread, so it does not compete with the server's thread.
    workers: 1,
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.non2xx + result.errors + result.timeouts,
  };
}

async function eliteToken(container: Container): Promise<string> {
  const user = await container.db.transaction((em) =>
    container.users.create(em, { name: 'bench', email: `bench-${Date.now()}@example.test`, plan: 'elite', identity: { kind: 'email', subject: `bench-${Date.now()}` } }),
  );
  await container.users.grantTokens(user.id, 100_000_000);
  const { key, secret } = await container.apiKeys.create(user.id, 'bench');
  void key;
  return secret;
}

/**
 * Asynchronous generations end to end: `count` submissions (32 at a time, from the load
 * generator's thread like the sync runs), then until the workers have ended every one of them.
 * The queue wait is read from the workers' histograms around it (`queueWaitBuckets`).
 */
async function asyncThroughput(container: Container, url: string, token: string, count: number): Promise<number> {
  const started = Date.now();
  const result = await autocannon({
    url: `${url}/api/v2/generate`,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ model: 'fake-art', prompt: 'bench' }),
    connections: 32,
    amount: count,
    workers: 1,
  });
  if (result.non2xx + result.errors > 0) throw new Error(`async submissions failed: ${result.non2xx} non-2xx, ${result.errors} errors`);
  // Whether any is left (one index probe; counting them all would cost MariaDB more than the work).
  while (await container.db.repo(Generation).exists({ where: { status: 'pending' } })) await new Promise((r) => setTimeout(r, 20));
  return count / ((Date.now() - started) / 1000);
}

/**
 * The queue wait of generation jobs (first attempts), from the workers' own histograms
 * (`gensvc_queue_wait_seconds`, summed over the processes): cumulative counts by bucket bound.
 * Empty where the workers serve no metrics (embedded runs them in here).
 */
async function queueWaitBuckets(metricsUrls: string[], token: string): Promise<Map<number, number>> {
  const buckets = new Map<number, number>();
  for (const url of metricsUrls) {
    const text = await (await fetch(url, { headers: { authorization: `Bearer ${token}` } })).text();
    for (const match of text.matchAll(/^gensvc_queue_wait_seconds_bucket\{le="([^"]+)",queue="generation\.run"\} (\d+)/gm)) {
      const bound = match[1] === '+Inf' ? Infinity : Number(match[1]);
      buckets.set(bound, (buckets.get(bound) ?? 0) + Number(match[2]));
    }
  }
  return buckets;
}

/** The bucket bound under which the share `p` of the jobs between two readings started; null with no metrics. */
function queueWaitBound(before: Map<number, number>, after: Map<number, number>, p: number): number | null {
  const sorted = [...after].map(([bound, count]) => [bound, count - (before.get(bound) ?? 0)] as const).sort((x, y) => x[0] - y[0]);
  const total = sorted.at(-1)?.[1] ?? 0;
  if (total === 0) return null;
  return sorted.find(([, cumulative]) => cumulative >= p * total)?.[0] ?? null;
}

async function ceiling(sample: object): Promise<LoadResult> {
  const app = new Koa();
  const json = JSON.stringify(sample);
  app.use(async (ctx) => {
    ctx.type = 'application/json';
    ctx.body = json;
  });
  const { server, url } = await listen(app.callback());
  try {
    return await load(url, 'x', { model: 'fake-text', prompt: 'hi' }, { connections: 50 });
  } finally {
    server.close();
  }
}

/**
 * The `worker` role in a process of its own (test/helpers/worker-process.ts: the real worker with
 * the instant fake provider), as the Procfile deploys it beside `web` on MySQL + Redis.
 */
async function workerProcess(env: Record<string, string>): Promise<Stoppable> {
  const child = spawn(process.execPath, ['-r', '@swc-node/register', path.join(__dirname, '..', 'test', 'helpers', 'worker-process.ts')], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('worker-ready')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the worker process exited (${code}) before it was ready`)));
  });
  return {
    name: 'worker process',
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

async function benchStores(label: string, env: Record<string, string>): Promise<void> {
  const split = Boolean(env.DATABASE_URL);
  const stores = await freshStores(split ? 'mysql-redis' : 'embedded', env);
  const processEnv = { ...stores.env, CATALOG_PATH: catalog, LOG_LEVEL: 'error' };
  const config = loadConfig(processEnv);
  const fake = new FakeProvider('fake');
  // Embedded: every role in this process. MySQL + Redis: this process is `web`, the worker its own.
  const container = await buildContainer(config, { migrate: migrations, providers: [fake.adapter()], processesJobs: !split });
  // MySQL + Redis: BENCH_WORKERS worker processes (2, the issue's shape), each its own process.
  const workerCount = split ? Number(process.env.BENCH_WORKERS ?? 2) : 1;
  const metricsToken = crypto.randomBytes(8).toString('hex');
  const metricsPorts = split ? await Promise.all(Array.from({ length: workerCount }, () => freePort())) : [];
  const workers = split
    ? await Promise.all(metricsPorts.map((port) => workerProcess({ ...processEnv, METRICS_PORT: String(port), METRICS_TOKEN: metricsToken })))
    : [await startWorker(container)];
  const { server, url } = await listen(createApp(container).callback());
  try {
    const token = await eliteToken(container);
    // Warm up connections, JIT and statement caches.
    await load(url, token, { model: 'fake-text', prompt: 'warm up' }, { connections: 10 });
    // The steady 200 req/s comes before the saturating run: right after one, MariaDB is still
    // writing the burst's pages back and its commits' fsyncs wait longer for a while.
    const paced = await load(url, token, { model: 'fake-text', prompt: 'hi' }, { connections: 5, rate: 200, seconds: Math.max(seconds, 10) });
    const sync = await load(url, token, { model: 'fake-text', prompt: 'hi' }, { connections: 50 });
    const sample = await (await fetch(`${url}/api/v2/generate`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ model: 'fake-text', prompt: 'hi' }) })).json();
    const roof = await ceiling(sample as object);
    // The workers' own warm-up (JIT, connections, statement and procedure caches) is not counted.
    await asyncThroughput(container, url, token, 1000);
    const metricsUrls = metricsPorts.map((port) => `http://127.0.0.1:${port}/metrics`);
    const waitsBefore = await queueWaitBuckets(metricsUrls, metricsToken);
    const asyncRate = await asyncThroughput(container, url, token, Number(process.env.BENCH_ASYNC_COUNT ?? 10000));
    const waitsAfter = await queueWaitBuckets(metricsUrls, metricsToken);
    const [waitP50, waitP99] = [queueWaitBound(waitsBefore, waitsAfter, 0.5), queueWaitBound(waitsBefore, waitsAfter, 0.99)];
    const wait = waitP50 === null ? '' : `   queue wait p50 ≤ ${waitP50 * 1000} ms, p99 ≤ ${waitP99 === null ? '?' : waitP99 * 1000} ms (histogram bounds)`;
    const row = (name: string, r: LoadResult) =>
      `  ${name.padEnd(34)} ${r.rps.toFixed(0).padStart(7)}/s   p50 ${String(r.p50).padStart(4)} ms   p99 ${String(r.p99).padStart(4)} ms   errors ${r.errors}`;
    console.log(`\n${label}`);
    console.log(row('bare Koa handler (ceiling)', roof));
    console.log(row('billed sync generations', sync) + `   ratio ${(sync.rps / roof.rps).toFixed(2)}`);
    console.log(row('billed sync at 200 req/s', paced));
    console.log(
      `  ${`async end to end (${workerCount} worker${workerCount > 1 ? 's' : ''})`.padEnd(34)} ${asyncRate.toFixed(0).padStart(7)}/s${wait}`,
    );
  } finally {
    server.close();
    await Promise.all(workers.map((worker) => worker.stop()));
    await container.close();
    await stores.cleanup();
  }
}

async function main(): Promise<void> {
  console.log(`gensvc bench: ${seconds} s per measurement, 50 connections, instant provider, elite user`);
  // BENCH_STORES=mysql skips the embedded run.
  if (process.env.BENCH_STORES !== 'mysql') await benchStores('embedded (SQLite + in-process queue)', {});
  const databaseUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
  const redisUrl = process.env.BENCH_REDIS_URL ?? process.env.TEST_REDIS_URL;
  if (databaseUrl && redisUrl) await benchStores('MySQL + Redis (bee-queue; this process is web, the worker runs in its own)', { DATABASE_URL: databaseUrl, REDIS_URL: redisUrl });
  else console.log('\n(set BENCH_DATABASE_URL and BENCH_REDIS_URL to measure MySQL + Redis too)');
  if (process.env.BENCH_LOCAL !== '0') await benchLocal();
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
