/**
 * The person's account in the chat: /start, /help, /link, /balance, /history (each result can be
 * sent again: files as uploaded bytes from storage, text as text) and /settings (language, chat
 * model, the image dialog's default model and format).
 */
import { Bot, InlineKeyboard } from 'grammy';
import { sendGenerationResult } from '../../shared/telegram/delivery';
import { languageOf, LANGUAGES, textsFor } from '../../shared/telegram/texts';
import type { LimitWindow } from '../../shared/telegram/texts';
import type { WindowState } from '../../shared/limits';
import type { Account, BotContext, BotServices } from '../context';
import { lockedFeatures, mainMenu } from '../menu';
import { chatModel, modelsFor } from '../models';
import { IMAGE_FORMATS } from '../preferences';

const HISTORY_SIZE = 10;
/** Telegram refuses rows of more than 8 buttons; 5 fit a phone's width. */
const BUTTONS_PER_ROW = 5;

export interface AccountViews {
  showBalance(ctx: BotContext): Promise<void>;
  showHistory(ctx: BotContext): Promise<void>;
  showSettings(ctx: BotContext): Promise<void>;
  showHelp(ctx: BotContext): Promise<void>;
}

export function registerAccount(bot: Bot<BotContext>, services: BotServices): AccountViews {
  const { container, chats, preferences } = services;
  const { catalog, plans, users, history, generations, storage, generationLimiter, clock, config } = container;
  const account = (ctx: BotContext) => services.account(ctx);

  /** The plan's request windows; while Redis is unreachable /balance shows the tokens without them. */
  async function limitWindows(a: Account): Promise<{ hour: LimitWindow | null; day: LimitWindow | null }> {
    const snapshot = await generationLimiter.snapshot(a.user.id, a.plan).catch(() => ({ hour: null, day: null }));
    const now = clock().getTime();
    const view = (w: WindowState | null): LimitWindow | null =>
      w && { remaining: w.remaining, limit: w.limit, resetsAt: new Date(now + w.resetSeconds * 1000).toISOString().slice(11, 16) };
    return { hour: view(snapshot.hour), day: view(snapshot.day) };
  }

  async function showBalance(ctx: BotContext): Promise<void> {
    const a = account(ctx);
    const u = a.user;
    await ctx.reply(
      a.texts.balance({
        plan: a.plan.displayName,
        tokens: u.subscriptionTokens + u.bonusTokens,
        bonus: u.bonusTokens,
        held: u.heldTokens,
        nextRefill: u.nextRefillAt.toISOString().slice(0, 10),
        ...(await limitWindows(a)),
      }),
    );
  }

  async function showHistory(ctx: BotContext): Promise<void> {
    const a = account(ctx);
    const page = await history.list(a.user.id, { page: 1, limit: HISTORY_SIZE });
    if (page.items.length === 0) {
      await ctx.reply(a.texts.historyEmpty);
      return;
    }
    const keyboard = new InlineKeyboard();
    let inRow = 0;
    const lines = page.items.map((g) => {
      const prompt = (g.prompt ?? '').replace(/\s+/g, ' ').slice(0, 60);
      if (g.status === 'completed') {
        if (inRow === BUTTONS_PER_ROW) {
          keyboard.row();
          inRow = 0;
        }
        keyboard.text(a.texts.resend(g.id), `hist:${g.id}`);
        inRow++;
      }
      return `#${g.id} · ${g.modelSlug} · ${a.texts.status[g.status]} · ${g.tokensSpent}\n${prompt}`;
    });
    await ctx.reply([a.texts.historyTitle, ...lines].join('\n\n'), { reply_markup: keyboard });
  }

  async function showSettings(ctx: BotContext): Promise<void> {
    const a = account(ctx);
    const chatId = ctx.chat?.id;
    if (chatId === undefined) return;
    const model = chatModel(catalog, a.plan, (await chats.load(chatId)).textModel);
    const prefs = await preferences.load(chatId);
    const imageModel = prefs.imageModel ? catalog.find(prefs.imageModel)?.name : undefined;
    const other = LANGUAGES.find((l) => l !== a.language) ?? 'en';
    const keyboard = new InlineKeyboard()
      .text(a.texts.settingsLanguage, `set:lang:${other}`)
      .row()
      .text(a.texts.settingsTextModel, 'set:models')
      .row()
      .text(a.texts.settingsImageModel, 'set:imodels')
      .text(a.texts.settingsImageFormat, 'set:formats');
    await ctx.reply(
      a.texts.settingsTitle({
        language: a.language === 'ru' ? 'Русский' : 'English',
        textModel: model?.name ?? '—',
        imageModel: imageModel ?? a.texts.askEveryTime,
        imageFormat: prefs.imageFormat ?? 'webp',
      }),
      { reply_markup: keyboard },
    );
  }

  async function showHelp(ctx: BotContext): Promise<void> {
    await ctx.reply(account(ctx).texts.help);
  }

  bot.command('start', async (ctx) => {
    const a = account(ctx);
    const greeting = a.texts.greeting(ctx.from?.first_name ?? a.user.name, a.isNew, { name: a.plan.displayName, tokens: a.plan.tokenLimit });
    await ctx.reply(greeting, { reply_markup: mainMenu(a.texts, lockedFeatures(catalog, plans, a.plan)) });
  });
  bot.command('help', showHelp);
  bot.command('link', async (ctx) => {
    const a = account(ctx);
    const code = await container.links.createCode(a.user.id);
    const webUrl = `${config.publicBaseUrl}/`;
    // The button opens Account, where the code goes (the dashboard asks a signed-out visitor to
    // sign in first and then comes back there). Telegram refuses URL buttons to localhost
    // addresses; the text carries the address anyway.
    const accountUrl = `${config.publicBaseUrl}/account`;
    const button = /^https:\/\//.test(webUrl) ? { reply_markup: new InlineKeyboard().url(a.texts.openWeb, accountUrl) } : {};
    await ctx.reply(a.texts.linkCode(code, 10, webUrl), button);
  });
  bot.command('balance', showBalance);
  bot.command('history', showHistory);
  bot.command('settings', showSettings);

  bot.callbackQuery(/^hist:(\d+)$/, async (ctx) => {
    const a = account(ctx);
    const generation = await generations.get(a.user.id, Number(ctx.match[1])).catch(() => null);
    if (!generation || generation.status !== 'completed' || !ctx.chat) {
      await ctx.answerCallbackQuery({ text: a.texts.notFound });
      return;
    }
    await ctx.answerCallbackQuery();
    await sendGenerationResult(ctx.api, storage, ctx.chat.id, generation, a.texts);
  });

  bot.callbackQuery(/^set:lang:(en|ru)$/, async (ctx) => {
    const a = account(ctx);
    const language = languageOf(ctx.match[1]);
    await users.updateSettings(a.user.id, { language });
    const texts = textsFor(language);
    await ctx.answerCallbackQuery({ text: texts.languageSet });
    await ctx.reply(texts.languageSet, { reply_markup: mainMenu(texts, lockedFeatures(catalog, plans, a.plan)) });
  });
  bot.callbackQuery('set:models', async (ctx) => {
    await ctx.answerCallbackQuery();
    const a = account(ctx);
    const keyboard = new InlineKeyboard();
    for (const l of modelsFor(catalog, a.plan, 'text')) keyboard.text(`${l.model.name} · ${a.texts.tokensRange(l.minTokenCost, l.maxTokenCost)}`, `set:tm:${l.model.slug}`).row();
    await ctx.reply(a.texts.pickTextModel, { reply_markup: keyboard });
  });
  bot.callbackQuery(/^set:tm:(.+)$/, async (ctx) => {
    const a = account(ctx);
    const model = modelsFor(catalog, a.plan, 'text').find((l) => l.model.slug === ctx.match[1])?.model;
    if (!model || !ctx.chat) {
      await ctx.answerCallbackQuery({ text: a.texts.modelUnavailable });
      return;
    }
    await chats.update(ctx.chat.id, (state) => {
      state.textModel = model.slug;
    });
    await ctx.answerCallbackQuery({ text: a.texts.textModelSet(model.name) });
    await ctx.reply(a.texts.textModelSet(model.name));
  });
  bot.callbackQuery('set:imodels', async (ctx) => {
    await ctx.answerCallbackQuery();
    const a = account(ctx);
    const keyboard = new InlineKeyboard();
    for (const l of modelsFor(catalog, a.plan, 'image')) keyboard.text(`${l.model.name} · ${a.texts.tokensRange(l.minTokenCost, l.maxTokenCost)}`, `set:im:${l.model.slug}`).row();
    keyboard.text(a.texts.askEveryTime, 'set:im:-');
    await ctx.reply(a.texts.pickDefaultImageModel, { reply_markup: keyboard });
  });
  bot.callbackQuery(/^set:im:(.+)$/, async (ctx) => {
    const a = account(ctx);
    const slug = ctx.match[1] ?? '';
    const model = modelsFor(catalog, a.plan, 'image').find((l) => l.model.slug === slug)?.model;
    if ((!model && slug !== '-') || !ctx.chat) {
      await ctx.answerCallbackQuery({ text: a.texts.modelUnavailable });
      return;
    }
    await preferences.update(ctx.chat.id, { imageModel: model?.slug ?? null });
    const text = a.texts.imageModelSet(model?.name ?? a.texts.askEveryTime);
    await ctx.answerCallbackQuery({ text });
    await ctx.reply(text);
  });
  bot.callbackQuery('set:formats', async (ctx) => {
    await ctx.answerCallbackQuery();
    const a = account(ctx);
    const keyboard = new InlineKeyboard();
    for (const format of IMAGE_FORMATS) keyboard.text(format, `set:fmt:${format}`);
    await ctx.reply(a.texts.pickImageFormat, { reply_markup: keyboard });
  });
  bot.callbackQuery(/^set:fmt:(webp|png|jpeg)$/, async (ctx) => {
    const a = account(ctx);
    const format = IMAGE_FORMATS.find((f) => f === ctx.match[1]);
    if (!format || !ctx.chat) return;
    await preferences.update(ctx.chat.id, { imageFormat: format });
    await ctx.answerCallbackQuery({ text: a.texts.imageFormatSet(format) });
    await ctx.reply(a.texts.imageFormatSet(format));
  });

  return { showBalance, showHistory, showSettings, showHelp };
}
