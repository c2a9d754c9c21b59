/**
 * Limits (spec 8.1/8.2, decisions.md "Limits"): per-IP limits of the auth endpoints over HTTP,
 * the plan's hourly/daily generation windows on GenerationLimiter directly (memory, or Redis in the
 * mysql+redis project), and the rate-limit headers that reflect them.
 */
import crypto from 'node:crypto';
import Redis from 'ioredis';
import type { Response } from 'supertest';
import { GenerationLimiter } from '../shared/limits';
import type { Plan } from '../shared/plans';
import type { TestApp } from './helpers/app';
import { useTestApp } from './helpers/app';
import { storeKind } from './helpers/stores';
import { registerUser, uniqueEmail, userOnPlan } from './helpers/users';

const CATALOG_PATH = `${__dirname}/fixtures/catalog.json`;

function expectRateLimited(res: Response, maxSeconds: number): number {
  expect(res.status).toBe(429);
  expect(Object.keys(res.body).sort()).toEqual(['code', 'detail', 'retry_after']);
  expect(res.body).toMatchObject({ detail: 'Rate limit exceeded', code: 'rate_limited' });
  const retryAfter: unknown = res.body.retry_after;
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(maxSeconds);
  expect(res.headers['retry-after']).toBe(String(retryAfter));
  return retryAfter as number;
}

function post(app: TestApp, path: string, body: object, forwardedFor?: string) {
  const request = app.http().post(path);
  return (forwardedFor ? request.set('x-forwarded-for', forwardedFor) : request).send(body);
}

const login = (app: TestApp, ip?: string) => post(app, '/api/v2/auth/login', { email: 'nobody@example.test', password: 'wrong password' }, ip);
const register = (app: TestApp, ip?: string) => post(app, '/api/v2/auth/register', { email: uniqueEmail('limit'), password: 'password123' }, ip);
const forgot = (app: TestApp, ip?: string) => post(app, '/api/v2/auth/forgot-password', { email: 'nobody@example.test' }, ip);

