/**
 * Sessions and their rotating refresh tokens. A refresh token works once: exchanging it marks it
 * rotated and issues the next one of the same family; presenting a rotated token again means it
 * was stolen or replayed, so the whole session is revoked.
 */
import type { EntityManager } from 'typeorm';
import { IsNull } from 'typeorm';
import { addDays, Clock } from '../clock';
import type { Database } from '../db/database';
import { RefreshToken, Session } from '../db/entities';
import { AppError } from '../errors';
import { randomToken, sha256Hex } from './secrets';
import { LastUsedThrottle } from './last-used';

export const REFRESH_TOKEN_TTL_DAYS = 30;

export interface ClientInfo {
  userAgent: string | null;
  ip: string | null;
}

export interface StartedSession {
  sessionId: number;
  refreshToken: string;
}

export class Sessions {
  private readonly touch = new LastUsedThrottle(60_000);

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  /** Starts a session inside the caller's transaction. */
  async start(em: EntityManager, userId: number, client: ClientInfo): Promise<StartedSession> {
    const now = this.clock();
    const session = await em.getRepository(Session).save(
      em.getRepository(Session).create({
        userId,
        userAgent: client.userAgent?.slice(0, 512) ?? null,
        ip: client.ip?.slice(0, 64) ?? null,
        createdAt: now,
        lastUsedAt: now,
        expiresAt: addDays(now, REFRESH_TOKEN_TTL_DAYS),
        revokedAt: null,
        revokedReason: null,
      }),
    );
    const refreshToken = await this.issueRefreshToken(em, session.id, now);
    return { sessionId: session.id, refreshToken };
  }

  private async issueRefreshToken(em: EntityManager, sessionId: number, now: Date): Promise<string> {
    const token = randomToken(32);
    await em.getRepository(RefreshToken).insert({ sessionId, tokenHash: sha256Hex(token), createdAt: now, rotatedAt: null });
    return token;
  }

  /** Exchanges a refresh token for the next one. Throws `invalid_token` for anything not current. */
  async refresh(token: string): Promise<{ userId: number; sessionId: number; refreshToken: string }> {
    const outcome = await this.db.transaction(async (em) => {
      const now = this.clock();
      const stored = await em.getRepository(RefreshToken).findOneBy({ tokenHash: sha256Hex(token) });
      if (!stored) return null;
      const session = await em.getRepository(Session).findOneBy({ id: stored.sessionId });
      if (!session || session.revokedAt || session.expiresAt.getTime() <= now.getTime()) return null;
      const rotated = await em
        .getRepository(RefreshToken)
        .update({ id: stored.id, rotatedAt: IsNull() }, { rotatedAt: now });
      if (rotated.affected !== 1) {
        await em.getRepository(Session).update({ id: session.id }, { revokedAt: now, revokedReason: 'refresh_reuse' });
        return { reused: true as const };
      }
      const refreshToken = await this.issueRefreshToken(em, session.id, now);
      await em
        .getRepository(Session)
        .update({ id: session.id }, { lastUsedAt: now, expiresAt: addDays(now, REFRESH_TOKEN_TTL_DAYS) });
      return { userId: session.userId, sessionId: session.id, refreshToken };
    });
    if (!outcome || 'reused' in outcome) throw new AppError('invalid_token');
    return outcome;
  }

  /** Logout by refresh token: ends the session the token belongs to. */
  async revokeByRefreshToken(token: string, reason: string): Promise<void> {
    const stored = await this.db.repo(RefreshToken).findOneBy({ tokenHash: sha256Hex(token) });
    if (!stored) throw new AppError('invalid_token');
    await this.db.transaction((em) =>
      em.getRepository(Session).update({ id: stored.sessionId, revokedAt: IsNull() }, { revokedAt: this.clock(), revokedReason: reason }),
    );
  }

  /** True when the session exists, belongs to the user, is not revoked and has not expired. */
  async isActive(sessionId: number, userId: number): Promise<boolean> {
    const session = await this.db.repo(Session).findOneBy({ id: sessionId });
    const now = this.clock();
    if (!session || session.userId !== userId || session.revokedAt) return false;
    if (session.expiresAt.getTime() <= now.getTime()) return false;
    if (this.touch.shouldWrite(sessionId, now)) {
      await this.db.transaction((em) => em.getRepository(Session).update({ id: sessionId }, { lastUsedAt: now }));
    }
    return true;
  }

  async list(userId: number): Promise<Session[]> {
    const now = this.clock();
    const sessions = await this.db.repo(Session).find({ where: { userId, revokedAt: IsNull() }, order: { id: 'DESC' } });
    return sessions.filter((s) => s.expiresAt.getTime() > now.getTime());
  }

  /** Revokes one of the user's sessions; another user's session id is `not_found`. */
  async revoke(userId: number, sessionId: number, reason: string): Promise<void> {
    const done = await this.db.transaction(async (em) => {
      const result = await em
        .getRepository(Session)
        .update({ id: sessionId, userId, revokedAt: IsNull() }, { revokedAt: this.clock(), revokedReason: reason });
      return result.affected === 1;
    });
    if (!done) throw new AppError('not_found');
  }

  async revokeAll(em: EntityManager, userId: number, reason: string, exceptSessionId?: number): Promise<void> {
    const qb = em
      .createQueryBuilder()
      .update(Session)
      .set({ revokedAt: this.clock(), revokedReason: reason })
      .where('user_id = :userId', { userId })
      .andWhere('revoked_at IS NULL');
    if (exceptSessionId !== undefined) qb.andWhere('id <> :exceptSessionId', { exceptSessionId });
    await qb.execute();
  }
}
