/**
 * The image, video, music and voice dialogs (@grammyjs/conversations): pick a model the plan
 * allows (the image dialog skips this when /settings chose one), take the prompt (the text to
 * speak), offer the options the model has (size or aspect ratio, duration, voice) each with its
 * price, and show the catalog's price against the balance before confirming. The confirmation's
 * update id keys the generation, so a redelivered press is not charged twice. A result's Change
 * prompt button opens the dialog again with its model and options: only the prompt is asked.
 */
import { InlineKeyboard } from 'grammy';
import { freeBalance } from '../../shared/billing';
import { AppError } from '../../shared/errors';
import { Texts, TEXTS } from '../../shared/telegram/texts';
import type { BotServices, Dialog, DialogContext } from '../context';
import { lockedFeatures, lockedText } from '../menu';
import { refusalKeyboard, refusalMessage, upgradeKeyboard } from '../refusals';
import { formatParam, MEDIA_KINDS, MediaKind, mediaOptions, modelsFor, optionValue } from '../models';

/** Waits for a button of this dialog; its ✖️ button leaves it. The answer's update id keys the generation. */
async function choose(conversation: Dialog, texts: Texts, prefix: string, wanted: string): Promise<{ value: string; updateId: number }> {
  for (;;) {
    const answer = await conversation.waitFor('callback_query:data', { otherwise: (c) => c.reply(texts.useButtons) });
    const data = answer.callbackQuery.data;
    await answer.answerCallbackQuery(data === `${prefix}:short` ? { text: texts.unaffordableToast, show_alert: true } : undefined);
    if (data === `${prefix}:x`) {
      await answer.reply(texts.cancelled);
      return conversation.halt();
    }
    if (data.startsWith(wanted)) return { value: data.slice(wanted.length), updateId: answer.update.update_id };
    // An option the balance cannot cover: say so on the button and keep waiting for another.
    if (data === `${prefix}:short`) continue;
    await answer.reply(texts.useButtons);
  }
}

/** What a result's Change prompt button keeps: the model and the options it was made with. */
export interface DialogPreset {
  slug: string;
  params: Record<string, string | number>;
}

