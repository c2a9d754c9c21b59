/**
 * Redis going away and coming back, on a Redis server this file owns (the queue and the limits
 * live there): every queue recovers by itself after its script cache is flushed or the server
 * restarts, reads keep answering during the outage, generation requests are refused with 503 and
 * nothing held, and everything works again shortly after Redis returns. Runs in the mysql+redis
 * project (the embedded stores have no Redis to lose).
 */
import path from 'node:path';
import { Generation } from '../shared/db/entities';
import { BeeQueueBackend } from '../shared/queue/bee';
import type { JobName, JobTable } from '../shared/queue/types';
import { createLogger } from '../shared/log';
import { startTestApp, TestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { OwnRedis, redisServerAvailable } from './helpers/own-redis';
import { storeKind } from './helpers/stores';
import { registerUser, TestUser } from './helpers/users';

const run = storeKind() === 'mysql-redis' && redisServerAvailable() ? describe : describe.skip;

async function eventually<T>(probe: () => Promise<T | null | undefined | false>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => null);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

run('the job queue on a Redis that flushes its scripts or restarts', () => {
  let redis: OwnRedis;
  let worker: BeeQueueBackend;
  let producer: BeeQueueBackend;
  const ran: number[] = [];

  beforeAll(async () => {
    redis = await OwnRedis.start();
    const log = createLogger('silent');
    worker = new BeeQueueBackend(redis.url, 'recovery', log, true);
    producer = new BeeQueueBackend(redis.url, 'recovery', log, false);
    const idle = { retries: 0, backoffMs: 100, timeoutMs: 10_000, concurrency: 1, perform: async () => undefined };
    const names: JobName[] = ['generation.run', 'webhook.deliver', 'schedule.run', 'maintenance.run', 'bot.chat', 'bot.deliver', 'bot.inline'];
    const table = Object.fromEntries(names.map((name) => [name, idle])) as unknown as JobTable;
    table['generation.run'] = { ...idle, perform: async (payload) => void ran.push(payload.generationId) };
    worker.startProcessing(table);
    await producer.enqueue('generation.run', { generationId: 1 });
    await eventually(async () => ran.includes(1), 10_000);
  });

  afterAll(async () => {
    await Promise.all([worker?.close(), producer?.close()]);
    await redis?.kill();
  });

  it('keeps queueing and running jobs after the script cache is flushed', async () => {
    expect(await redis.command('SCRIPT', 'FLUSH')).toBe('OK');
    await producer.enqueue('generation.run', { generationId: 2 });
    await eventually(async () => ran.includes(2), 5_000);
    // Delayed jobs are raised by another script, on the worker's side.
    await redis.command('SCRIPT', 'FLUSH');
    await producer.enqueue('generation.run', { generationId: 3 }, { delayMs: 300 });
    await eventually(async () => ran.includes(3), 5_000);
  });

  it('keeps queueing and running jobs after Redis restarts empty', async () => {
    await redis.restart(500);
    // The first enqueue may meet the reconnection; within seconds it goes through.
    await eventually(async () => producer.enqueue('generation.run', { generationId: 4 }).then(() => true), 10_000);
    await eventually(async () => ran.includes(4), 10_000);
    await producer.enqueue('generation.run', { generationId: 5 }, { delayMs: 300 });
    await eventually(async () => ran.includes(5), 10_000);
  });
});

run('the service while its Redis is away', () => {
  const fake = new FakeProvider('fake');
  let redis: OwnRedis;
  let app: TestApp;
  let user: TestUser;
  const auth = (): [string, string] => ['authorization', `Bearer ${user.accessToken}`];
  const balance = async () => (await app.http().get('/api/v2/user/balance').set(...auth())).body as { token_balance: number; held_tokens: number };

  beforeAll(async () => {
    redis = await OwnRedis.start();
    app = await startTestApp({ CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json'), REDIS_URL: redis.url }, { providers: [fake.adapter()], worker: true });
    user = await registerUser(app);
  });

  afterAll(async () => {
    await app?.close();
    await redis?.kill();
  });

  async function asyncGenerationCompletes(): Promise<void> {
    const res = await app.http().post('/api/v2/generate').set(...auth()).send({ model: 'fake-art', prompt: 'a lighthouse' });
    expect(res.status).toBe(200);
    await eventually(async () => (await app.http().get(`/api/v2/generate/${res.body.id}`).set(...auth())).body.status === 'completed', 10_000);
  }

  it('runs asynchronous generations again after a script flush, with no restart', async () => {
    await asyncGenerationCompletes();
    await redis.command('SCRIPT', 'FLUSH');
    await asyncGenerationCompletes();
  });

  it('answers reads without the limit headers, refuses generations with 503 holding nothing, and recovers after Redis returns', async () => {
    const before = await balance();
    await redis.kill();
    for (const path of ['/api/v2/user/me', '/api/v2/user/balance', '/api/v2/models', '/api/v2/user/history', '/api/v2/user/transactions']) {
      const res = await app.http().get(path).set(...auth());
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      expect(res.headers).not.toHaveProperty('x-ratelimit-limit-hour');
    }
    const refused = await app.http().post('/api/v2/generate').set(...auth()).send({ model: 'fake-text', prompt: 'while Redis is down' });
    expect(refused.status).toBe(503);
    expect(refused.body.code).toBe('service_unavailable');
    expect(await balance()).toMatchObject({ token_balance: before.token_balance, held_tokens: 0 });
    expect(await app.container.db.repo(Generation).countBy({ userId: user.id, prompt: 'while Redis is down' })).toBe(0);

    await redis.restart();
    const back = Date.now();
    await eventually(async () => (await app.http().post('/api/v2/generate').set(...auth()).send({ model: 'fake-text', prompt: 'back' })).status === 200, 10_000);
    expect(Date.now() - back).toBeLessThan(10_000);
    const me = await app.http().get('/api/v2/user/me').set(...auth());
    expect(me.headers['x-ratelimit-limit-hour']).toBe('5');
    await asyncGenerationCompletes();
  });
});
