/**
 * Telegram Stars: /buy (and the menu's button) lists the token packs and plans with their prices;
 * a pack's button sends an invoice in XTR, a plan's button a subscription invoice link (30 days).
 * The pre-checkout query is answered here, in the update handler, from the database alone
 * (Telegram cancels the purchase after 10 s without an answer); `successful_payment` credits
 * through the payments core, once per charge id whichever process gets the update and however
 * often; `refunded_payment` reverses once. /paysupport says how to get help and refunds.
 *
 * The payment handlers are registered before the dialogs: a person in the middle of a dialog
 * who pays must still be credited, not told to "send the description as text".
 */
import { Bot, InlineKeyboard } from 'grammy';
import { AppError } from '../../shared/errors';
import { STARS_CURRENCY, SUBSCRIPTION_PERIOD_SECONDS, TelegramStars } from '../../shared/payments/stars';
import type { Product } from '../../shared/payments/products';
import { textsFor, Texts } from '../../shared/telegram/texts';
import type { BotContext, BotServices } from '../context';

export interface StarsViews {
  showOffers(ctx: BotContext): Promise<void>;
}

function starsOf(services: BotServices): TelegramStars {
  const { payments, products, users, log } = services.container;
  return new TelegramStars(payments, products, users, log);
}

/** The payment updates: before the dialogs (see the header). */
export function registerStarsPayments(bot: Bot<BotContext>, services: BotServices): void {
  const stars = starsOf(services);
  const { log, plans, users } = services.container;

  bot.on('pre_checkout_query', async (ctx) => {
    const query = ctx.preCheckoutQuery;
    let texts: Texts | undefined;
    try {
      const account = services.account(ctx);
      texts = account.texts;
      const answer = await stars.checkout(account.user.id, query);
      if (answer.ok) {
        await ctx.answerPreCheckoutQuery(true);
        return;
      }
      log.info({ reason: answer.reason, payload: query.invoice_payload }, 'Stars pre-checkout refused');
      await ctx.answerPreCheckoutQuery(false, { error_message: texts.stars.refused[answer.reason] });
    } catch (error) {
      // Refused rather than left unanswered: an unanswered query fails the same way 10 s later.
      log.error({ err: error, payload: query.invoice_payload }, 'Stars pre-checkout failed');
      await ctx.answerPreCheckoutQuery(false, { error_message: (texts ?? textsFor(ctx.from.language_code)).somethingWrong });
    }
  });

  bot.on('message:successful_payment', async (ctx) => {
    const paid = ctx.message.successful_payment;
    const settled = await stars.settle(paid, ctx.from.id, ctx.api);
    switch (settled.status) {
      case 'credited': {
        const { user, payment } = settled;
        const texts = textsFor(user.language);
        const balance = user.subscriptionTokens + user.bonusTokens;
        log.info({ charge: paid.telegram_payment_charge_id, paymentId: payment.id, product: settled.product.id }, 'Stars payment credited');
        if (payment.kind === 'plan' && payment.plan && payment.planUntil) {
          await ctx.reply(texts.stars.paidPlan(plans.get(users.effectivePlan(user)).displayName, payment.planUntil.toISOString().slice(0, 10), balance, settled.renewal));
        } else {
          await ctx.reply(texts.stars.paidTokens(payment.tokens, balance));
        }
        return;
      }
      case 'duplicate':
        // Redelivered (or handled by another process at the same moment): credited and answered once already.
        log.info({ charge: paid.telegram_payment_charge_id }, 'Stars payment delivered again: nothing more credited');
        return;
      case 'refunded_downgrade':
        if (!settled.alreadyRefunded) await ctx.reply(services.account(ctx).texts.stars.refundedDowngrade(plans.get(settled.product.plan).displayName));
        return;
      case 'not_credited':
        await ctx.reply(services.account(ctx).texts.stars.notCredited);
        return;
    }
  });

  // Telegram tells the chat when a charge was refunded (by `admin refund-stars` or anything else
  // holding the token): its payment is reversed, once.
  bot.on('message:refunded_payment', async (ctx) => {
    const refunded = ctx.message.refunded_payment;
    const outcome = await stars.reverse(refunded.telegram_payment_charge_id);
    log.info({ charge: refunded.telegram_payment_charge_id, status: outcome.status }, 'Stars refund noticed');
  });
}

/** /buy, its buttons, /paysupport. */
export function registerStarsShop(bot: Bot<BotContext>, services: BotServices): StarsViews {
  const stars = starsOf(services);
  const { plans, config } = services.container;

  function productName(product: Product): string {
    return product.kind === 'token_pack' ? product.displayName : plans.get(product.plan).displayName;
  }

  async function showOffers(ctx: BotContext): Promise<void> {
    const texts = services.account(ctx).texts.stars;
    const { packs, plans: planProducts } = stars.offers();
    if (packs.length + planProducts.length === 0) {
      await ctx.reply(texts.nothingForSale);
      return;
    }
    const packLines = packs.map((p) => ({ id: p.id, name: p.displayName, tokens: p.tokens, stars: p.priceStars }));
    const planLines = planProducts.map((p) => ({ id: p.id, name: plans.get(p.plan).displayName, tokens: plans.get(p.plan).tokenLimit, stars: p.priceStars }));
    const keyboard = new InlineKeyboard();
    for (const line of packLines) keyboard.text(texts.packButton(line), `buy:${line.id}`).row();
    for (const line of planLines) keyboard.text(texts.planButton(line), `buy:${line.id}`).row();
    await ctx.reply(texts.shop({ packs: packLines, plans: planLines }), { reply_markup: keyboard });
  }

  async function sendInvoice(ctx: BotContext, productId: string): Promise<void> {
    const account = services.account(ctx);
    const texts = account.texts.stars;
    let spec;
    try {
      spec = stars.invoiceFor(account.user, productId);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      if (error.code === 'plan_downgrade_not_allowed') return void (await ctx.reply(texts.refused.downgrade));
      if (error.code === 'not_found') return void (await ctx.reply(texts.refused.product_gone));
      throw error;
    }
    const { product, payload } = spec;
    if (product.kind === 'token_pack') {
      const title = texts.packTitle(product.displayName);
      await ctx.replyWithInvoice(title, texts.packDescription(product.tokens), payload, STARS_CURRENCY, [{ label: title, amount: spec.stars }], {
        // Stars need no payment provider: the token is empty.
        provider_token: '',
      });
      return;
    }
    const plan = plans.get(product.plan);
    const title = texts.planTitle(plan.displayName);
    const link = await ctx.api.createInvoiceLink(title, texts.planDescription(plan.displayName, plan.tokenLimit), payload, '', STARS_CURRENCY, [{ label: title, amount: spec.stars }], {
      subscription_period: SUBSCRIPTION_PERIOD_SECONDS,
    });
    await ctx.reply(texts.subscribeOffer(productName(product), spec.stars), { reply_markup: new InlineKeyboard().url(texts.subscribeButton(spec.stars), link) });
  }

  bot.command('buy', showOffers);
  bot.callbackQuery(/^buy:([a-z0-9][a-z0-9_-]{0,47})$/, async (ctx) => {
    await ctx.answerCallbackQuery();
    await sendInvoice(ctx, ctx.match[1] ?? '');
  });
  bot.command('paysupport', async (ctx) => {
    await ctx.reply(services.account(ctx).texts.stars.paySupport(config.telegram.paymentsSupport ?? null));
  });
  return { showOffers };
}
