/** The account, generations and charges of a Telegram user in a test app, by Telegram id. */
import { Generation, Identity, LedgerEntry, User } from '../../shared/db/entities';
import type { TestApp } from './app';

export async function telegramUser(app: TestApp, telegramId: number): Promise<User> {
  const identity = await app.container.db.repo(Identity).findOneByOrFail({ kind: 'messenger', subject: String(telegramId) });
  return app.container.db.repo(User).findOneByOrFail({ id: identity.userId });
}

export async function telegramGenerations(app: TestApp, telegramId: number): Promise<Generation[]> {
  const user = await telegramUser(app, telegramId);
  return app.container.db.repo(Generation).find({ where: { userId: user.id }, order: { id: 'ASC' } });
}

/** The ledger rows of their generations' charges. */
export async function telegramCharges(app: TestApp, telegramId: number): Promise<LedgerEntry[]> {
  const user = await telegramUser(app, telegramId);
  return app.container.db.repo(LedgerEntry).findBy({ userId: user.id, reason: 'generation' });
}
