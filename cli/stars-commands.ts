/**
 * The operator's Telegram Stars commands (admin-commands.ts dispatches to them):
 * `refund-stars` gives a charge's Stars back through the Bot API and reverses its payment once;
 * `reconcile-stars` compares Telegram's Star transactions with the payments table.
 */
import { GrammyError } from 'grammy';
import type { Container } from '../shared/container';
import { reconcileStars, Reconciliation } from '../shared/payments/stars-reconcile';
import { StarsApi, TelegramStars } from '../shared/payments/stars';
import { createTelegramApi } from '../shared/telegram/api';

export class StarsCommandError extends Error {}

function starsApi(container: Container): StarsApi {
  if (!container.config.telegram.botToken) throw new StarsCommandError('TELEGRAM_BOT_TOKEN is not set: Stars are the bot\'s');
  return createTelegramApi(container.config.telegram);
}

/**
 * Refunds `charge` (a `telegram_payment_charge_id`) to the person who paid it: the Telegram user
 * of the account credited, or `telegramUserId` for a charge no payment records (never credited).
 */
export async function refundStars(container: Container, charge: string, telegramUserId: number | undefined) {
  const stars = new TelegramStars(container.payments, container.products, container.users, container.log);
  const payer = telegramUserId ?? (await stars.payerOf(charge));
  if (payer === null) throw new StarsCommandError(`no Telegram payment with charge ${charge} is recorded for an account with Telegram: give --telegram-user`);
  try {
    const { telegram, reversal } = await stars.refund(starsApi(container), charge, payer);
    const payment = reversal.status === 'not_found' ? null : reversal.payment;
    return {
      charge_id: charge,
      telegram_user_id: payer,
      telegram,
      reversal: reversal.status,
      payment: payment && {
        id: payment.id,
        user_id: payment.userId,
        product_id: payment.productId,
        status: payment.status,
        tokens: payment.tokens,
        reversed_tokens: payment.reversedTokens,
        shortfall_tokens: payment.shortfallTokens,
        plan: payment.plan,
      },
      ...(reversal.status === 'reversed' && reversal.plan ? { plan_effect: reversal.plan } : {}),
    };
  } catch (error) {
    if (error instanceof GrammyError) throw new StarsCommandError(`Telegram refused the refund (nothing reversed): ${error.description}`);
    throw error;
  }
}

export function reconcile(container: Container): Promise<Reconciliation> {
  return reconcileStars(starsApi(container), container.db);
}
