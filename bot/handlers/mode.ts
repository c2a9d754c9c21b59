/**
 * Personas (/mode and the menu's 🎭): the assistants marketplace in the chat. The list shows the
 * person's installed chat assistants first, then the marketplace's; picking one installs it (as
 * POST /assistants/:id/install does) and makes it the chat's persona. The chat turn sends it as
 * `assistant_id`, so the pipeline applies its system prompt and defaults exactly as for the API.
 * Picking starts a new conversation (the old one was with someone else); /new keeps the persona.
 */
import { Bot, InlineKeyboard } from 'grammy';
import type { Assistant } from '../../shared/assistants';
import { PERSONA_TEXTS } from '../../shared/telegram/persona-texts';
import type { BotContext, BotServices } from '../context';

/** Buttons in the list: Telegram allows 100; a phone shows about this many comfortably. */
const MAX_PERSONAS = 24;
const MARKETPLACE_PAGE = 100;

export function registerMode(bot: Bot<BotContext>, services: BotServices): { showModes(ctx: BotContext): Promise<void> } {
  const { container, chats } = services;
  const { assistants, catalog } = container;

  const isChatPersona = (a: Assistant): boolean => catalog.find(a.model)?.category === 'text';

  async function showModes(ctx: BotContext): Promise<void> {
    const a = services.account(ctx);
    const texts = PERSONA_TEXTS[a.language];
    if (!ctx.chat) return;
    const state = await chats.load(ctx.chat.id);
    const installed = (await assistants.installed(a.user.id)).map((i) => i.assistant).filter(isChatPersona);
    const market = (await assistants.marketplace({ page: 1, limit: MARKETPLACE_PAGE })).items.map((i) => i.assistant).filter((m) => isChatPersona(m) && !installed.some((i) => i.id === m.id));
    if (installed.length + market.length === 0) {
      await ctx.reply(texts.none);
      return;
    }
    const keyboard = new InlineKeyboard();
    const current = installed.find((i) => i.id === state.assistantId) ?? null;
    for (const persona of installed.slice(0, MAX_PERSONAS)) keyboard.text(texts.installedLabel(persona.name, persona.id === current?.id), `mode:use:${persona.id}`).row();
    for (const persona of market.slice(0, Math.max(0, MAX_PERSONAS - installed.length))) keyboard.text(texts.marketplaceLabel(persona.name), `mode:use:${persona.id}`).row();
    keyboard.text(texts.plain, 'mode:off');
    await ctx.reply(texts.title(current?.name ?? null), { reply_markup: keyboard });
  }

  bot.command('mode', showModes);

  bot.callbackQuery(/^mode:use:([a-z0-9-]+)$/, async (ctx) => {
    const a = services.account(ctx);
    const texts = PERSONA_TEXTS[a.language];
    const persona = assistants.find(ctx.match[1] ?? '');
    if (!persona || !isChatPersona(persona) || !ctx.chat) {
      await ctx.answerCallbackQuery({ text: a.texts.expired });
      return;
    }
    await assistants.install(a.user.id, persona.id);
    await chats.update(ctx.chat.id, (state) => {
      state.assistantId = persona.id;
      state.history = [];
    });
    await ctx.answerCallbackQuery({ text: persona.name });
    await ctx.reply(texts.set(persona.name, persona.description));
  });

  bot.callbackQuery('mode:off', async (ctx) => {
    const a = services.account(ctx);
    if (!ctx.chat) return;
    await chats.update(ctx.chat.id, (state) => {
      state.assistantId = null;
      state.history = [];
    });
    await ctx.answerCallbackQuery();
    await ctx.reply(PERSONA_TEXTS[a.language].off);
  });

  return { showModes };
}