export function mediaDialog(services: BotServices, kind: MediaKind): (conversation: Dialog, ctx: DialogContext, preset?: DialogPreset) => Promise<void> {
  const { catalog, generations, plans, clock } = services.container;
  const { prefix, category } = MEDIA_KINDS[kind];

  return async function dialog(conversation, ctx, preset) {
    const from = ctx.from;
    const chatId = ctx.chat?.id;
    if (!from || chatId === undefined) return;
    const info = await conversation.external(async () => {
      const a = await services.accountOf(from);
      const prefs = kind === 'image' ? await services.preferences.load(chatId) : null;
      const models = modelsFor(catalog, a.plan, category).map((l) => ({ slug: l.model.slug, name: l.model.name, min: l.minTokenCost, max: l.maxTokenCost }));
      const preset = prefs?.imageModel && models.some((m) => m.slug === prefs.imageModel) ? prefs.imageModel : null;
      // A voice message needs OGG (Opus when the engine makes it); an image takes the chosen format.
      const unlocking = models.length === 0 ? (lockedFeatures(catalog, plans, a.plan)[kind] ?? null) : null;
      return { language: a.language, models, preset, unlocking, format: kind === 'voice' ? 'ogg' : (prefs?.imageFormat ?? null) };
    });
    const texts = TEXTS[info.language];
    const words = texts.dialogs[kind];
    if (info.models.length === 0) {
      if (info.unlocking) await ctx.reply(lockedText(texts, kind, info.unlocking), { reply_markup: upgradeKeyboard(texts) });
      else await ctx.reply(words.noModel);
      return;
    }
    // A preset model the plan no longer allows is picked again, like any other.
    const kept = preset && info.models.some((m) => m.slug === preset.slug) ? preset : undefined;
    let slug = kept?.slug ?? info.preset;
    if (!slug) {
      const pick = new InlineKeyboard();
      for (const m of info.models) pick.text(`${m.name} · ${texts.tokensRange(m.min, m.max)}`, `${prefix}:m:${m.slug}`).row();
      pick.text(texts.cancel, `${prefix}:x`);
      await ctx.reply(words.pickModel, { reply_markup: pick });
      slug = (await choose(conversation, texts, prefix, `${prefix}:m:`)).value;
    }
    const chosenSlug = slug;

    await ctx.reply(words.askPrompt);
    const promptCtx = await conversation.waitFor('message:text', { otherwise: (c) => c.reply(words.sendText) });
    // In a group the answer mentions the bot; the mention is not part of the prompt.
    const botName = promptCtx.me.username;
    const prompt = (botName ? promptCtx.message.text.replace(new RegExp(`@${botName}\\b`, 'gi'), '') : promptCtx.message.text).trim();

    const setup = await conversation.external(() => {
      const model = catalog.find(chosenSlug);
      if (!model || kept) return { options: [], format: null };
      return { options: mediaOptions(model, kind), format: formatParam(model, info.format) };
    });
    const params: Record<string, string | number> = { ...(kept?.params ?? {}) };
    if (setup.format) params.format = setup.format;
    for (const option of setup.options) {
      const priced = await conversation.external(async () => {
        const { user } = await services.accountOf(from);
        const balance = freeBalance(user);
        return option.values.map((value) => {
          try {
            const price = generations.price({ model: chosenSlug, params: { ...params, [option.param]: value }, topLevel: {} }, { account: user }).price;
            return { value, price, affordable: price <= balance };
          } catch {
            return { value, price: null, affordable: true };
          }
        });
      });
      const keyboard = new InlineKeyboard();
      for (const v of priced) {
        const label = texts.optionLabel(option.param, v.value) + (v.price === null ? '' : ` · ${texts.tokensRange(v.price, v.price)}`);
        // Marked before confirming, not refused after: the balance cannot cover this one.
        if (v.affordable) keyboard.text(label, `${prefix}:o:${v.value}`).row();
        else keyboard.text(texts.unaffordable(label), `${prefix}:short`).row();
      }
      keyboard.text(texts.cancel, `${prefix}:x`);
      await ctx.reply(texts.pickOption(option.param), { reply_markup: keyboard });
      const value = optionValue(option, (await choose(conversation, texts, prefix, `${prefix}:o:`)).value);
      if (value !== undefined) params[option.param] = value;
    }

    const quote = await conversation.external(async () => {
      const a = await services.accountOf(from);
      try {
        const { model, price } = generations.price({ model: chosenSlug, prompt, params, topLevel: {} }, { plan: a.plan, whole: true, account: a.user });
        const balance = freeBalance(a.user);
        return { ok: true as const, price, balance, name: model.name };
      } catch (error) {
        const refusal = refusalMessage(error, texts, clock(), kind);
        if (refusal === null) throw error;
        return { ok: false as const, code: error instanceof AppError ? error.code : '', text: refusal.text };
      }
    });
    if (!quote.ok) {
      // The keyboard is rebuilt here: a conversation's external() results are replayed as JSON.
      const keyboard = refusalKeyboard(quote.code, texts, kind);
      await ctx.reply(quote.text, keyboard ? { reply_markup: keyboard } : {});
      return;
    }
    if (quote.price > quote.balance) {
      // No Start button for what the balance cannot pay: the ways forward instead.
      await ctx.reply(texts.insufficientTokens(quote.price, quote.balance), { reply_markup: refusalKeyboard('insufficient_tokens', texts, kind) });
      return;
    }
    const confirm = new InlineKeyboard().text(texts.confirm, `${prefix}:go`).text(texts.cancel, `${prefix}:x`);
    await ctx.reply(texts.confirmPrice({ model: quote.name, price: quote.price, balance: quote.balance }), { reply_markup: confirm });
    const confirmed = await choose(conversation, texts, prefix, `${prefix}:go`);
    const key = services.idempotencyKey(ctx.me, confirmed.updateId);
    await conversation.external(() => services.startMedia(from, String(chatId), { model: chosenSlug, prompt, params, topLevel: {} }, key));
  };
}
