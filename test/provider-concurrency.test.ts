/**
 * Per-provider concurrency caps: the slot pools themselves (per process, and global through
 * Redis with leases that outlive no crashed holder), and through the worker: a capped provider
 * never has more calls in flight than its cap, and its backlog does not starve other providers.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Redis from 'ioredis';
import { loadConfig, DEFAULT_UPSTREAM_CONCURRENCY } from '../shared/config';
import { LocalProviderSlots, RedisProviderSlots } from '../shared/providers/concurrency';
import { BUSY_TOO_LONG } from '../shared/generation/provider-calls';
import { Generation } from '../shared/db/entities';
import { useTestApp } from './helpers/app';
import { countingImageCalls, FakeProvider } from './helpers/fake-provider';
import { TestUser, userOnPlan } from './helpers/users';

describe('configuration', () => {
  it('caps every enabled upstream by default, and <NAME>_MAX_CONCURRENCY sets any provider\'s cap', () => {
    const config = loadConfig({ OPENAI_API_KEY: 'sk-x', REPLICATE_MAX_CONCURRENCY: '3', LOCAL_MAX_CONCURRENCY: '2' });
    expect(config.providerConcurrency).toEqual({ openai: DEFAULT_UPSTREAM_CONCURRENCY, replicate: 3, local: 2 });
    expect(() => loadConfig({ OPENAI_MAX_CONCURRENCY: '0' })).toThrow(/OPENAI_MAX_CONCURRENCY: must be a positive integer/);
  });
});

describe('slots in one process', () => {
  it('gives at most the cap at once, hands a released slot to the first waiter, and leaves uncapped providers alone', async () => {
    const slots = new LocalProviderSlots({ capped: 2 });
    const first = await slots.acquire('capped', 0);
    const second = await slots.acquire('capped', 0);
    expect(first).not.toBeNull();
    expect(second).not.toBeNull();
    expect(await slots.acquire('capped', 0)).toBeNull();
    expect(await slots.acquire('capped', 30)).toBeNull();
    const waiting = slots.acquire('capped', 5_000);
    await first?.();
    await first?.(); // a second release gives nothing back twice
    const third = await waiting;
    expect(third).not.toBeNull();
    expect(await slots.inUse('capped')).toBe(2);
    expect(await slots.acquire('capped', 0)).toBeNull();
    await second?.();
    await third?.();
    expect(await slots.inUse('capped')).toBe(0);
    expect(await slots.acquire('free-for-all', 0)).not.toBeNull();
  });

  it('stops waiting when the call is aborted', async () => {
    const slots = new LocalProviderSlots({ capped: 1 });
    const held = await slots.acquire('capped', 0);
    const controller = new AbortController();
    const waiting = slots.acquire('capped', 60_000, controller.signal);
    controller.abort();
    expect(await waiting).toBeNull();
    await held?.();
    // The aborted waiter took nothing: the slot is free.
    expect(await slots.acquire('capped', 0)).not.toBeNull();
  });
});

const redisUrl = process.env.TEST_REDIS_URL;
(redisUrl ? describe : describe.skip)('slots across processes (Redis)', () => {
  const clients: Redis[] = [];
  const prefix = `gensvc-test-slots-${process.pid}-${Date.now()}`;
  function client(): Redis {
    const redis = new Redis(redisUrl as string, { maxRetriesPerRequest: 1 });
    clients.push(redis);
    return redis;
  }
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
  });

  it('holds the cap across two processes sharing Redis', async () => {
    const a = new RedisProviderSlots(client(), prefix, { upstream: 1 });
    const b = new RedisProviderSlots(client(), prefix, { upstream: 1 });
    const held = await a.acquire('upstream', 0);
    expect(held).not.toBeNull();
    expect(await b.acquire('upstream', 250)).toBeNull();
    const waiting = b.acquire('upstream', 5_000);
    await held?.();
    const next = await waiting;
    expect(next).not.toBeNull();
    expect(await a.inUse('upstream')).toBe(1);
    await next?.();
    expect(await a.inUse('upstream')).toBe(0);
  });

  it('keeps a renewed lease past twice its length: a long call holds its slot to the end', async () => {
    const a = new RedisProviderSlots(client(), prefix, { long: 1 }, 300);
    const b = new RedisProviderSlots(client(), prefix, { long: 1 }, 300);
    const held = await a.acquire('long', 0);
    expect(held).not.toBeNull();
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await b.acquire('long', 0)).toBeNull();
    expect(await b.inUse('long')).toBe(1);
    await held?.();
  });

  it('frees the slot of a holder that died once its lease runs out', async () => {
    const dying = client();
    const a = new RedisProviderSlots(dying, prefix, { crashy: 1 }, 600);
    const b = new RedisProviderSlots(client(), prefix, { crashy: 1 }, 600);
    expect(await a.acquire('crashy', 0)).not.toBeNull();
    dying.disconnect(); // no release and no renewal from now on
    expect(await b.acquire('crashy', 100)).toBeNull();
    expect(await b.acquire('crashy', 3_000)).not.toBeNull();
  });
});

describe('through the worker', () => {
  // The fixture catalog plus one asynchronous image model of another provider.
  const fixture = JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures/catalog.json'), 'utf8')) as { models: Array<Record<string, unknown>> };
  const art = fixture.models.find((m) => m.slug === 'fake-art') as Record<string, unknown>;
  const catalogDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gensvc-caps-'));
  const catalogPath = path.join(catalogDir, 'catalog.json');
  fs.writeFileSync(catalogPath, JSON.stringify({ ...fixture, models: [...fixture.models, { ...art, slug: 'other-art', name: 'Other art', provider: 'other' }] }));
  afterAll(() => fs.rmSync(catalogDir, { recursive: true, force: true }));

  const fake = new FakeProvider('fake');
  const other = new FakeProvider('other');
  const { adapter: counted, flight } = countingImageCalls(fake);
  // Four generation jobs at once per worker, so four slow calls would fill them all without the cap.
  const t = useTestApp({ CATALOG_PATH: catalogPath, FAKE_MAX_CONCURRENCY: '1', GENERATION_JOB_CONCURRENCY: '4' }, { providers: [counted, other.adapter()], worker: true });

  beforeEach(() => {
    fake.reset();
    other.reset();
    flight.max = 0;
  });

  async function start(user: TestUser, model: string): Promise<string> {
    const res = await t.app.http().post('/api/v2/generate').set('authorization', `Bearer ${user.accessToken}`).send({ model, prompt: 'a lighthouse' });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('pending');
    return res.body.id as string;
  }

  async function statusOf(user: TestUser, id: string): Promise<{ status: string; tokens_spent: number; error?: string }> {
    const res = await t.app.http().get(`/api/v2/generate/${id}`).set('authorization', `Bearer ${user.accessToken}`);
    return res.body as { status: string; tokens_spent: number; error?: string };
  }

  async function until(user: TestUser, id: string, timeoutMs: number): Promise<{ status: string; tokens_spent: number; error?: string }> {
    const started = Date.now();
    for (;;) {
      const body = await statusOf(user, id);
      if (body.status !== 'pending' || Date.now() - started > timeoutMs) return body;
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  it('never runs more calls of a capped provider at once than its cap, and charges each once', async () => {
    const user = await userOnPlan(t.app, 'elite');
    fake.next({ kind: 'succeed', delayMs: 250 }, { kind: 'succeed', delayMs: 250 }, { kind: 'succeed', delayMs: 250 });
    const before = (await t.app.http().get('/api/v2/user/balance').set('authorization', `Bearer ${user.accessToken}`)).body.token_balance as number;
    const ids = [await start(user, 'fake-art'), await start(user, 'fake-art'), await start(user, 'fake-art')];
    for (const id of ids) expect(await until(user, id, 20_000)).toMatchObject({ status: 'completed', tokens_spent: 6 });
    expect(flight.max).toBe(1);
    expect(fake.calls).toHaveLength(3);
    const after = (await t.app.http().get('/api/v2/user/balance').set('authorization', `Bearer ${user.accessToken}`)).body.token_balance as number;
    expect(before - after).toBe(18);
  });

  it('sends a slow capped provider\'s backlog back to the queue, so another provider\'s job runs meanwhile', async () => {
    const user = await userOnPlan(t.app, 'elite');
    // The first call is slow; four of them would fill every worker slot (concurrency 4) without the cap.
    fake.next({ kind: 'succeed', delayMs: 6_000 });
    const slow = [];
    for (let i = 0; i < 4; i++) slow.push(await start(user, 'fake-art'));
    const quick = await start(user, 'other-art');
    expect(await until(user, quick, 20_000)).toMatchObject({ status: 'completed' });
    // The other provider finished while the capped one's first call was still running.
    expect((await statusOf(user, slow[0] as string)).status).toBe('pending');
    for (const id of slow) expect(await until(user, id, 30_000)).toMatchObject({ status: 'completed', tokens_spent: 6 });
    expect(flight.max).toBe(1);
    expect(fake.calls).toHaveLength(4);
  }, 45_000);

  it('cancelling a running generation stops its provider call and frees its slot for the next', async () => {
    const user = await userOnPlan(t.app, 'elite');
    fake.next({ kind: 'hang' });
    const running = await start(user, 'fake-art');
    for (let i = 0; i < 100 && flight.now === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(flight.now).toBe(1);
    const next = await start(user, 'fake-art');
    const cancelled = await t.app.http().post(`/api/v2/generate/${running}/cancel`).set('authorization', `Bearer ${user.accessToken}`);
    expect(cancelled.body).toMatchObject({ status: 'failed', tokens_spent: 0 });
    // The hanging call was aborted, so the capped provider's one slot went to the next generation.
    expect(await until(user, next, 20_000)).toMatchObject({ status: 'completed', tokens_spent: 6 });
    expect(flight.now).toBe(0);
    expect(await statusOf(user, running)).toMatchObject({ status: 'failed', tokens_spent: 0 });
  }, 30_000);

  it('fails a generation uncharged once it waited too long for its busy provider', async () => {
    const user = await userOnPlan(t.app, 'elite');
    fake.next({ kind: 'hang' });
    const holder = await start(user, 'fake-art');
    for (let i = 0; i < 100 && flight.now === 0; i++) await new Promise((r) => setTimeout(r, 20));
    const waiting = await start(user, 'fake-art');
    // Two hours later (the access token has expired by then: the row is read directly).
    t.app.clock.advance(2 * 3600);
    const id = Number(String(waiting).replace(/^gen_/, ''));
    const repo = t.app.container.db.repo(Generation);
    const started = Date.now();
    while ((await repo.findOneByOrFail({ id })).status === 'pending' && Date.now() - started < 20_000) await new Promise((r) => setTimeout(r, 25));
    expect(await repo.findOneByOrFail({ id })).toMatchObject({ status: 'failed', tokensSpent: 0, error: BUSY_TOO_LONG });
    const holderRow = await repo.findOneByOrFail({ id: Number(String(holder).replace(/^gen_/, '')) });
    await t.app.container.generations.cancel(holderRow.userId, holderRow.id);
  }, 30_000);
});
