/**
 * API keys: `gsk_` + 44 base62 characters (48 in all). Only the SHA-256 is stored, so a key is
 * found by hashing what the client sent; the secret itself is shown once, at creation.
 *
 * Who owns a key is cached in the process for a few seconds (OWNER_CACHE_MS): an API-key request
 * then costs no statement before its work. The cache is keyed by the key's hash (the secret is
 * never kept) and drops an account's entries the moment an AccountChanges announcement for it
 * arrives: a key deleted or revoked, a plan change, an account deleted, in whichever process
 * (account-changes.ts). It keeps nothing while announcements could be missed (Redis subscription
 * not in place), and a read that began before an announcement is not kept.
 */

import type { Clock } from '../clock';
import { parseDbDate } from '../db/database';
import type { Database } from '../db/database';
import { ApiKey, User } from '../db/entities';
import type { Row } from '../db/raw';
import { EntityRows } from '../db/rows';
import { AppError } from '../errors';
import type { AccountChanges, ChangedAccount } from './account-changes';
import { LastUsedThrottle } from './last-used';
import { randomBase62, sha256Hex } from './secrets';

export const API_KEY_PREFIX = 'gsk_';
export const API_KEY_LENGTH = 48;
export const MAX_KEYS_PER_USER = 20;

/**
 * How long a key's owner is served from the cache. Announcements make changes immediate; this
 * bounds what none announces: a change made by a process without the deployment's Redis (the
 * admin CLI beside an embedded server), or an announcement lost while Redis was away.
 */
export const OWNER_CACHE_MS = 5_000;
/** Entries kept at most (the oldest go first): a bound on memory, far above the keys in use at once. */
const OWNER_CACHE_SIZE = 10_000;

export function looksLikeApiKey(token: string): boolean {
  return token.startsWith(API_KEY_PREFIX);
}

export type AuthenticatedKey = { key: Pick<ApiKey, 'id' | 'userId' | 'lastUsedAt'>; user: User };

interface CachedOwner extends AuthenticatedKey {
  until: number;
}

export class ApiKeys {
  private readonly touch = new LastUsedThrottle(60_000);
  private readonly userRows: EntityRows<User>;
  private readonly authenticateSql: string;
  /** By the key's SHA-256. */
  private readonly owners = new Map<string, CachedOwner>();
  /** Counts announcements heard: a read that saw it change may hold what was announced away. */
  private changesHeard = 0;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly changes?: AccountChanges,
  ) {
    this.userRows = new EntityRows(db.source, User);
    this.authenticateSql = `SELECT k.id AS key_id, k.last_used_at AS key_last_used_at, ${this.userRows.selectList('u', 'u_')}
      FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.key_hash = :keyHash`;
    changes?.onChange((account) => this.forget(account));
  }

  async create(userId: number, name: string): Promise<{ key: ApiKey; secret: string }> {
    const secret = API_KEY_PREFIX + randomBase62(API_KEY_LENGTH - API_KEY_PREFIX.length);
    const key = await this.db.transaction(async (em) => {
      // The user row is the lock that serializes concurrent creations, so the cap holds on MySQL.
      if (!(await this.db.lockOne(em, User, userId))) throw new AppError('not_found');
      const count = await em.getRepository(ApiKey).countBy({ userId });
      if (count >= MAX_KEYS_PER_USER) {
        throw new AppError('limit_reached', { detail: `At most ${MAX_KEYS_PER_USER} API keys per account` });
      }
      return em.getRepository(ApiKey).save(
        em.getRepository(ApiKey).create({
          userId,
          name,
          keyHash: sha256Hex(secret),
          prefix: secret.slice(0, 8),
          lastFour: secret.slice(-4),
          createdAt: this.clock(),
          lastUsedAt: null,
        }),
      );
    });
    return { key, secret };
  }

  list(userId: number): Promise<ApiKey[]> {
    return this.db.repo(ApiKey).find({ where: { userId }, order: { id: 'ASC' } });
  }

  /** Deletes one of the user's keys; another user's key id is `not_found`. */
  async delete(userId: number, keyId: number): Promise<void> {
    const deleted = await this.db.transaction(async (em) => (await em.getRepository(ApiKey).delete({ id: keyId, userId })).affected);
    if (deleted !== 1) throw new AppError('not_found');
    await this.changes?.announce(userId);
  }

  /** Administrative revocation by id, whoever owns it. */
  async revokeById(keyId: number): Promise<ApiKey> {
    const revoked = await this.db.transaction(async (em) => {
      const key = await em.getRepository(ApiKey).findOneBy({ id: keyId });
      if (!key) throw new AppError('not_found');
      await em.getRepository(ApiKey).delete({ id: keyId });
      return key;
    });
    await this.changes?.announce(revoked.userId);
    return revoked;
  }

  /**
   * The key and its owner, or null, in one indexed read (this runs on every API-key request).
   * Keeps `last_used_at` current to the minute.
   */
  async authenticate(secret: string): Promise<AuthenticatedKey | null> {
    if (secret.length !== API_KEY_LENGTH) return null;
    const keyHash = sha256Hex(secret);
    const now = this.clock();
    const found = this.owners.get(keyHash) ?? null;
    const owner = found && found.until > now.getTime() ? found : await this.read(keyHash, now);
    if (!owner) return null;
    await this.touchLastUsed(owner.key, now);
    return owner;
  }

  /** The key's row and its owner's, kept in the cache when no announcement could have been missed. */
  private async read(keyHash: string, now: Date): Promise<CachedOwner | null> {
    this.owners.delete(keyHash);
    const heardBefore = this.changesHeard;
    const cacheable = this.changes?.listening() ?? false;
    const [row] = await this.db.read<Row>({ sql: this.authenticateSql, params: { keyHash } });
    if (!row) return null;
    const user = this.userRows.hydrate(row, 'u_');
    const lastUsed = row.key_last_used_at as string | Date | null;
    const key = { id: Number(row.key_id), userId: user.id, lastUsedAt: lastUsed === null ? null : parseDbDate(lastUsed) };
    const owner: CachedOwner = { key, user, until: now.getTime() + OWNER_CACHE_MS };
    if (cacheable && this.changesHeard === heardBefore) {
      if (this.owners.size >= OWNER_CACHE_SIZE) this.owners.delete(this.owners.keys().next().value as string);
      this.owners.set(keyHash, owner);
    }
    return owner;
  }

  private forget(account: ChangedAccount): void {
    this.changesHeard++;
    if (account === 'all') {
      this.owners.clear();
      return;
    }
    for (const [hash, owner] of this.owners) if (owner.user.id === account) this.owners.delete(hash);
  }

  /** Keeps `last_used_at` current to the minute, whether the owner came from the cache or not. */
  private async touchLastUsed(key: AuthenticatedKey['key'], now: Date): Promise<void> {
    if (this.touch.shouldWrite(key.id, now)) {
      const minuteAgo = this.db.dateParam(new Date(now.getTime() - 60_000));
      // Conditional, so several processes together still write about once a minute.
      await this.db.transaction((em) =>
        em
          .createQueryBuilder()
          .update(ApiKey)
          .set({ lastUsedAt: now })
          .where('id = :id', { id: key.id })
          .andWhere('(last_used_at IS NULL OR last_used_at < :minuteAgo)', { minuteAgo })
          .execute(),
      );
      key.lastUsedAt = now;
    }
  }
}

