/**
 * One long-polling process per bot token: Telegram answers a second poller with 409 Conflict. A
 * lease decides who polls: in Redis (`SET NX PX`) when configured, otherwise a row of the
 * `bot_state` table. The holder renews it well before it runs out; a holder that dies stops
 * renewing, its lease expires and a waiting process takes over. Keys carry a hash of the token,
 * never the token.
 */
import crypto from 'node:crypto';
import { LessThanOrEqual } from 'typeorm';
import type { Database } from '../db/database';
import { BotState } from '../db/entities';
import { isDuplicateKey } from '../db/errors';
import type { Redis } from '../redis';

export interface PollerLock {
  /** Takes the lease, or renews it when this holder has it; false while another holder does. */
  acquire(leaseMs: number): Promise<boolean>;
  /** Gives the lease up (only if this holder has it), so a waiter need not wait for it to expire. */
  release(): Promise<void>;
}

/** The lock's key for a token: a hash, so the key names the bot without revealing its token. */
export function pollerLockKey(botToken: string): string {
  return `poller-lock:${crypto.createHash('sha256').update(botToken).digest('hex').slice(0, 32)}`;
}

/** Who holds a lease: unique per poller, also within one process. */
export function newHolderId(): string {
  return `${process.pid}-${crypto.randomBytes(8).toString('hex')}`;
}

// Renew when this holder has the key, else take it if nobody has: one atomic step.
const ACQUIRE_SCRIPT = `
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
return 0`;

const RELEASE_SCRIPT = `
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0`;

export class RedisPollerLock implements PollerLock {
  private readonly key: string;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    botToken: string,
    private readonly holder: string = newHolderId(),
  ) {
    this.key = `${prefix}:bot:${pollerLockKey(botToken)}`;
  }

  async acquire(leaseMs: number): Promise<boolean> {
    const result = await this.redis.eval(ACQUIRE_SCRIPT, 1, this.key, this.holder, String(leaseMs));
    return Number(result) === 1;
  }

  async release(): Promise<void> {
    await this.redis.eval(RELEASE_SCRIPT, 1, this.key, this.holder);
  }
}

/**
 * The lease as a `bot_state` row (value: the holder, expires_at: the end of the lease). Leases
 * are measured in wall-clock time, not the service clock: they time real renewals, and every
 * process sharing the database compares against the same kind of time.
 */
export class DatabasePollerLock implements PollerLock {
  private readonly key: string;

  constructor(
    private readonly db: Database,
    botToken: string,
    private readonly holder: string = newHolderId(),
    private readonly now: () => number = Date.now,
  ) {
    this.key = pollerLockKey(botToken);
  }

  async acquire(leaseMs: number): Promise<boolean> {
    const now = new Date(this.now());
    const lease = { value: this.holder, updatedAt: now, expiresAt: new Date(now.getTime() + leaseMs) };
    // Each conditional update is one statement: of two waiters taking over an expired lease, the
    // database lets only the first match (the second sees the renewed expiry).
    const renewed = await this.db.transaction((em) => em.getRepository(BotState).update({ key: this.key, value: this.holder }, lease));
    if ((renewed.affected ?? 0) > 0) return true;
    const takenOver = await this.db.transaction((em) =>
      em.getRepository(BotState).update({ key: this.key, expiresAt: LessThanOrEqual(now) }, lease),
    );
    if ((takenOver.affected ?? 0) > 0) return true;
    try {
      await this.db.transaction((em) => em.getRepository(BotState).insert({ key: this.key, ...lease }));
      return true;
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }

  async release(): Promise<void> {
    await this.db.transaction((em) => em.getRepository(BotState).delete({ key: this.key, value: this.holder }));
  }
}

export function createPollerLock(deps: { db: Database; redis: Redis | undefined; redisPrefix: string; botToken: string }): PollerLock {
  return deps.redis ? new RedisPollerLock(deps.redis, deps.redisPrefix, deps.botToken) : new DatabasePollerLock(deps.db, deps.botToken);
}
