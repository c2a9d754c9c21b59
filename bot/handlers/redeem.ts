/**
 * /redeem: `/redeem CODE` redeems at once; `/redeem` alone asks for the code (a short dialog that
 * /cancel or any other command leaves). The redemption is the API's (shared/payments): the same
 * one use per account, the same attempt limit; every answer is in the person's language.
 */
import type { Bot } from 'grammy';
import { createConversation } from '@grammyjs/conversations';
import type { User as TelegramUser } from 'grammy/types';
import { AppError } from '../../shared/errors';
import type { Texts } from '../../shared/telegram/texts';
import { TEXTS } from '../../shared/telegram/texts';
import type { BotContext, BotServices, Dialog, DialogContext } from '../context';

const DIALOG = 'redeem';

/** What a refused redemption says; null for anything else (a bug, answered as one). */
function refusal(error: unknown, texts: Texts, now: Date): string | null {
  if (!(error instanceof AppError)) return null;
  switch (error.code) {
    case 'redemption_code_invalid':
      return texts.redeemRefused.invalid;
    case 'redemption_code_expired':
      return texts.redeemRefused.expired;
    case 'redemption_code_spent':
      return texts.redeemRefused.spent;
    case 'redemption_code_already_redeemed':
      return texts.redeemRefused.alreadyRedeemed;
    case 'plan_downgrade_not_allowed':
      return texts.redeemRefused.downgrade;
    case 'rate_limited': {
      const seconds = Math.max(1, Number(error.extra.retry_after ?? 3600));
      return texts.redeemTooManyAttempts(seconds, new Date(now.getTime() + seconds * 1000).toISOString().slice(11, 16));
    }
    default:
      return null;
  }
}

/** Redeems `code` for the Telegram user `from`: the answer to send. */
async function redeemFor(services: BotServices, from: TelegramUser, code: string): Promise<string> {
  const { redemptionCodes, plans, users, clock } = services.container;
  const account = await services.accountOf(from);
  const texts = account.texts;
  try {
    const { payment, user } = await redemptionCodes.redeem(account.user.id, code);
    const balance = user.subscriptionTokens + user.bonusTokens;
    if (payment.kind === 'plan' && payment.planUntil) {
      return texts.redeemedPlan(plans.get(users.effectivePlan(user)).displayName, payment.planUntil.toISOString().slice(0, 10), balance);
    }
    return texts.redeemedTokens(payment.tokens, balance);
  } catch (error) {
    const text = refusal(error, texts, clock());
    if (text === null) throw error;
    return text;
  }
}

/** The code as sent: in a group, without the mention of the bot. */
function codeFrom(text: string, botUsername: string | undefined): string {
  return (botUsername ? text.replace(new RegExp(`@${botUsername}\\b`, 'gi'), '') : text).trim();
}

function redeemDialog(services: BotServices): (conversation: Dialog, ctx: DialogContext) => Promise<void> {
  return async function dialog(conversation, ctx) {
    const from = ctx.from;
    if (!from) return;
    const language = await conversation.external(async () => (await services.accountOf(from)).language);
    const texts = TEXTS[language];
    await ctx.reply(texts.redeemAsk);
    const answer = await conversation.waitFor('message:text', { otherwise: (c) => c.reply(texts.redeemSendText) });
    const code = codeFrom(answer.message.text, answer.me.username);
    const reply = await conversation.external(() => redeemFor(services, from, code));
    await answer.reply(reply);
  };
}

export function registerRedeem(bot: Bot<BotContext>, services: BotServices): void {
  bot.use(createConversation<BotContext, DialogContext>(redeemDialog(services), DIALOG));
  bot.command('redeem', async (ctx) => {
    const code = codeFrom(ctx.match, ctx.me.username);
    if (!code || !ctx.from) {
      await ctx.conversation.enter(DIALOG);
      return;
    }
    await ctx.reply(await redeemFor(services, ctx.from, code));
  });
  // The button refusals offer ("🎟 Redeem a code").
  bot.callbackQuery('menu:redeem', async (ctx) => {
    await ctx.answerCallbackQuery();
    await ctx.conversation.enter(DIALOG);
  });
}
