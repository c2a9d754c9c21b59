/**
 * E-mail and password: register, log in, change, forget and reset. Unknown e-mails and wrong
 * passwords look the same from outside (same error, same scrypt work).
 */
import type { EntityManager } from 'typeorm';
import { IsNull } from 'typeorm';
import { addSeconds, Clock } from '../clock';
import type { Database } from '../db/database';
import { Identity, PasswordReset, User } from '../db/entities';
import { AppError } from '../errors';
import type { Logger } from '../log';
import type { Mailer } from '../mail';
import type { Users } from '../accounts/users';
import { decoyPasswordHash, hashPassword, verifyPassword } from './passwords';
import { randomToken, sha256Hex } from './secrets';
import type { ClientInfo, Sessions, StartedSession } from './sessions';
import { isDuplicateKey } from '../db/errors';

export const RESET_TOKEN_TTL_SECONDS = 3600;

export interface SignedIn extends StartedSession {
  user: User;
}

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}


export class PasswordAccounts {
  constructor(
    private readonly db: Database,
    private readonly users: Users,
    private readonly sessions: Sessions,
    private readonly mailer: Mailer,
    private readonly clock: Clock,
    private readonly publicBaseUrl: string,
    private readonly log: Logger,
  ) {}

  async register(input: { email: string; password: string; name?: string }, client: ClientInfo): Promise<SignedIn> {
    const email = normalizeEmail(input.email);
    const passwordHash = await hashPassword(input.password);
    try {
      return await this.db.transaction(async (em) => {
        const taken =
          (await em.getRepository(User).countBy({ email })) > 0 ||
          (await em.getRepository(Identity).countBy({ kind: 'email', subject: email })) > 0;
        if (taken) throw new AppError('email_taken');
        const user = await this.users.create(em, {
          name: input.name?.trim() || email.split('@')[0] || email,
          email,
          identity: { kind: 'email', subject: email, passwordHash },
        });
        const started = await this.sessions.start(em, user.id, client);
        return { user, ...started };
      });
    } catch (error) {
      // Two registrations racing for one address: the unique index decides.
      if (isDuplicateKey(error)) throw new AppError('email_taken');
      throw error;
    }
  }

  async login(input: { email: string; password: string }, client: ClientInfo): Promise<SignedIn> {
    const email = normalizeEmail(input.email);
    const identity = await this.db.repo(Identity).findOneBy({ kind: 'email', subject: email });
    const ok = await verifyPassword(input.password, identity?.passwordHash ?? (await decoyPasswordHash()));
    if (!identity || !ok) throw new AppError('invalid_credentials');
    return this.db.transaction(async (em) => {
      const user = await em.getRepository(User).findOneByOrFail({ id: identity.userId });
      const started = await this.sessions.start(em, user.id, client);
      return { user, ...started };
    });
  }

  /** Changes the password and revokes every other session of the account. */
  async changePassword(userId: number, currentSessionId: number | null, current: string, next: string): Promise<void> {
    const identity = await this.db.repo(Identity).findOneBy({ userId, kind: 'email' });
    if (!identity?.passwordHash) {
      throw new AppError('validation_failed', {
        detail: 'This account has no password; it signs in through the messenger or the identity provider',
        errors: [{ field: 'current_password', message: 'account has no password' }],
      });
    }
    if (!(await verifyPassword(current, identity.passwordHash))) throw new AppError('wrong_password');
    const passwordHash = await hashPassword(next);
    await this.db.transaction(async (em) => {
      await em.getRepository(Identity).update({ id: identity.id }, { passwordHash });
      await this.sessions.revokeAll(em, userId, 'password_changed', currentSessionId ?? undefined);
      // A link asked for before the change would otherwise undo it within the hour.
      await this.invalidateResetLinks(em, userId);
    });
  }

  /** Sends a reset link when the account exists; answers the same either way. */
  async forgotPassword(emailInput: string): Promise<void> {
    const email = normalizeEmail(emailInput);
    const identity = await this.db.repo(Identity).findOneBy({ kind: 'email', subject: email });
    if (!identity) return;
    const token = randomToken(32);
    const now = this.clock();
    await this.db.transaction((em) =>
      em.getRepository(PasswordReset).insert({
        userId: identity.userId,
        tokenHash: sha256Hex(token),
        createdAt: now,
        expiresAt: addSeconds(now, RESET_TOKEN_TTL_SECONDS),
        usedAt: null,
      }),
    );
    const link = `${this.publicBaseUrl}/reset-password?token=${encodeURIComponent(token)}`;
    try {
      await this.mailer.send({
        to: email,
        subject: 'Reset your gensvc password',
        text: `Someone asked to reset the password of your gensvc account.\n\nTo choose a new password, open:\n${link}\n\nThe link works once, for one hour. If it was not you, ignore this message.`,
      });
    } catch (error) {
      this.log.error({ err: error }, 'could not send the password reset mail');
    }
  }

  /**
   * Sets a new password with a reset token (single use, one hour), revokes every session and
   * every other outstanding reset link of the account (an older link must not undo this reset).
   */
  async resetPassword(token: string, password: string): Promise<void> {
    const passwordHash = await hashPassword(password);
    await this.db.transaction(async (em: EntityManager) => {
      const now = this.clock();
      const reset = await em.getRepository(PasswordReset).findOneBy({ tokenHash: sha256Hex(token) });
      if (!reset || reset.usedAt || reset.expiresAt.getTime() <= now.getTime()) throw new AppError('invalid_reset_token');
      // The identity row first: it serialises two resets (or a reset and a change) of one
      // account, so on MySQL they queue on one lock instead of deadlocking on each other's links.
      await em.getRepository(Identity).update({ userId: reset.userId, kind: 'email' }, { passwordHash });
      const claimed = await em.getRepository(PasswordReset).update({ id: reset.id, usedAt: IsNull() }, { usedAt: now });
      if (claimed.affected !== 1) throw new AppError('invalid_reset_token');
      await this.sessions.revokeAll(em, reset.userId, 'password_reset');
      await this.invalidateResetLinks(em, reset.userId);
    });
  }

  /** Marks every unused reset link of the account as used: none of them works any more. */
  private async invalidateResetLinks(em: EntityManager, userId: number): Promise<void> {
    await em.getRepository(PasswordReset).update({ userId, usedAt: IsNull() }, { usedAt: this.clock() });
  }
}
