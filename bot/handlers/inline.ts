/**
 * Inline mode: `@bot prompt` in any chat. The query is answered with offers, not with work: a chat
 * answer and an image, each with its model and exact price (the pricing entry point) in the
 * description. Showing costs nothing; only the result the person sends is generated and charged,
 * when Telegram reports the choice (`chosen_inline_result`: inline feedback must be on in
 * BotFather). Telegram sends that update only for the person who typed the query and chose the
 * result, so it is billed to them; the sent message's `inline_message_id` is the idempotency key,
 * so a redelivered choice is the same generation. The sent placeholder carries a button (without
 * a keyboard Telegram gives no `inline_message_id`) and is edited by the worker when the generation
 * ends (shared/telegram/inline-messages.ts). A query that can only be refused (no tokens, the
 * plan's request limit, no model) is answered with one result saying why.
 */
import type { Bot } from 'grammy';
import type { InlineKeyboardMarkup, InlineQueryResultArticle } from 'grammy/types';
import { freeBalance } from '../../shared/billing';
import type { CatalogModel } from '../../shared/catalog/types';
import type { GenerateRequest } from '../../shared/generation/input';
import { chatModel, modelsFor } from '../../shared/telegram/chat-turn';
import { INLINE_TEXTS, InlineTexts } from '../../shared/telegram/inline-texts';
import { editInlineMessage, inlineIdempotencyKey, InlineKind, InlineMessages } from '../../shared/telegram/inline-messages';
import { refusalText } from '../../shared/telegram/refusal';
import type { Account, BotContext, BotServices } from '../context';

/**
 * Seconds Telegram may show the same answer to the same person's same query again. Short: the
 * description shows the balance, which each generation changes. Personal: prices depend on the
 * person's plan and balance.
 */
export const INLINE_CACHE_SECONDS = 10;
/** Telegram's limit on a result id. */
const RESULT_ID_BYTES = 64;
const START_PARAMETER = 'inline';
const KIND_OF_PREFIX: Record<string, InlineKind> = { c: 'chat', i: 'image' };

interface Offer {
  kind: InlineKind;
  model: CatalogModel;
  price: number;
}

function requestFor(kind: InlineKind, model: CatalogModel, prompt: string): GenerateRequest {
  return kind === 'chat' ? { model: model.slug, messages: [{ role: 'user', content: prompt }], topLevel: {} } : { model: model.slug, prompt, topLevel: {} };
}

function placeholderKeyboard(texts: InlineTexts, username: string): InlineKeyboardMarkup {
  return { inline_keyboard: [[{ text: texts.openBotButton, url: `https://t.me/${username}?start=${START_PARAMETER}` }]] };
}

