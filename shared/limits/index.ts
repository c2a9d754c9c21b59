/**
 * Request limits on rate-limiter-flexible: in Redis when configured (atomic across processes),
 * in memory otherwise. Windows are fixed: an hour / a day / a minute from the first counted hit.
 */
import type Redis from 'ioredis';
import {
  RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from 'rate-limiter-flexible';
import { AppError } from '../errors';
import type { Plan } from '../plans';

/** Large enough never to refuse by itself: the plan's own limit is compared to the count. */
const COUNTER_POINTS = 1_000_000_000;

function makeLimiter(redis: Redis | undefined, keyPrefix: string, points: number, duration: number): RateLimiterAbstract {
  return redis
    ? new RateLimiterRedis({ storeClient: redis, keyPrefix, points, duration })
    : new RateLimiterMemory({ keyPrefix, points, duration });
}

/**
 * Fails at once while the Redis connection is lost (it is being re-established): a command would
 * otherwise wait in the client's queue through reconnection attempts, seconds for every request.
 * While connecting at boot, commands wait for the connection as usual.
 */
function reachable(redis: Redis | undefined): void {
  if (redis && (redis.status === 'reconnecting' || redis.status === 'close' || redis.status === 'end')) {
    throw Object.assign(new Error('Redis is not reachable (limits)'), { code: 'ECONNREFUSED' });
  }
}

function seconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/**
 * Takes one counted request back, never below zero: the window may have ended between the consume
 * and the refund, and a negative count would allow more than the limit in the next one.
 */
async function giveBack(limiter: RateLimiterAbstract, key: string): Promise<void> {
  const res = await limiter.reward(key, 1);
  if (res.consumedPoints < 0) await limiter.penalty(key, 1);
}

export interface WindowState {
  limit: number;
  remaining: number;
  resetSeconds: number;
}

/** What the rate-limit headers show: null windows mean unlimited. */
export interface LimitSnapshot {
  hour: WindowState | null;
  day: WindowState | null;
}

export type ConsumeResult = { ok: true; snapshot: LimitSnapshot } | { ok: false; retryAfter: number; snapshot: LimitSnapshot };

/**
 * The plan's hourly and daily limits on accepted generation requests. The generate pipeline
 * calls `consume` when it accepts a request and `refund` when the request is then refused
 * (insufficient tokens), so only accepted generations count.
 */
export class GenerationLimiter {
  private readonly hour: RateLimiterAbstract;
  private readonly day: RateLimiterAbstract;

  constructor(
    private readonly redis: Redis | undefined,
    prefix: string,
  ) {
    this.hour = makeLimiter(redis, `${prefix}:limit:gen-hour`, COUNTER_POINTS, 3600);
    this.day = makeLimiter(redis, `${prefix}:limit:gen-day`, COUNTER_POINTS, 86_400);
  }

  private window(limit: number, res: RateLimiterRes | null, durationSeconds: number): WindowState | null {
    if (limit === 0) return null;
    const used = res?.consumedPoints ?? 0;
    return {
      limit,
      remaining: Math.max(0, limit - used),
      resetSeconds: res ? seconds(res.msBeforeNext) : durationSeconds,
    };
  }

  async snapshot(userId: number, plan: Plan): Promise<LimitSnapshot> {
    if (plan.hourlyLimit === 0 && plan.dailyLimit === 0) return { hour: null, day: null };
    reachable(this.redis);
    const [hour, day] = await Promise.all([this.hour.get(String(userId)), this.day.get(String(userId))]);
    return { hour: this.window(plan.hourlyLimit, hour, 3600), day: this.window(plan.dailyLimit, day, 86_400) };
  }

  /** Counts one accepted request, or refuses (counting nothing) when a window is full. */
  async consume(userId: number, plan: Plan): Promise<ConsumeResult> {
    if (plan.hourlyLimit === 0 && plan.dailyLimit === 0) return { ok: true, snapshot: { hour: null, day: null } };
    const key = String(userId);
    reachable(this.redis);
    const [hour, day] = await Promise.all([this.hour.consume(key, 1), this.day.consume(key, 1)]);
    const hourFull = plan.hourlyLimit > 0 && hour.consumedPoints > plan.hourlyLimit;
    const dayFull = plan.dailyLimit > 0 && day.consumedPoints > plan.dailyLimit;
    if (hourFull || dayFull) {
      await Promise.all([giveBack(this.hour, key), giveBack(this.day, key)]);
      const retryAfter = Math.max(hourFull ? seconds(hour.msBeforeNext) : 0, dayFull ? seconds(day.msBeforeNext) : 0);
      const snapshot = {
        hour: this.window(plan.hourlyLimit, new RateLimiterRes(0, hour.msBeforeNext, hour.consumedPoints - 1), 3600),
        day: this.window(plan.dailyLimit, new RateLimiterRes(0, day.msBeforeNext, day.consumedPoints - 1), 86_400),
      };
      return { ok: false, retryAfter, snapshot };
    }
    return {
      ok: true,
      snapshot: { hour: this.window(plan.hourlyLimit, hour, 3600), day: this.window(plan.dailyLimit, day, 86_400) },
    };
  }

  /** Gives back a request counted by `consume` that was refused afterwards. */
  async refund(userId: number, plan: Plan): Promise<void> {
    if (plan.hourlyLimit === 0 && plan.dailyLimit === 0) return;
    await Promise.all([giveBack(this.hour, String(userId)), giveBack(this.day, String(userId))]);
  }
}

export type AuthEndpoint = 'login' | 'register' | 'forgot_password';

/** Per-client-IP limits of the authentication endpoints (spec 8.2); 0 disables one. */
export class AuthLimiter {
  private readonly limiters = new Map<AuthEndpoint, RateLimiterAbstract>();

  constructor(
    private readonly redis: Redis | undefined,
    prefix: string,
    limits: { loginPerMinute: number; registerPerMinute: number; forgotPerHour: number },
  ) {
    const add = (endpoint: AuthEndpoint, points: number, duration: number) => {
      if (points > 0) this.limiters.set(endpoint, makeLimiter(redis, `${prefix}:limit:auth-${endpoint}`, points, duration));
    };
    add('login', limits.loginPerMinute, 60);
    add('register', limits.registerPerMinute, 60);
    add('forgot_password', limits.forgotPerHour, 3600);
  }

  /** Counts the request; throws `rate_limited` with `retry_after` when the IP is over the limit. */
  async hit(endpoint: AuthEndpoint, ip: string): Promise<void> {
    const limiter = this.limiters.get(endpoint);
    if (!limiter) return;
    reachable(this.redis);
    try {
      await limiter.consume(ip, 1);
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) {
        const retryAfter = seconds(rejection.msBeforeNext);
        throw new AppError('rate_limited', { extra: { retry_after: retryAfter }, headers: { 'Retry-After': String(retryAfter) } });
      }
      throw rejection;
    }
  }
}

