/**
 * `npm run bench:peer`: the whole service in front of a real HTTP upstream, side by side with the
 * gateway an operator would otherwise deploy (Portkey's open-source gateway, a pinned dev
 * dependency), in one run on this machine. Both call the same mock OpenAI-compatible upstream
 * (bench/mock-upstream.ts, its own process) with the same chat completion; ours bills it on an
 * elite API key (auth, limits, hold, history, capture, ledger), Portkey only relays. Peer and ours
 * alternate BENCH_ROUNDS times; each figure is printed with its spread and the ratio.
 *
 * Measured: billed sync req/s and p99 (plain and streamed, with time to first byte); the
 * embedded default always, and MySQL + Redis in the Procfile's shape (web + worker processes;
 * the web role forks BENCH_WEB_CONCURRENCY workers, default WEB_CONCURRENCY's own: one per CPU,
 * one fewer when the database is on this machine, as here)
 * when BENCH_DATABASE_URL / BENCH_REDIS_URL (or the TEST_ ones) are set; 1,000 concurrent streams
 * held by one web process (its RSS, and every one billed); idle RSS and cold start of `npm start`.
 * The machine's load average is printed at the start and the end: the machine may be shared.
 *
 *   npm run bench:peer
 *   BENCH_SECONDS=10 BENCH_ROUNDS=3 BENCH_CONNECTIONS=20 npm run bench:peer
 *   BENCH_PARTS=mysql BENCH_WEB_CONCURRENCY=1,2 npm run bench:peer   (only MySQL + Redis, web ×1 then ×2)
 *
 * BENCH_PARTS (default all): embedded, mysql, streamed (the streamed comparisons), streams (the
 * 1,000 held streams), cold (npm start's cold start and idle RSS).
 */
import autocannon from 'autocannon';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../shared/config';
import { createMysqlDatabase, dropMysqlDatabase } from '../shared/db/mysql-admin';
import { distEntry, eliteKey, freePort, RoleProcess, rssMb, spawnRole, waitForHttp } from './processes';

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 20);
const repoRoot = path.join(__dirname, '..');
const parts = new Set((process.env.BENCH_PARTS ?? 'embedded,mysql,streamed,streams,cold').split(',').map((p) => p.trim()));
const body = { model: 'chat-fast', messages: [{ role: 'user', content: 'Say hello' }] };

interface Figures {
  /** Answers received (2xx or not). */
  answered: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

interface Target {
  name: string;
  url: string;
  headers: Record<string, string>;
  /** The model name this target is asked for (Portkey passes it upstream as it is). */
  model: string;
}

async function plainLoad(target: Target, extra: object = {}): Promise<Figures> {
  const result = await autocannon({
    url: `${target.url}/v1/chat/completions`,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...target.headers },
    body: JSON.stringify({ ...body, model: target.model, ...extra }),
    connections,
    duration: seconds,
    workers: 1,
  });
  return { answered: result.requests.total, rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.non2xx + result.errors + result.timeouts };
}

