/** What the Telegram Stars suites share: getting an invoice out of the bot, and the payments of a charge. */
import { Payment } from '../../shared/db/entities';
import type { TestApp } from './app';
import type { FakeTelegram, TgUser } from './fake-telegram';
import type { Invoice } from './fake-telegram-stars';

/** Presses the /buy button of `productId` and resolves with the invoice the bot made (sent, or as a link). */
export async function invoiceFor(tg: FakeTelegram, person: TgUser, productId: string): Promise<Invoice> {
  const before = tg.stars.invoices.length;
  tg.press(person, `buy:${productId}`);
  return tg.waitFor(() => tg.stars.invoices.slice(before).find((i) => i.payload.startsWith(`s1:${productId}:`)));
}

/** The payment rows of a Telegram charge. */
export function paymentsOfCharge(app: TestApp, chargeId: string): Promise<Payment[]> {
  return app.container.db.repo(Payment).findBy({ provider: 'telegram', externalId: chargeId });
}
