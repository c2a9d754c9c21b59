/**
 * Refusals with a way forward. A refusal that only says "no" is a dead end; each of these carries
 * the buttons that fix it: the balance (which shows the plan, the tokens and when the request
 * windows start over), buying tokens or a plan with Stars (/buy), and a code to redeem; for a
 * price the balance cannot cover, a cheaper option of the same dialog.
 */
import { InlineKeyboard } from 'grammy';
import { AppError } from '../shared/errors';
import { refusalText } from '../shared/telegram/refusal';
import type { Texts } from '../shared/telegram/texts';

/** What opens a feature or a model the plan lacks: buying a plan (Stars), a code, the balance. */
export function upgradeKeyboard(texts: Texts): InlineKeyboard {
  const b = texts.refusalButtons;
  return new InlineKeyboard().text(texts.menu.buy, 'menu:buy').text(b.redeem, 'menu:redeem').row().text(b.balance, 'menu:balance');
}

/** The buttons for a refusal of this code (none for refusals no button can fix). */
export function refusalKeyboard(code: string, texts: Texts, retryDialog?: string): InlineKeyboard | undefined {
  const b = texts.refusalButtons;
  switch (code) {
    case 'insufficient_tokens': {
      const keyboard = new InlineKeyboard();
      if (retryDialog) keyboard.text(b.cheaper, `menu:${retryDialog}`).row();
      return keyboard.text(texts.menu.buy, 'menu:buy').text(b.redeem, 'menu:redeem').row().text(b.balance, 'menu:balance');
    }
    case 'insufficient_plan':
      return upgradeKeyboard(texts);
    case 'rate_limited':
      return new InlineKeyboard().text(b.balance, 'menu:balance');
    default:
      return undefined;
  }
}

/** A refused request as a message with its buttons, or null when it is not a refusal (a bug: rethrow). */
export function refusalMessage(error: unknown, texts: Texts, now: Date, retryDialog?: string): { text: string; reply_markup?: InlineKeyboard } | null {
  const text = refusalText(error, texts, now);
  if (text === null) return null;
  const keyboard = error instanceof AppError ? refusalKeyboard(error.code, texts, retryDialog) : undefined;
  return keyboard ? { text, reply_markup: keyboard } : { text };
}
