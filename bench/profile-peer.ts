/**
 * `node -r @swc-node/register bench/profile-peer.ts`: the load of `npm run bench:peer` (billed
 * chat completions through the OpenAI-compatible adapter to the mock upstream, an elite API key)
 * on one embedded gensvc run under `node --cpu-prof`, then a summary of where its CPU went: self
 * time by function and by area (our code, each dependency, node internals, GC, idle). Needs
 * `npm run build`. PROFILE_SECONDS (12), BENCH_CONNECTIONS (20); PROFILE_DIR keeps the profile;
 * BENCH_DIST profiles another build (an earlier commit's dist/, to compare). With
 * BENCH_DATABASE_URL and BENCH_REDIS_URL it profiles the `web` process of the Procfile's shape
 * instead (release, then web with WEB_CONCURRENCY=1 under the profiler, and a worker process).
 */
import autocannon from 'autocannon';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createMysqlDatabase, dropMysqlDatabase } from '../shared/db/mysql-admin';
import { distEntry, eliteKey, freePort, RoleProcess, spawnRole, waitForHttp } from './processes';

const seconds = Number(process.env.PROFILE_SECONDS ?? 12);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 20);
const repoRoot = path.join(__dirname, '..');

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Now on the monotonic clock V8's profiler stamps samples with (µs). */
const monotonicMicros = (): number => Number(process.hrtime.bigint() / 1000n);

/** Which area a frame's time belongs to: a dependency by package name, our code by top folder. */
function areaOf(url: string, functionName: string): string {
  if (functionName === '(garbage collector)') return 'GC';
  if (functionName === '(idle)') return 'idle';
  if (functionName === '(program)') return 'program (native, unattributed)';
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (modules) return modules[1] as string;
  if (url.startsWith('node:internal/deps/')) return `node:internal/deps/${url.split('/')[3] ?? ''}`;
  if (url.startsWith('node:internal/')) return `node:internal/${url.split('/')[1] ?? ''}`;
  if (url.startsWith('node:')) return url;
  const ours = /\/dist\/([^/]+)\//.exec(url);
  if (ours) return `gensvc ${ours[1]}/`;
  return url === '' ? `native ${functionName}` : url;
}

/** Self time by node, of the samples taken while the load ran (boot and shutdown left out). */
function summarize(profile: CpuProfile, window: { from: number; to: number }): void {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (at >= window.from && at <= window.to) self.set(id, (self.get(id) ?? 0) + delta);
  });
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const idle = [...self.entries()].filter(([id]) => byId.get(id)?.callFrame.functionName === '(idle)').reduce((a, [, t]) => a + t, 0);
  const busy = total - idle;
  const areas = new Map<string, number>();
  const functions = new Map<string, number>();
  for (const [id, time] of self) {
    const frame = byId.get(id)?.callFrame;
    if (!frame || frame.functionName === '(idle)') continue;
    const area = areaOf(frame.url, frame.functionName);
    areas.set(area, (areas.get(area) ?? 0) + time);
    const name = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*node_modules\//, '').replace(/^.*\/dist\//, 'dist/')}:${frame.lineNumber + 1}`;
    functions.set(name, (functions.get(name) ?? 0) + time);
  }
  const pct = (t: number) => `${((100 * t) / busy).toFixed(1).padStart(5)} %`;
  console.log(`\nbusy ${(busy / 1e6).toFixed(1)} s of ${(total / 1e6).toFixed(1)} s profiled; self time by area (of busy):`);
  for (const [area, time] of [...areas].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${pct(time)}  ${area}`);
  console.log('\ntop functions by self time:');
  for (const [name, time] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`  ${pct(time)}  ${name}`);
}

async function main(): Promise<void> {
  const upstream = spawnRole('mock upstream', path.join(repoRoot, 'bench', 'mock-upstream.ts'), {}, [], { typescript: true });
  const upstreamUrl = `http://127.0.0.1:${Number((await upstream.line(/mock-upstream (\d+)/))[1])}`;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gensvc-profile-'));
  const profileDir = process.env.PROFILE_DIR ?? fs.mkdtempSync(path.join(os.tmpdir(), 'gensvc-cpuprof-'));
  const port = await freePort();
  const window = { from: 0, to: 0 };
  const env: Record<string, string> = { OPENAI_BASE_URL: `${upstreamUrl}/v1`, OPENAI_API_KEY: 'sk-bench', OPENAI_MAX_CONCURRENCY: '2000', LOG_LEVEL: 'warn', DATA_DIR: dataDir, PORT: String(port) };
  const profiler = { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] };
  const databaseServer = process.env.BENCH_DATABASE_URL;
  const redisUrl = process.env.BENCH_REDIS_URL;
  const databaseUrl = databaseServer && redisUrl ? await createMysqlDatabase(databaseServer, 'gensvc_profile') : null;
  const processes: RoleProcess[] = [];
  if (databaseUrl && redisUrl) {
    Object.assign(env, { DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, REDIS_KEY_PREFIX: `profile-${crypto.randomBytes(3).toString('hex')}`, JWT_SECRET: crypto.randomBytes(32).toString('hex') });
    if ((await spawnRole('release', distEntry('cli/migrate.js'), env).exited) !== 0) throw new Error('release failed');
    processes.push(spawnRole('web', distEntry('api/main.js'), { ...env, WEB_CONCURRENCY: '1' }, [], profiler), spawnRole('worker', distEntry('worker/main.js'), env));
  } else {
    processes.push(spawnRole('gensvc', distEntry('main.js'), env, [], profiler));
  }
  try {
    const url = `http://127.0.0.1:${port}`;
    await waitForHttp(`${url}/health`, 60_000);
    const key = await eliteKey(url, env);
    window.from = monotonicMicros();
    const result = await autocannon({
      url: `${url}/v1/chat/completions`,
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: 'chat-fast', messages: [{ role: 'user', content: 'Say hello' }] }),
      connections,
      duration: seconds,
      workers: 1,
    });
    window.to = monotonicMicros();
    console.log(`load: ${result.requests.average.toFixed(0)} req/s, p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, non-2xx ${result.non2xx}`);
  } finally {
    for (const role of processes) await role.stop();
    await upstream.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
    if (databaseUrl) await dropMysqlDatabase(databaseUrl);
  }
  const file = fs.readdirSync(profileDir).filter((f) => f.endsWith('.cpuprofile')).map((f) => path.join(profileDir, f))[0];
  if (!file) throw new Error(`no profile written in ${profileDir}`);
  summarize(JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile, window);
  console.log(`\nprofile: ${file}`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
