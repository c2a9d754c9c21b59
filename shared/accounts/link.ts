/**
 * Connecting a Telegram account to a web account, so one balance serves both: `/link` in the
 * chat gives a one-time code (10 minutes); POST /api/v2/auth/link {code} with the web session
 * moves the Telegram identity to the web account. A Telegram-only account that already has
 * generations or bonus tokens is not merged silently: the link is refused with the reason.
 */
import crypto from 'node:crypto';
import { IsNull } from 'typeorm';
import { addSeconds, Clock } from '../clock';
import type { Database } from '../db/database';
import { Generation, Identity, LedgerEntry, LinkCode, User } from '../db/entities';
import { AppError } from '../errors';
import { sha256Hex } from '../auth/secrets';

export const LINK_CODE_TTL_SECONDS = 600;
const ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';

function newCode(): string {
  return Array.from(crypto.randomBytes(8), (b) => ALPHABET[b % ALPHABET.length]).join('');
}

export class AccountLinks {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  /** A fresh code for the Telegram-side account `userId`. */
  async createCode(userId: number): Promise<string> {
    const code = newCode();
    const now = this.clock();
    await this.db.transaction((em) =>
      em.getRepository(LinkCode).insert({ userId, codeHash: sha256Hex(code), createdAt: now, expiresAt: addSeconds(now, LINK_CODE_TTL_SECONDS), usedAt: null }),
    );
    return code;
  }

  /** Attaches the code's Telegram identity to `webUserId`; returns the Telegram username. */
  async redeem(webUserId: number, rawCode: string): Promise<void> {
    const code = rawCode.trim().toUpperCase().replace(/[\s-]/g, '');
    const now = this.clock();
    await this.db.transaction(async (em) => {
      const row = await em.getRepository(LinkCode).findOneBy({ codeHash: sha256Hex(code) });
      if (!row || row.usedAt || row.expiresAt.getTime() <= now.getTime()) {
        throw AppError.validation('code', 'is unknown or has expired; send /link to the bot for a new one');
      }
      const claimed = await em.getRepository(LinkCode).update({ id: row.id, usedAt: IsNull() }, { usedAt: now });
      if (claimed.affected !== 1) throw AppError.validation('code', 'was already used');
      if (row.userId === webUserId) return;
      const identity = await em.getRepository(Identity).findOneBy({ userId: row.userId, kind: 'messenger' });
      if (!identity) throw AppError.validation('code', 'belongs to an account without a Telegram identity');
      if (await em.getRepository(Identity).countBy({ userId: webUserId, kind: 'messenger' })) {
        throw new AppError('identity_conflict', { detail: 'This account is already connected to a Telegram account', extra: { reason: 'already_linked' } });
      }
      const telegramUser = await em.getRepository(User).findOneByOrFail({ id: row.userId });
      if ((await em.getRepository(Generation).countBy({ userId: row.userId })) > 0 || telegramUser.bonusTokens > 0) {
        throw new AppError('identity_conflict', {
          detail: 'The Telegram account already has generations or bonus tokens; accounts are not merged. Contact support to move them.',
          extra: { reason: 'telegram_account_in_use' },
        });
      }
      await em.getRepository(Identity).update({ id: identity.id }, { userId: webUserId });
      await em.getRepository(User).update({ id: webUserId }, { messengerUsername: telegramUser.messengerUsername, updatedAt: now });
      // The emptied Telegram-only account goes; its ledger (the signup allowance) stays anonymised.
      await em.getRepository(LedgerEntry).update({ userId: row.userId }, { userId: null });
      await em.getRepository(User).delete({ id: row.userId });
    });
  }
}