describe('auth endpoint limits per IP', () => {
  describe('login', () => {
    const t = useTestApp({ CATALOG_PATH, AUTH_LOGIN_LIMIT_PER_MINUTE: '3' });

    it('refuses the 4th request in a minute with 429, retry_after and Retry-After', async () => {
      for (let i = 0; i < 3; i++) expect((await login(t.app)).status).toBe(401);
      expectRateLimited(await login(t.app), 60);
      // Still refused, whatever the body, and a good password does not get through either.
      const user = await registerUser(t.app);
      const good = await t.app.http().post('/api/v2/auth/login').send({ email: user.email, password: user.password });
      expectRateLimited(good, 60);
      expectRateLimited(await t.app.http().post('/api/v2/auth/login').send({}), 60);
    });

    it('limits only login: registering from the same address still works', async () => {
      expect((await register(t.app)).status).toBe(201);
    });
  });

  describe('register', () => {
    const t = useTestApp({ CATALOG_PATH, AUTH_REGISTER_LIMIT_PER_MINUTE: '2' });

    it('refuses the 3rd registration in a minute', async () => {
      expect((await register(t.app)).status).toBe(201);
      expect((await register(t.app)).status).toBe(201);
      expectRateLimited(await register(t.app), 60);
      // Login has its own (disabled) limit.
      expect((await login(t.app)).status).toBe(401);
    });
  });

  describe('forgot-password', () => {
    const t = useTestApp({ CATALOG_PATH, AUTH_FORGOT_LIMIT_PER_HOUR: '2' });

    it('refuses the 3rd request in an hour, with retry_after up to an hour', async () => {
      expect((await forgot(t.app)).status).toBe(202);
      expect((await forgot(t.app)).status).toBe(202);
      const retryAfter = expectRateLimited(await forgot(t.app), 3600);
      expect(retryAfter).toBeGreaterThan(60);
      expect(t.app.mailbox).toBeDefined();
    });
  });

  describe('with the spec defaults', () => {
    const t = useTestApp({
      CATALOG_PATH,
      AUTH_LOGIN_LIMIT_PER_MINUTE: '10',
      AUTH_REGISTER_LIMIT_PER_MINUTE: '10',
      AUTH_FORGOT_LIMIT_PER_HOUR: '3',
    });

    it('allows 10 logins a minute and refuses the 11th', async () => {
      for (let i = 0; i < 10; i++) expect((await login(t.app)).status).toBe(401);
      expectRateLimited(await login(t.app), 60);
    });

    it('allows 3 password-reset requests an hour and refuses the 4th', async () => {
      for (let i = 0; i < 3; i++) expect((await forgot(t.app)).status).toBe(202);
      expectRateLimited(await forgot(t.app), 3600);
    });

    it('is the default of the configuration', () => {
      expect(t.app.container.config.authLimits).toEqual({ loginPerMinute: 10, registerPerMinute: 10, forgotPerHour: 3 });
    });
  });

  describe('behind a trusted proxy', () => {
    const t = useTestApp({ CATALOG_PATH, TRUST_PROXY: 'true', AUTH_LOGIN_LIMIT_PER_MINUTE: '2', AUTH_FORGOT_LIMIT_PER_HOUR: '1' });

    it('keeps a bucket per X-Forwarded-For address', async () => {
      expect((await login(t.app, '203.0.113.1')).status).toBe(401);
      expect((await login(t.app, '203.0.113.1')).status).toBe(401);
      expectRateLimited(await login(t.app, '203.0.113.1'), 60);
      expect((await login(t.app, '203.0.113.2')).status).toBe(401);
      expect((await login(t.app, '203.0.113.2')).status).toBe(401);
      expectRateLimited(await login(t.app, '203.0.113.2'), 60);
      // The proxy's own address (no header) is yet another client.
      expect((await login(t.app)).status).toBe(401);
      // The client is the first address of the chain.
      expectRateLimited(await login(t.app, '203.0.113.1, 10.0.0.1'), 60);
    });

    it('does the same for forgot-password', async () => {
      expect((await forgot(t.app, '198.51.100.1')).status).toBe(202);
      expectRateLimited(await forgot(t.app, '198.51.100.1'), 3600);
      expect((await forgot(t.app, '198.51.100.2')).status).toBe(202);
    });
  });

  describe('without TRUST_PROXY', () => {
    const t = useTestApp({ CATALOG_PATH, AUTH_LOGIN_LIMIT_PER_MINUTE: '2' });

    it('ignores X-Forwarded-For: every request counts for the socket address', async () => {
      expect((await login(t.app, '203.0.113.1')).status).toBe(401);
      expect((await login(t.app, '203.0.113.2')).status).toBe(401);
      expectRateLimited(await login(t.app, '203.0.113.3'), 60);
      expectRateLimited(await login(t.app), 60);
    });
  });

  describe('turned off (0)', () => {
    const t = useTestApp({ CATALOG_PATH });

    it('never refuses', async () => {
      for (let i = 0; i < 15; i++) expect((await login(t.app)).status).toBe(401);
    });
  });
});

