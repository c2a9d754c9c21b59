/**
 * `node -r @swc-node/register bench/ab.ts`: two web processes of the Procfile's shape side by side
 * on one MySQL database (and a worker), the billed chat-completion load of `npm run bench:peer`
 * on each in alternating rounds, so that a change is measured against its before in the same
 * conditions on a machine whose speed swings by ±30 %. AB_A_DIST / AB_B_DIST: the builds (an
 * earlier commit's dist/; default this one's); AB_A / AB_B: extra environment as JSON;
 * AB_ROUNDS (4), BENCH_SECONDS (8), BENCH_CONNECTIONS (20); BENCH_DATABASE_URL and
 * BENCH_REDIS_URL required. Prints each round and the mean ratio B/A.
 */
import autocannon from 'autocannon';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createMysqlDatabase, dropMysqlDatabase } from '../shared/db/mysql-admin';
import { apiKeyOf, createEliteAccount, distEntry, freePort, RoleProcess, spawnRole, waitForHttp } from './processes';

const repoRoot = path.join(__dirname, '..');

async function main(): Promise<void> {
  const upstream = spawnRole('mock upstream', path.join(repoRoot, 'bench', 'mock-upstream.ts'), {}, [], { typescript: true });
  const upstreamUrl = `http://127.0.0.1:${Number((await upstream.line(/mock-upstream (\d+)/))[1])}`;
  const databaseUrl = await createMysqlDatabase(process.env.BENCH_DATABASE_URL as string, 'gensvc_ab');
  const env: Record<string, string> = { OPENAI_BASE_URL: `${upstreamUrl}/v1`, OPENAI_API_KEY: 'sk-bench', OPENAI_MAX_CONCURRENCY: '2000', LOG_LEVEL: 'warn', DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'ab-')), DATABASE_URL: databaseUrl, REDIS_URL: process.env.BENCH_REDIS_URL as string, REDIS_KEY_PREFIX: `ab-${crypto.randomBytes(3).toString('hex')}`, JWT_SECRET: crypto.randomBytes(32).toString('hex'), WEB_CONCURRENCY: '1' };
  const procs: RoleProcess[] = [upstream];
  try {
    if ((await spawnRole('release', distEntry('cli/migrate.js'), env).exited) !== 0) throw new Error('release failed');
    const variants: Array<{ name: string; url: string; key: string }> = [];
    procs.push(spawnRole('worker', distEntry('worker/main.js'), env));
    for (const [name, extra] of [['A', process.env.AB_A ?? '{}'], ['B', process.env.AB_B ?? '{}']] as const) {
      const port = await freePort();
      const web = spawnRole(`web ${name}`, process.env[`AB_${name}_DIST`] ? path.join(process.env[`AB_${name}_DIST`] as string, 'api/main.js') : distEntry('api/main.js'), { ...env, PORT: String(port), ...(JSON.parse(extra) as Record<string, string>) });
      procs.push(web);
      const url = `http://127.0.0.1:${port}`;
      await waitForHttp(`${url}/health`, 60_000);
      variants.push({ name, url, key: '' });
    }
    const account = await createEliteAccount(env);
    for (const v of variants) v.key = await apiKeyOf(v.url, account);
    const load = (v: { url: string; key: string }, duration: number) => autocannon({ url: `${v.url}/v1/chat/completions`, method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${v.key}` }, body: JSON.stringify({ model: 'chat-fast', messages: [{ role: 'user', content: 'Say hello' }] }), connections: Number(process.env.BENCH_CONNECTIONS ?? 20), duration, workers: 1 });
    for (const v of variants) await load(v, 3);
    const rounds = Number(process.env.AB_ROUNDS ?? 4);
    const totals: Record<string, number[]> = { A: [], B: [] };
    for (let r = 0; r < rounds; r++) {
      for (const v of r % 2 === 0 ? variants : [...variants].reverse()) {
        const res = await load(v, Number(process.env.BENCH_SECONDS ?? 8));
        totals[v.name]?.push(res.requests.average);
        console.log(`round ${r} ${v.name}: ${res.requests.average.toFixed(0)} req/s p50 ${res.latency.p50} p99 ${res.latency.p99} errors ${res.non2xx + res.errors}`);
      }
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    console.log(`A ${mean(totals.A ?? []).toFixed(0)}  B ${mean(totals.B ?? []).toFixed(0)}  B/A ${(mean(totals.B ?? []) / mean(totals.A ?? [])).toFixed(2)}`);
  } finally {
    for (const p of procs.reverse()) await p.stop();
    await dropMysqlDatabase(databaseUrl);
  }
}
main().then(() => process.exit(0), (e: unknown) => { console.error(e); process.exit(1); });