interface StreamFigures extends Figures {
  ttfbP50: number;
  ttfbP99: number;
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

/** Streamed completions from `connections` loops for `seconds`: time to the first byte and to the end. */
async function streamLoad(target: Target): Promise<StreamFigures> {
  const ttfb: number[] = [];
  const total: number[] = [];
  let errors = 0;
  const until = Date.now() + seconds * 1000;
  const loop = async (): Promise<void> => {
    while (Date.now() < until) {
      const started = performance.now();
      try {
        const res = await fetch(`${target.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...target.headers },
          body: JSON.stringify({ ...body, model: target.model, stream: true, stream_options: { include_usage: true } }),
        });
        const reader = res.body?.getReader();
        if (!res.ok || !reader) throw new Error(`status ${res.status}`);
        let first = true;
        let text = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          if (first) {
            ttfb.push(performance.now() - started);
            first = false;
          }
          text += Buffer.from(value).toString();
        }
        if (!text.includes('[DONE]')) throw new Error('stream ended early');
        total.push(performance.now() - started);
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: connections }, loop));
  return { answered: total.length + errors, rps: total.length / seconds, p50: percentile(total, 50), p99: percentile(total, 99), errors, ttfbP50: percentile(ttfb, 50), ttfbP99: percentile(ttfb, 99) };
}

function spread(values: number[]): string {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  return `${mean.toFixed(0).padStart(6)} (${lo.toFixed(0)}–${hi.toFixed(0)})`;
}

function mean(values: number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

function report(title: string, peer: Figures[], ours: Figures[]): void {
  const line = (name: string, f: Figures[]) =>
    `  ${name.padEnd(10)} req/s ${spread(f.map((x) => x.rps))}   p50 ${spread(f.map((x) => x.p50))} ms   p99 ${spread(f.map((x) => x.p99))} ms   errors ${f.reduce((n, x) => n + x.errors, 0)}`;
  console.log(`\n${title}`);
  console.log(line('portkey', peer));
  console.log(line('gensvc', ours));
  const ratios = ours.map((o, i) => o.rps / (peer[i]?.rps ?? 1));
  console.log(`  ratio (gensvc / portkey req/s): ${mean(ratios).toFixed(2)} (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}); p99 ${mean(ours.map((o) => o.p99)) < mean(peer.map((p) => p.p99)) ? 'lower' : 'HIGHER'} than the peer's`);
}

function reportStreams(title: string, peer: StreamFigures[], ours: StreamFigures[]): void {
  if (peer.every((p) => p.rps === 0)) {
    // Portkey 1.15.2 on Node 20 answers every streamed completion with its "Something went wrong"
    // (a TypeError "immutable" from appending headers to the upstream's fetch Response); there is
    // no peer figure to compare with, so ours are printed alone.
    console.log(`\n${title}\n  portkey    every streamed request failed (${peer.reduce((n, p) => n + p.errors, 0)} errors): no comparison possible`);
    const f = ours;
    console.log(`  gensvc     req/s ${spread(f.map((x) => x.rps))}   p50 ${spread(f.map((x) => x.p50))} ms   p99 ${spread(f.map((x) => x.p99))} ms   errors ${f.reduce((n, x) => n + x.errors, 0)}`);
    console.log(`  gensvc  time to first byte p50 ${spread(f.map((x) => x.ttfbP50))} ms, p99 ${spread(f.map((x) => x.ttfbP99))} ms`);
    return;
  }
  report(title, peer, ours);
  const ttfb = (f: StreamFigures[]) => `time to first byte p50 ${spread(f.map((x) => x.ttfbP50))} ms, p99 ${spread(f.map((x) => x.ttfbP99))} ms`;
  console.log(`  portkey ${ttfb(peer)}`);
  console.log(`  gensvc  ${ttfb(ours)}`);
}

async function comparePipelines(label: string, peer: Target, ours: Target): Promise<void> {
  // Warm both up: connections, JIT, statement caches.
  await plainLoad({ ...peer }).catch(() => undefined);
  await plainLoad({ ...ours }).catch(() => undefined);
  const plain: { peer: Figures[]; ours: Figures[] } = { peer: [], ours: [] };
  const billedBefore = await transactions(ours);
  const streams: { peer: StreamFigures[]; ours: StreamFigures[] } = { peer: [], ours: [] };
  for (let round = 0; round < rounds; round++) {
    plain.peer.push(await plainLoad(peer));
    plain.ours.push(await plainLoad(ours));
    if (!parts.has('streamed')) continue;
    streams.peer.push(await streamLoad(peer));
    streams.ours.push(await streamLoad(ours));
  }
  report(`${label}: billed chat completion, ${connections} connections, ${seconds} s × ${rounds} rounds`, plain.peer, plain.ours);
  if (parts.has('streamed')) reportStreams(`${label}: the same, streamed`, streams.peer, streams.ours);
  // Every answered request of ours is a billed generation: one ledger row each.
  const billed = (await transactions(ours)) - billedBefore;
  const answered = [...plain.ours, ...streams.ours].reduce((n, f) => n + f.answered, 0);
  // autocannon ends each round (and the warm-up, whose last requests are billed after the count
  // began) with up to `connections` requests in flight: ours finish and bill them, it does not
  // count them. Fewer rows than answers would be a bug.
  const inFlight = connections * (rounds + 1);
  const verdict = billed < answered ? 'FEWER THAN ANSWERED: a bug' : billed - answered <= inFlight ? `the difference is within the ${inFlight} left in flight at the ends of the rounds` : `MORE than the ${inFlight} left in flight: look`;
  console.log(`  gensvc billed ${billed} generations (ledger rows) for ${answered} requests answered: ${verdict}`);
}

/** 1,000 streams open at once through one web process: its RSS while they are held, and every one billed. */
async function thousandStreams(ours: Target, web: RoleProcess, env: Record<string, string>): Promise<void> {
  const before = await transactions(ours);
  let peakMb = 0;
  const sampler = setInterval(() => {
    peakMb = Math.max(peakMb, rssMb(web.pid));
  }, 100);
  const results = await Promise.all(
    Array.from({ length: 1000 }, async () => {
      const res = await fetch(`${ours.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...ours.headers },
        body: JSON.stringify({ ...body, stream: true }),
      });
      const text = await res.text();
      return res.ok && text.includes('[DONE]');
    }),
  );
  clearInterval(sampler);
  const after = await transactions(ours);
  void env;
  console.log(`\n1,000 concurrent streams through one web process (upstream chunks every ${process.env.MOCK_CHUNK_DELAY_MS ?? 'n/a'} ms)`);
  console.log(`  completed ${results.filter(Boolean).length}/1000, billed ${after - before} (ledger rows), web process peak RSS ${peakMb.toFixed(0)} MB (target < 300)`);
}

async function transactions(target: Target): Promise<number> {
  const res = await fetch(`${target.url}/api/v2/user/transactions?limit=1`, { headers: target.headers });
  return ((await res.json()) as { total: number }).total;
}

/** `node dist/main.js` on a fresh data directory: seconds until /health answers, then its RSS idle. */
async function coldStart(upstream: string): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gensvc-bench-cold-'));
  const port = await freePort();
  const started = performance.now();
  const app = spawnRole('npm start', distEntry('main.js'), { DATA_DIR: dataDir, PORT: String(port), OPENAI_BASE_URL: `${upstream}/v1`, LOG_LEVEL: 'warn' });
  try {
    await waitForHttp(`http://127.0.0.1:${port}/health`, 60_000);
    const coldMs = performance.now() - started;
    await new Promise((resolve) => setTimeout(resolve, 5000));
    console.log(`\nnpm start (node dist/main.js, embedded, fresh DATA_DIR): cold start ${(coldMs / 1000).toFixed(2)} s (target < 2), idle RSS after 5 s ${rssMb(app.pid).toFixed(0)} MB (target < 200)`);
  } finally {
    await app.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

const loadAverage = (): string => os.loadavg().map((n) => n.toFixed(2)).join(' ');

async function main(): Promise<void> {
  console.log(`load average at the start (1, 5, 15 min): ${loadAverage()} on ${os.availableParallelism()} CPUs`);
  const upstream = spawnRole('mock upstream', path.join(repoRoot, 'bench', 'mock-upstream.ts'), {}, [], { typescript: true });
  const upstreamPort = Number((await upstream.line(/mock-upstream (\d+)/))[1]);
  const upstreamUrl = `http://127.0.0.1:${upstreamPort}`;
  const portkeyPort = await freePort();
  const portkey = spawnRole('portkey', path.join(repoRoot, 'node_modules', '@portkey-ai', 'gateway', 'build', 'start-server.js'), { NODE_ENV: 'production' }, [`--port=${portkeyPort}`, '--headless']);
  const stopping: RoleProcess[] = [upstream, portkey];
  try {
    await portkey.line(/Ready for connections/);
    const peer: Target = {
      name: 'portkey',
      url: `http://127.0.0.1:${portkeyPort}`,
      headers: { authorization: 'Bearer sk-bench', 'x-portkey-provider': 'openai', 'x-portkey-custom-host': `${upstreamUrl}/v1` },
      model: 'gpt-4o-mini',
    };
    const common = { OPENAI_BASE_URL: `${upstreamUrl}/v1`, OPENAI_API_KEY: 'sk-bench', OPENAI_MAX_CONCURRENCY: '2000', LOG_LEVEL: 'warn' };

    // The embedded default: every role in one process.
    if (parts.has('embedded')) await embeddedComparison(peer, common, stopping);

    const databaseServer = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
    const redisUrl = process.env.BENCH_REDIS_URL ?? process.env.TEST_REDIS_URL;
    if (parts.has('mysql') && databaseServer && redisUrl) {
      // Each web process's worker count in turn (BENCH_WEB_CONCURRENCY=1,2), else WEB_CONCURRENCY's default.
      for (const webConcurrency of (process.env.BENCH_WEB_CONCURRENCY ?? '').split(',').map((v) => v.trim())) {
        await mysqlComparison(peer, common, databaseServer, redisUrl, webConcurrency || undefined, stopping);
      }
    } else if (parts.has('mysql')) {
      console.log('\n(set BENCH_DATABASE_URL and BENCH_REDIS_URL, or the TEST_ ones, to measure MySQL + Redis too)');
    }
    if (parts.has('streams')) await heldStreams(common, stopping);
    if (parts.has('cold')) await coldStart(upstreamUrl);
    console.log(`\nload average at the end (1, 5, 15 min): ${loadAverage()}`);
  } finally {
    await Promise.all(stopping.map((p) => p.stop()));
  }
}

type Common = Record<string, string>;

async function embeddedComparison(peer: Target, common: Common, stopping: RoleProcess[]): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gensvc-bench-peer-'));
  const port = await freePort();
  const embeddedEnv = { ...common, DATA_DIR: dataDir, PORT: String(port) };
  const embedded = spawnRole('gensvc embedded', distEntry('main.js'), embeddedEnv);
  stopping.push(embedded);
  await waitForHttp(`http://127.0.0.1:${port}/health`, 60_000);
  const url = `http://127.0.0.1:${port}`;
  const ours: Target = { name: 'gensvc', url, headers: { authorization: `Bearer ${await eliteKey(url, embeddedEnv)}` }, model: 'chat-fast' };
  await comparePipelines('embedded default', peer, ours);
  await embedded.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}

/** The Procfile's shape: release, then a web process (of `webConcurrency` workers) and a worker process. */
async function mysqlComparison(peer: Target, common: Common, databaseServer: string, redisUrl: string, webConcurrency: string | undefined, stopping: RoleProcess[]): Promise<void> {
  const databaseUrl = await createMysqlDatabase(databaseServer, 'gensvc_bench');
  const webPort = await freePort();
  const splitEnv = { ...common, DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, REDIS_KEY_PREFIX: `bench-${crypto.randomBytes(3).toString('hex')}`, JWT_SECRET: crypto.randomBytes(32).toString('hex'), DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'gensvc-bench-split-')) };
  try {
    if ((await spawnRole('release', distEntry('cli/migrate.js'), splitEnv).exited) !== 0) throw new Error('release failed');
    const web = spawnRole('web', distEntry('api/main.js'), { ...splitEnv, PORT: String(webPort), ...(webConcurrency ? { WEB_CONCURRENCY: webConcurrency } : {}) });
    const worker = spawnRole('worker', distEntry('worker/main.js'), splitEnv);
    stopping.push(web, worker);
    await waitForHttp(`http://127.0.0.1:${webPort}/health`, 60_000);
    const webUrl = `http://127.0.0.1:${webPort}`;
    const split: Target = { name: 'gensvc', url: webUrl, headers: { authorization: `Bearer ${await eliteKey(webUrl, splitEnv)}` }, model: 'chat-fast' };
    // Unset: the web role's own default (config: one per CPU, one fewer with the database on this machine).
    const workers = webConcurrency ?? String(loadConfig({ ...splitEnv, PORT: String(webPort) }).webConcurrency);
    await comparePipelines(`MySQL + Redis (web ×${workers}${webConcurrency ? '' : ', WEB_CONCURRENCY unset'} + worker processes)`, peer, split);
    await Promise.all([web.stop(), worker.stop()]);
  } finally {
    await dropMysqlDatabase(databaseUrl);
  }
}

/** 1,000 streams held open: the upstream spaces its chunks so they are all open at once. */
async function heldStreams(common: Common, stopping: RoleProcess[]): Promise<void> {
  const slow = spawnRole('slow mock upstream', path.join(repoRoot, 'bench', 'mock-upstream.ts'), { MOCK_CHUNK_DELAY_MS: '1500' }, [], { typescript: true });
  stopping.push(slow);
  const slowUrl = `http://127.0.0.1:${Number((await slow.line(/mock-upstream (\d+)/))[1])}`;
  const streamDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gensvc-bench-streams-'));
  const streamPort = await freePort();
  const streamEnv = { ...common, OPENAI_BASE_URL: `${slowUrl}/v1`, DATA_DIR: streamDir, PORT: String(streamPort) };
  process.env.MOCK_CHUNK_DELAY_MS = '1500';
  const streamer = spawnRole('gensvc embedded (streams)', distEntry('main.js'), streamEnv);
  stopping.push(streamer);
  await waitForHttp(`http://127.0.0.1:${streamPort}/health`, 60_000);
  const streamUrl = `http://127.0.0.1:${streamPort}`;
  await thousandStreams({ name: 'gensvc', url: streamUrl, headers: { authorization: `Bearer ${await eliteKey(streamUrl, streamEnv)}` }, model: 'chat-fast' }, streamer, streamEnv);
  await streamer.stop();
  await slow.stop();
  fs.rmSync(streamDir, { recursive: true, force: true });
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
