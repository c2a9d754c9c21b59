/**
 * Per-provider concurrency caps, so one upstream's outage or slowness cannot take every worker
 * slot and starve the other providers. With Redis the cap is global across processes (a sorted
 * set of leases, scored by expiry, so a crashed holder frees its slot when its lease runs out);
 * without Redis it is per process.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from '../redis';

/** Gives the slot back; safe to call more than once. */
export type ReleaseSlot = () => Promise<void>;

export interface ProviderSlots {
  /**
   * Takes a slot of `provider`, waiting at most `waitMs` (or until `signal` aborts). Resolves to
   * null when none freed up in time. Providers without a cap always get a slot at once.
   */
  acquire(provider: string, waitMs: number, signal?: AbortSignal): Promise<ReleaseSlot | null>;
  /** Slots of `provider` held right now (for the health page and tests). */
  inUse(provider: string): Promise<number>;
}

/** How long a Redis lease lives without renewal; holders renew it every third of that. */
export const SLOT_LEASE_MS = 60_000;
const POLL_MS = 100;

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

const noop: ReleaseSlot = () => Promise.resolve();

/** Counting semaphores in this process, FIFO per provider. */
export class LocalProviderSlots implements ProviderSlots {
  private readonly held = new Map<string, number>();
  private readonly waiters = new Map<string, Array<() => void>>();

  constructor(private readonly caps: Record<string, number>) {}

  async acquire(provider: string, waitMs: number, signal?: AbortSignal): Promise<ReleaseSlot | null> {
    const cap = this.caps[provider];
    if (cap === undefined) return noop;
    if ((this.held.get(provider) ?? 0) >= cap) {
      const granted = await this.wait(provider, waitMs, signal);
      if (!granted) return null;
    } else {
      this.held.set(provider, (this.held.get(provider) ?? 0) + 1);
    }
    let released = false;
    return () => {
      if (!released) {
        released = true;
        this.handOver(provider);
      }
      return Promise.resolve();
    };
  }

  inUse(provider: string): Promise<number> {
    return Promise.resolve(this.held.get(provider) ?? 0);
  }

  /** Resolves true once a releasing holder hands its slot to this waiter. */
  private wait(provider: string, waitMs: number, signal?: AbortSignal): Promise<boolean> {
    if (waitMs <= 0 || signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const queue = this.waiters.get(provider) ?? [];
      this.waiters.set(provider, queue);
      const give = (): void => {
        cleanup();
        resolve(true);
      };
      const giveUp = (): void => {
        const at = queue.indexOf(give);
        if (at >= 0) queue.splice(at, 1);
        cleanup();
        resolve(false);
      };
      const timer = setTimeout(giveUp, waitMs);
      const cleanup = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', giveUp);
      };
      signal?.addEventListener('abort', giveUp, { once: true });
      queue.push(give);
    });
  }

  /** The slot passes straight to the first waiter (the count stays), or is freed. */
  private handOver(provider: string): void {
    const next = this.waiters.get(provider)?.shift();
    if (next) next();
    else this.held.set(provider, Math.max(0, (this.held.get(provider) ?? 0) - 1));
  }
}

/**
 * Drops expired leases, then adds this one when fewer than the cap remain: one atomic step, so
 * two processes never both take the last slot. Time is Redis's own, so processes whose clocks
 * disagree never expire each other's live leases. ARGV: cap, holder, lease ms.
 */
const ACQUIRE_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) * 2)
  return 1
end
return 0`;

/**
 * Renews a lease only while it is still held (an expired one is gone for good), and keeps the
 * set itself alive as long as a holder renews. ARGV: holder, lease ms.
 */
const RENEW_SCRIPT = `
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
  return 1
end
return 0`;

/** Drops expired leases and counts the rest, by Redis's clock. */
const COUNT_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return redis.call('ZCARD', KEYS[1])`;

/** The scripts as commands of the client: sent by their SHA1 (EVALSHA), not their text, each call. */
interface SlotCommands {
  gensvcAcquireSlot(key: string, cap: number, holder: string, leaseMs: number): Promise<number>;
  gensvcRenewSlot(key: string, holder: string, leaseMs: number): Promise<number>;
  gensvcCountSlots(key: string): Promise<number>;
}

/** Global caps: one sorted set of leases per provider in Redis. */
export class RedisProviderSlots implements ProviderSlots {
  private readonly commands: SlotCommands;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly caps: Record<string, number>,
    private readonly leaseMs = SLOT_LEASE_MS,
  ) {
    // ioredis loads each script once (EVALSHA, and EVAL again after a NOSCRIPT) and adds the methods.
    redis.defineCommand('gensvcAcquireSlot', { numberOfKeys: 1, lua: ACQUIRE_SCRIPT });
    redis.defineCommand('gensvcRenewSlot', { numberOfKeys: 1, lua: RENEW_SCRIPT });
    redis.defineCommand('gensvcCountSlots', { numberOfKeys: 1, lua: COUNT_SCRIPT });
    this.commands = redis as unknown as SlotCommands;
  }

  private key(provider: string): string {
    return `${this.prefix}:provider-slots:${provider}`;
  }

  async acquire(provider: string, waitMs: number, signal?: AbortSignal): Promise<ReleaseSlot | null> {
    const cap = this.caps[provider];
    if (cap === undefined) return noop;
    const key = this.key(provider);
    const holder = randomUUID();
    const giveUpAt = Date.now() + Math.max(0, waitMs);
    for (;;) {
      const won = await this.commands.gensvcAcquireSlot(key, cap, holder, this.leaseMs);
      if (won === 1) break;
      if (signal?.aborted || Date.now() + POLL_MS > giveUpAt) return null;
      // Jitter keeps waiting processes from asking in lockstep.
      await sleep(POLL_MS / 2 + Math.random() * POLL_MS, signal);
    }
    const renew = setInterval(() => {
      void this.commands.gensvcRenewSlot(key, holder, this.leaseMs).catch(() => undefined);
    }, Math.floor(this.leaseMs / 3));
    renew.unref();
    let released = false;
    return async () => {
      if (released) return;
      released = true;
      clearInterval(renew);
      await this.redis.zrem(key, holder).catch(() => undefined);
    };
  }

  async inUse(provider: string): Promise<number> {
    return Number(await this.commands.gensvcCountSlots(this.key(provider)));
  }
}