/**
 * Refused attempts per account over a fixed window (redemption codes: a wrong, expired or spent
 * code counts): once `points` refusals are counted, every attempt is refused with 429 until the
 * window ends, a right guess included, so codes cannot be guessed by trying. Successes count
 * nothing. 0 points disables it.
 */
export class FailedAttemptLimiter {
  private readonly limiter: RateLimiterAbstract | null;

  constructor(
    private readonly redis: Redis | undefined,
    prefix: string,
    name: string,
    private readonly points: number,
    durationSeconds: number,
  ) {
    this.limiter = points > 0 ? makeLimiter(redis, `${prefix}:limit:${name}`, points, durationSeconds) : null;
  }

  /** Throws `rate_limited` with `retry_after` while `key` has used up its refusals. */
  async assertAllowed(key: string): Promise<void> {
    if (!this.limiter) return;
    reachable(this.redis);
    const res = await this.limiter.get(key);
    if (res && res.consumedPoints >= this.points) {
      const retryAfter = seconds(res.msBeforeNext);
      throw new AppError('rate_limited', { extra: { retry_after: retryAfter }, headers: { 'Retry-After': String(retryAfter) } });
    }
  }

  /** Counts one refused attempt of `key`. */
  async recordFailure(key: string): Promise<void> {
    if (!this.limiter) return;
    try {
      await this.limiter.consume(key, 1);
    } catch (rejection) {
      // Over the limit already (attempts that raced past `assertAllowed`): counted all the same.
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
    }
  }
}
