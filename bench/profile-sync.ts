/**
 * Profiling aid (not part of `npm run bench`): only the billed sync load on the stores given by
 * BENCH_DATABASE_URL/BENCH_REDIS_URL (embedded without them), for `node --cpu-prof`.
 */
import http from 'node:http';
import path from 'node:path';
import autocannon from 'autocannon';
import { createApp } from '../api/app';
import { loadConfig } from '../shared/config';
import { buildContainer } from '../shared/container';
import { FakeProvider } from '../test/helpers/fake-provider';
import { freshStores } from '../test/helpers/stores';
import { migrations } from '../migrations';

async function main(): Promise<void> {
  const env: Record<string, string> = {};
  if (process.env.BENCH_DATABASE_URL) env.DATABASE_URL = process.env.BENCH_DATABASE_URL;
  if (process.env.BENCH_REDIS_URL) env.REDIS_URL = process.env.BENCH_REDIS_URL;
  const stores = await freshStores(env.DATABASE_URL ? 'mysql-redis' : 'embedded', env);
  const config = loadConfig({ ...stores.env, CATALOG_PATH: path.join(__dirname, '..', 'test', 'fixtures', 'catalog.json'), LOG_LEVEL: 'error' });
  const container = await buildContainer(config, { migrate: migrations, providers: [new FakeProvider('fake').adapter()], processesJobs: false });
  const server = http.createServer(createApp(container).callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  const user = await container.db.transaction((em) =>
    container.users.create(em, { name: 'bench', email: `bench-${Date.now()}@example.test`, plan: 'elite', identity: { kind: 'email', subject: `bench-${Date.now()}` } }),
  );
  await container.users.grantTokens(user.id, 100_000_000);
  const { secret } = await container.apiKeys.create(user.id, 'bench');
  const result = await autocannon({
    url: `http://127.0.0.1:${address.port}/api/v2/generate`,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
    body: JSON.stringify({ model: 'fake-text', prompt: 'hi' }),
    connections: Number(process.env.BENCH_CONNECTIONS ?? 50),
    duration: Number(process.env.BENCH_SECONDS ?? 8),
    workers: 1,
  });
  console.log(`sync ${result.requests.average}/s p50 ${result.latency.p50} p99 ${result.latency.p99} non2xx ${result.non2xx}`);
  server.close();
  await container.close();
  await stores.cleanup();
}

void main().then(() => process.exit(0));
