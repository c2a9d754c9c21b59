/**
 * API keys: `gsk_` + 44 base62 characters (48 in all). Only the SHA-256 is stored, so a key is
 * found by hashing what the client sent; the secret itself is shown once, at creation.
 */

import type { Clock } from '../clock';
import { parseDbDate } from '../db/database';
import type { Database } from '../db/database';
import { ApiKey, User } from '../db/entities';
import type { Row } from '../db/raw';
import { EntityRows } from '../db/rows';
import { AppError } from '../errors';
import { LastUsedThrottle } from './last-used';
import { randomBase62, sha256Hex } from './secrets';

export const API_KEY_PREFIX = 'gsk_';
export const API_KEY_LENGTH = 48;
export const MAX_KEYS_PER_USER = 20;

export function looksLikeApiKey(token: string): boolean {
  return token.startsWith(API_KEY_PREFIX);
}

export class ApiKeys {
  private readonly touch = new LastUsedThrottle(60_000);
  private readonly userRows: EntityRows<User>;
  private readonly authenticateSql: string;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {
    this.userRows = new EntityRows(db.source, User);
    this.authenticateSql = `SELECT k.id AS key_id, k.last_used_at AS key_last_used_at, ${this.userRows.selectList('u', 'u_')}
      FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.key_hash = :keyHash`;
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
  }

  /** Administrative revocation by id, whoever owns it. */
  async revokeById(keyId: number): Promise<ApiKey> {
    return this.db.transaction(async (em) => {
      const key = await em.getRepository(ApiKey).findOneBy({ id: keyId });
      if (!key) throw new AppError('not_found');
      await em.getRepository(ApiKey).delete({ id: keyId });
      return key;
    });
  }

  /**
   * The key and its owner, or null, in one indexed read (this runs on every API-key request).
   * Keeps `last_used_at` current to the minute.
   */
  async authenticate(secret: string): Promise<{ key: Pick<ApiKey, 'id' | 'userId' | 'lastUsedAt'>; user: User } | null> {
    if (secret.length !== API_KEY_LENGTH) return null;
    const [row] = await this.db.read<Row>({ sql: this.authenticateSql, params: { keyHash: sha256Hex(secret) } });
    if (!row) return null;
    const user = this.userRows.hydrate(row, 'u_');
    const lastUsed = row.key_last_used_at as string | Date | null;
    const key = { id: Number(row.key_id), userId: user.id, lastUsedAt: lastUsed === null ? null : parseDbDate(lastUsed) };
    const now = this.clock();
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
    return { key, user };
  }
}