describe('GenerationLimiter', () => {
  const t = useTestApp({ CATALOG_PATH });
  const holder: { redis?: Redis } = {};
  const runPrefix = `gensvc-limits-test-${crypto.randomBytes(4).toString('hex')}`;
  let limiterCount = 0;
  let userCount = 1000;

  beforeAll(async () => {
    if (storeKind() === 'mysql-redis') {
      const url = process.env.TEST_REDIS_URL;
      if (!url) throw new Error('TEST_REDIS_URL is needed in the mysql+redis project');
      holder.redis = new Redis(url);
      await holder.redis.ping();
    }
  });

  afterAll(async () => {
    const redis = holder.redis;
    if (!redis) return;
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${runPrefix}*`, 'COUNT', 500);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
    await redis.quit();
  });

  /** A limiter of its own (fresh counters), on Redis in the mysql+redis project, in memory otherwise. */
  function newLimiter(prefix = `${runPrefix}-${++limiterCount}`): GenerationLimiter {
    return new GenerationLimiter(holder.redis, prefix);
  }
  const newUserId = () => ++userCount;
  const free = (): Plan => t.app.container.plans.get('free');
  const custom = (hourlyLimit: number, dailyLimit: number): Plan => ({ ...free(), hourlyLimit, dailyLimit });

  it('runs on the store of this project', () => {
    expect(Boolean(holder.redis)).toBe(storeKind() === 'mysql-redis');
  });

  it('allows a free plan 5 requests an hour and refuses the 6th, counting nothing for it', async () => {
    const limiter = newLimiter();
    const user = newUserId();
    expect(free()).toMatchObject({ hourlyLimit: 5, dailyLimit: 20 });
    for (let i = 0; i < 5; i++) expect((await limiter.consume(user, free())).ok).toBe(true);
    const refused = await limiter.consume(user, free());
    expect(refused.ok).toBe(false);
    if (refused.ok) throw new Error('unreachable');
    expect(Number.isInteger(refused.retryAfter)).toBe(true);
    expect(refused.retryAfter).toBeGreaterThanOrEqual(1);
    expect(refused.retryAfter).toBeLessThanOrEqual(3600);
    expect(refused.snapshot.hour).toMatchObject({ limit: 5, remaining: 0 });
    expect(refused.snapshot.day).toMatchObject({ limit: 20, remaining: 15 });

    // The refusals counted nothing, in either window.
    for (let i = 0; i < 3; i++) expect((await limiter.consume(user, free())).ok).toBe(false);
    const snapshot = await limiter.snapshot(user, free());
    expect(snapshot.hour).toMatchObject({ limit: 5, remaining: 0 });
    expect(snapshot.day).toMatchObject({ limit: 20, remaining: 15 });
  });

  it('keeps the counters of each user apart', async () => {
    const limiter = newLimiter();
    const [a, b] = [newUserId(), newUserId()];
    for (let i = 0; i < 5; i++) await limiter.consume(a, free());
    expect((await limiter.consume(a, free())).ok).toBe(false);
    expect((await limiter.consume(b, free())).ok).toBe(true);
    expect((await limiter.snapshot(b, free())).hour?.remaining).toBe(4);
  });

  it('gives a slot back on refund', async () => {
    const limiter = newLimiter();
    const user = newUserId();
    for (let i = 0; i < 5; i++) await limiter.consume(user, free());
    expect((await limiter.consume(user, free())).ok).toBe(false);
    await limiter.refund(user, free());
    const snapshot = await limiter.snapshot(user, free());
    expect(snapshot.hour?.remaining).toBe(1);
    expect(snapshot.day?.remaining).toBe(16);
    expect((await limiter.consume(user, free())).ok).toBe(true);
    expect((await limiter.consume(user, free())).ok).toBe(false);
  });

  it('never gives more than the limit back: a refund without a consume is no extra slot', async () => {
    const limiter = newLimiter();
    const user = newUserId();
    await limiter.refund(user, free());
    await limiter.refund(user, free());
    const snapshot = await limiter.snapshot(user, free());
    expect(snapshot.hour?.remaining).toBe(5);
    expect(snapshot.day?.remaining).toBe(20);
    let accepted = 0;
    for (let i = 0; i < 8; i++) if ((await limiter.consume(user, free())).ok) accepted++;
    expect(accepted).toBe(5);
  });

  it('refuses on the daily window when the hourly one still has room', async () => {
    const limiter = newLimiter();
    const user = newUserId();
    const plan = custom(100, 3);
    for (let i = 0; i < 3; i++) expect((await limiter.consume(user, plan)).ok).toBe(true);
    const refused = await limiter.consume(user, plan);
    expect(refused.ok).toBe(false);
    if (refused.ok) throw new Error('unreachable');
    // The time to the end of the day window, not of the hour.
    expect(refused.retryAfter).toBeGreaterThan(3600);
    expect(refused.retryAfter).toBeLessThanOrEqual(86_400);
    expect(refused.snapshot.hour).toMatchObject({ limit: 100, remaining: 97 });
    expect(refused.snapshot.day).toMatchObject({ limit: 3, remaining: 0 });
    const snapshot = await limiter.snapshot(user, plan);
    expect(snapshot.hour?.remaining).toBe(97);
    expect(snapshot.day?.remaining).toBe(0);
  });

  it('limits one window alone when the other is unlimited (0)', async () => {
    const limiter = newLimiter();
    const user = newUserId();
    const plan = custom(0, 2);
    expect((await limiter.consume(user, plan)).ok).toBe(true);
    const second = await limiter.consume(user, plan);
    expect(second.ok).toBe(true);
    expect(second.snapshot.hour).toBeNull();
    expect(second.snapshot.day).toMatchObject({ limit: 2, remaining: 0 });
    expect((await limiter.consume(user, plan)).ok).toBe(false);
  });

  it('never limits elite, whose snapshot has no windows', async () => {
    const limiter = newLimiter();
    const user = newUserId();
    const elite = t.app.container.plans.get('elite');
    expect(elite).toMatchObject({ hourlyLimit: 0, dailyLimit: 0 });
    for (let i = 0; i < 200; i++) {
      const result = await limiter.consume(user, elite);
      expect(result).toEqual({ ok: true, snapshot: { hour: null, day: null } });
    }
    expect(await limiter.snapshot(user, elite)).toEqual({ hour: null, day: null });
    await limiter.refund(user, elite);
    expect(await limiter.snapshot(user, elite)).toEqual({ hour: null, day: null });
  });

  it('counts the remaining requests down in the snapshot', async () => {
    const limiter = newLimiter();
    const user = newUserId();
    const initial = await limiter.snapshot(user, free());
    expect(initial).toEqual({ hour: { limit: 5, remaining: 5, resetSeconds: 3600 }, day: { limit: 20, remaining: 20, resetSeconds: 86_400 } });
    for (let i = 1; i <= 5; i++) {
      const result = await limiter.consume(user, free());
      expect(result.ok).toBe(true);
      expect(result.snapshot.hour?.remaining).toBe(5 - i);
      expect(result.snapshot.day?.remaining).toBe(20 - i);
      const snapshot = await limiter.snapshot(user, free());
      expect(snapshot.hour?.remaining).toBe(5 - i);
      expect(snapshot.day?.remaining).toBe(20 - i);
      expect(snapshot.hour?.resetSeconds).toBeGreaterThanOrEqual(1);
      expect(snapshot.hour?.resetSeconds).toBeLessThanOrEqual(3600);
      expect(snapshot.day?.resetSeconds).toBeGreaterThan(3600);
      expect(snapshot.day?.resetSeconds).toBeLessThanOrEqual(86_400);
    }
  });

  it('lets exactly the limit through when 30 requests arrive at once', async () => {
    const limiter = newLimiter();
    const user = newUserId();
    const plan = custom(10, 1000);
    const results = await Promise.all(Array.from({ length: 30 }, () => limiter.consume(user, plan)));
    expect(results.filter((r) => r.ok)).toHaveLength(10);
    for (const r of results) if (!r.ok) expect(r.retryAfter).toBeGreaterThanOrEqual(1);
    const snapshot = await limiter.snapshot(user, plan);
    expect(snapshot.hour?.remaining).toBe(0);
    expect(snapshot.day?.remaining).toBe(990);
  });

  it('lets exactly the limit through across limiters sharing a store (several processes)', async () => {
    if (!holder.redis) return; // memory limits are per process by design
    const prefix = `${runPrefix}-shared`;
    const limiters = [newLimiter(prefix), newLimiter(prefix), newLimiter(prefix)];
    const user = newUserId();
    const plan = custom(10, 1000);
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => limiters[i % 3]!.consume(user, plan)));
    expect(results.filter((r) => r.ok)).toHaveLength(10);
    expect((await limiters[0]!.snapshot(user, plan)).hour?.remaining).toBe(0);
  });

  it('stays exact when consumes and refunds interleave', async () => {
    const limiter = newLimiter();
    const user = newUserId();
    const plan = custom(10, 1000);
    // 10 accepted, then 5 of them given back while 20 more arrive: exactly 5 more get through.
    for (let i = 0; i < 10; i++) await limiter.consume(user, plan);
    const [, results] = await Promise.all([
      Promise.all(Array.from({ length: 5 }, () => limiter.refund(user, plan))),
      Promise.all(Array.from({ length: 20 }, () => limiter.consume(user, plan))),
    ]);
    const accepted = results.filter((r) => r.ok).length;
    expect(accepted).toBeLessThanOrEqual(5);
    const snapshot = await limiter.snapshot(user, plan);
    expect(snapshot.hour?.remaining).toBe(5 - accepted);
    let more = 0;
    for (let i = 0; i < 10; i++) if ((await limiter.consume(user, plan)).ok) more++;
    expect(accepted + more).toBe(5);
  });
});

describe('rate-limit headers', () => {
  const t = useTestApp({ CATALOG_PATH });

  it('show the remaining requests of the hour and the day after consumes through the limiter', async () => {
    const user = await registerUser(t.app);
    const plan = t.app.container.plans.get('free');
    const me = () => t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${user.accessToken}`);

    const before = await me();
    expect(before.status).toBe(200);
    expect(before.headers).toMatchObject({
      'x-ratelimit-limit-hour': '5',
      'x-ratelimit-remaining-hour': '5',
      'x-ratelimit-limit-day': '20',
      'x-ratelimit-remaining-day': '20',
    });

    await t.app.container.generationLimiter.consume(user.id, plan);
    await t.app.container.generationLimiter.consume(user.id, plan);
    const after = await me();
    expect(after.headers['x-ratelimit-remaining-hour']).toBe('3');
    expect(after.headers['x-ratelimit-remaining-day']).toBe('18');

    // Reading does not count.
    expect((await me()).headers['x-ratelimit-remaining-hour']).toBe('3');

    for (let i = 0; i < 5; i++) await t.app.container.generationLimiter.consume(user.id, plan);
    const full = await me();
    expect(full.status).toBe(200);
    expect(full.headers['x-ratelimit-remaining-hour']).toBe('0');
    expect(full.headers['x-ratelimit-remaining-day']).toBe('15');

    await t.app.container.generationLimiter.refund(user.id, plan);
    expect((await me()).headers['x-ratelimit-remaining-hour']).toBe('1');
  });

  it('follow the plan in force', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const res = await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${user.accessToken}`);
    expect(res.headers).toMatchObject({
      'x-ratelimit-limit-hour': '100',
      'x-ratelimit-remaining-hour': '100',
      'x-ratelimit-limit-day': '1000',
      'x-ratelimit-remaining-day': '1000',
    });
  });

  it('show elite as 0 (unlimited) with no Remaining headers', async () => {
    const user = await userOnPlan(t.app, 'elite');
    for (let i = 0; i < 10; i++) await t.app.container.generationLimiter.consume(user.id, t.app.container.plans.get('elite'));
    const res = await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${user.accessToken}`);
    expect(res.status).toBe(200);
    expect(res.headers['x-ratelimit-limit-hour']).toBe('0');
    expect(res.headers['x-ratelimit-limit-day']).toBe('0');
    expect(res.headers['x-ratelimit-remaining-hour']).toBeUndefined();
    expect(res.headers['x-ratelimit-remaining-day']).toBeUndefined();
  });

  it('are not sent on unauthenticated responses', async () => {
    const res = await t.app.http().get('/api/v2/user/me');
    expect(res.status).toBe(401);
    expect(res.headers['x-ratelimit-limit-hour']).toBeUndefined();
  });
});