export function registerInline(bot: Bot<BotContext>, services: BotServices): void {
  const { container } = services;
  const { catalog, generations, generationLimiter, clock, log } = container;
  const inlineMessages = new InlineMessages(services.store);

  /** The models an inline query offers this person: their chat model, and their image model (or the cheapest). */
  async function modelsOf(a: Account, telegramId: number): Promise<Array<{ kind: InlineKind; model: CatalogModel }>> {
    const chats = await services.chats.load(telegramId);
    const chat = chatModel(catalog, a.plan, chats.textModel);
    const images = modelsFor(catalog, a.plan, 'image');
    const preferred = (await services.preferences.load(telegramId)).imageModel;
    const image = images.find((l) => l.model.slug === preferred)?.model ?? images[0]?.model ?? null;
    const models: Array<{ kind: InlineKind; model: CatalogModel }> = [];
    if (chat) models.push({ kind: 'chat', model: chat });
    if (image) models.push({ kind: 'image', model: image });
    return models;
  }

  /** Why nothing could run now (the plan's request windows are full), or null. */
  async function rateRefusal(a: Account): Promise<string | null> {
    const { hour, day } = await generationLimiter.snapshot(a.user.id, a.plan);
    const full = [hour, day].filter((w) => w !== null && w.remaining === 0);
    if (full.length === 0) return null;
    const seconds = Math.max(...full.map((w) => w?.resetSeconds ?? 60));
    const at = new Date(clock().getTime() + seconds * 1000).toISOString().slice(11, 16);
    return a.texts.rateLimited(seconds, at);
  }

  function refusalResult(texts: InlineTexts, text: string, id = 'refused'): InlineQueryResultArticle {
    return { type: 'article', id, title: texts.refusalTitle, description: text, input_message_content: { message_text: text } };
  }

  bot.on('inline_query', async (ctx) => {
    const a = services.account(ctx);
    const texts = INLINE_TEXTS[a.language];
    const prompt = ctx.inlineQuery.query.trim();
    const answer = { cache_time: INLINE_CACHE_SECONDS, is_personal: true };
    if (!prompt) {
      await ctx.answerInlineQuery([], { ...answer, button: { text: texts.hint, start_parameter: START_PARAMETER } });
      return;
    }
    const refuse = (text: string) => ctx.answerInlineQuery([refusalResult(texts, text)], { ...answer, button: { text: texts.openBot, start_parameter: START_PARAMETER } });
    const models = await modelsOf(a, ctx.from.id);
    if (models.length === 0) return void (await refuse(texts.nothingOffered));
    const limited = await rateRefusal(a);
    if (limited) return void (await refuse(limited));

    const balance = freeBalance(a.user);
    const offers: Offer[] = [];
    let refused: string | null = null;
    for (const { kind, model } of models) {
      const id = `${kind === 'chat' ? 'c' : 'i'}:${model.slug}`;
      if (Buffer.byteLength(id) > RESULT_ID_BYTES) continue;
      try {
        const { price } = generations.price(requestFor(kind, model, prompt), { plan: a.plan, whole: true, account: a.user });
        if (price > balance) refused ??= texts.unaffordable(kind, price, balance);
        else offers.push({ kind, model, price });
      } catch (error) {
        // A prompt the model refuses (too long): said, not offered.
        refused ??= refusalText(error, a.texts, clock());
        if (refused === null) throw error;
      }
    }
    if (offers.length === 0) return void (await refuse(refused ?? texts.nothingOffered));
    const keyboard = placeholderKeyboard(texts, ctx.me.username);
    const results: InlineQueryResultArticle[] = offers.map((offer) => ({
      type: 'article',
      id: `${offer.kind === 'chat' ? 'c' : 'i'}:${offer.model.slug}`,
      title: offer.kind === 'chat' ? texts.chatTitle(prompt) : texts.imageTitle(prompt),
      description: texts.priced(offer.model.name, offer.price, balance),
      input_message_content: { message_text: offer.kind === 'chat' ? texts.chatPlaceholder(prompt) : texts.imagePlaceholder(prompt) },
      reply_markup: keyboard,
    }));
    // An option the balance cannot cover stays visible as the refusal it would be.
    if (refused) results.push(refusalResult(texts, refused));
    await ctx.answerInlineQuery(results, answer);
  });

  bot.on('chosen_inline_result', async (ctx) => {
    const chosen = ctx.chosenInlineResult;
    const match = /^([ci]):(.+)$/.exec(chosen.result_id);
    const kind = match ? KIND_OF_PREFIX[match[1] ?? ''] : undefined;
    const slug = match?.[2];
    const inlineMessageId = chosen.inline_message_id;
    // A refusal's result, or a message without a keyboard (no id to edit): nothing to make.
    if (!kind || !slug || !inlineMessageId) return;
    const prompt = chosen.query.trim();
    if (!prompt) return;
    // The person who chose it (Telegram reports a choice only to the bot, for its chooser).
    const a = services.account(ctx);
    const message = { inlineMessageId, kind, language: a.language, prompt };
    const key = inlineIdempotencyKey(ctx.me.id, inlineMessageId);
    let started;
    try {
      started = await generations.start({ user: a.user, plan: a.plan }, requestFor(kind, generations.model(slug), prompt), {
        idempotencyKey: key,
        source: 'bot',
        runIn: 'background',
        // Where the result goes, recorded before the run is queued; false when a redelivered choice did it already.
        beforeRun: async (generation) => {
          if (await inlineMessages.load(generation.id)) return false;
          await inlineMessages.save(generation.id, message);
          return true;
        },
      });
    } catch (error) {
      // Refused since the offer was shown (the balance spent meanwhile, the limit reached): nothing charged.
      const refusal = refusalText(error, a.texts, clock());
      if (refusal === null) throw error;
      await ctx.api.editMessageTextInline(inlineMessageId, `${prompt}\n\n${refusal}`);
      return;
    }
    const { generation } = started;
    // Pending: the worker runs it and the `bot.inline` job edits the message. A replay that ended
    // was (or is being) delivered by that job.
    if (generation.status === 'pending' || started.replay) return;
    // Ended at once (the content policy): no job was queued for it.
    await editInlineMessage(ctx.api, container.config.publicBaseUrl, message, generation).catch((error: unknown) => {
      log.warn({ err: (error as Error).message, generationId: generation.id }, 'could not edit an inline message');
    });
  });
}
