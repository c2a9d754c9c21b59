/**
 * The buttons under a result (shared/telegram/result-buttons.ts). Each acts only on the presser's
 * own generation: a forwarded result's buttons pressed by someone else find nothing (as the API
 * answers 404) and run nothing.
 * - Again runs the same request (model, prompt, options; a new seed) as a new generation, directly: its price
 *   is on the button, and the pipeline refuses what the balance cannot pay, with buttons. Its
 *   idempotency key is the source generation's (`tg-again-<id>`): one result's Again makes one
 *   generation, however often or fast it is pressed (the new result has its own Again); after
 *   a failed run (nothing charged) it works again, under a key naming the failed one.
 * - A related tool (upscale, remove the background) runs on the result picture, likewise once
 *   per result and tool.
 * - Change prompt opens the dialog that made it with the same model and options: only the prompt
 *   is asked, then the price is confirmed as usual.
 */
import type { Bot } from 'grammy';
import type { Generation } from '../../shared/db/entities';
import { AppError } from '../../shared/errors';
import { DIALOG_OF_CATEGORY, parseResultButton, RESULT_BUTTON_PATTERN, relatedToolModel } from '../../shared/telegram/result-buttons';
import { RESULT_TEXTS } from '../../shared/telegram/result-texts';
import type { BotContext, BotServices } from '../context';
import type { DialogPreset } from '../dialogs/media';

/** Failed runs after which a result's button stops trying (each failure was free, but enough is enough). */
const MAX_RETRIES_PER_BUTTON = 5;

export function registerResults(bot: Bot<BotContext>, services: BotServices): void {
  const { generations, catalog, config } = services.container;

  /** The presser's own completed generation, or null (someone else's, hidden, or gone). */
  async function ownResult(userId: number, id: number): Promise<Generation | null> {
    try {
      const generation = await generations.get(userId, id);
      return generation.status === 'completed' ? generation : null;
    } catch (error) {
      if (error instanceof AppError && error.code === 'not_found') return null;
      throw error;
    }
  }

  /** The options it was made with, less its seed: a new generation draws its own (a new variation). */
  async function paramsOf(generation: Generation): Promise<Record<string, unknown>> {
    const { seed: _seed, ...params } = (await generations.requestOf(generation)).params;
    return params;
  }

  /**
   * The idempotency key of a button's next run: `base`, or after a run under it failed (nothing
   * charged) `base:<failed id>`, so the button works again; two quick presses compute the same key.
   * `started`: a run under it is under way or done (and announced), so nothing is started again.
   */
  async function keyFor(userId: number, base: string): Promise<{ key: string; started: boolean }> {
    let key = base;
    for (let failures = 0; failures < MAX_RETRIES_PER_BUTTON; failures++) {
      const existing = await generations.findIdempotent(userId, key);
      if (!existing) return { key, started: false };
      if (existing.status !== 'failed') return { key, started: await services.alreadyStarted(userId, key) };
      key = `${base}:${existing.id}`;
    }
    return { key, started: true };
  }

  bot.callbackQuery(RESULT_BUTTON_PATTERN, async (ctx) => {
    const a = services.account(ctx);
    const words = RESULT_TEXTS[a.language];
    const button = parseResultButton(ctx.callbackQuery.data);
    const generation = button ? await ownResult(a.user.id, button.id) : null;
    if (!button || !generation || !ctx.from || !ctx.chat) {
      await ctx.answerCallbackQuery({ text: words.notFound, show_alert: true });
      return;
    }
    const chatId = String(ctx.chat.id);
    if (button.action === 'prompt') {
      const dialog = DIALOG_OF_CATEGORY[generation.category];
      if (!dialog) return void (await ctx.answerCallbackQuery({ text: words.notFound, show_alert: true }));
      await ctx.answerCallbackQuery();
      const params: DialogPreset['params'] = {};
      for (const [name, value] of Object.entries(await paramsOf(generation))) if (typeof value === 'string' || typeof value === 'number') params[name] = value;
      await ctx.conversation.exitAll();
      await ctx.conversation.enter(dialog, { slug: generation.modelSlug, params } satisfies DialogPreset);
      return;
    }
    const { key, started } = await keyFor(a.user.id, button.action === 'again' ? `tg-again-${generation.id}` : `tg-${button.tool}-${generation.id}`);
    if (started) {
      await ctx.answerCallbackQuery({ text: words.alreadyStarted });
      return;
    }
    if (button.action === 'again') {
      await ctx.answerCallbackQuery();
      const prompt = generation.prompt ? { prompt: generation.prompt } : {};
      await services.startMedia(ctx.from, chatId, { model: generation.modelSlug, ...prompt, params: await paramsOf(generation), topLevel: {} }, key);
      return;
    }
    const model = relatedToolModel(catalog, a.plan, button.tool);
    if (!model || !generation.resultKey) {
      await ctx.answerCallbackQuery({ text: a.texts.noToolModel, show_alert: true });
      return;
    }
    await ctx.answerCallbackQuery();
    // Said before it starts, as for a photo sent: this message reports the result.
    const status = await ctx.api.sendMessage(chatId, a.texts.working[button.tool]);
    const imageUrl = `${config.publicBaseUrl}/files/${generation.resultKey}`;
    await services.startMedia(ctx.from, chatId, { model: model.slug, params: { image_url: imageUrl }, topLevel: {} }, key, status.message_id);
  });
}
