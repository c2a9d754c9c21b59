/**
 * The Telegram bot (grammY). People chatting with it are users of the service: the first update
 * from a Telegram id creates (or finds) their account, and every generation goes through the same
 * pipeline as the API (plan gate, price, limits, hold). Handlers never wait for a generation:
 * they accept it and queue a job; the worker delivers the result (shared/telegram/delivery.ts).
 */
import { Bot, Context, InlineKeyboard } from 'grammy';
import type { BotCommand, User as TelegramUser } from 'grammy/types';
import {
  Conversation,
  ConversationData,
  ConversationFlavor,
  conversations,
  createConversation,
  VersionedState,
  VersionedStateStorage,
} from '@grammyjs/conversations';
import { sequentialize } from '@grammyjs/runner';
import type { Container } from '../shared/container';
import type { User } from '../shared/db/entities';
import type { GenerateRequest } from '../shared/generation/input';
import type { ChatMessage } from '../shared/providers/types';
import type { Plan } from '../shared/plans';
import { boundedRetry } from '../shared/telegram/api';
import { BotDeliveries } from '../shared/telegram/delivery';
import { refusalText } from '../shared/telegram/refusal';
import { ChatStates, ChatTurn, createKeyValueStore, KeyValueStore } from '../shared/telegram/state';
import { Language, languageOf, LANGUAGES, Texts, TEXTS, textsFor } from '../shared/telegram/texts';
import { priceOf } from '../shared/catalog/pricing';
import { chatModel, imageOption, modelsFor } from './models';
import type { CatalogModel } from '../shared/catalog';

export interface Account {
  user: User;
  plan: Plan;
  language: Language;
  texts: Texts;
  isNew: boolean;
}

interface AccountFlavor {
  account?: Account;
}

export type BotContext = ConversationFlavor<Context & AccountFlavor>;
type DialogContext = Context;
type Dialog = Conversation<BotContext, DialogContext>;

const DIALOG_TTL_SECONDS = 86_400;
/** Characters of history per token of the model's context, and the share of it the history may use. */
const CHARS_PER_TOKEN = 4;
const HISTORY_SHARE = 0.75;
const DEFAULT_HISTORY_CHARS = 48_000;

/** The commands shown in Telegram's menu, per language. */
export function commandList(language: Language): BotCommand[] {
  const c = TEXTS[language].commands;
  return (['start', 'new', 'image', 'balance', 'history', 'settings', 'help', 'link', 'cancel'] as const).map((command) => ({
    command,
    description: c[command],
  }));
}

export function mainMenu(texts: Texts): InlineKeyboard {
  const m = texts.menu;
  return new InlineKeyboard()
    .text(m.chat, 'menu:chat')
    .text(m.image, 'menu:image')
    .row()
    .text(m.balance, 'menu:balance')
    .text(m.history, 'menu:history')
    .row()
    .text(m.settings, 'menu:settings')
    .text(m.help, 'menu:help');
}

/** The history and the new turn, oldest turns dropped to fit the model's context. */
export function trimToContext(history: ChatTurn[], text: string, model: CatalogModel): ChatMessage[] {
  const maxContext = typeof model.config.max_context === 'number' ? model.config.max_context : null;
  const budget = maxContext ? Math.floor(maxContext * CHARS_PER_TOKEN * HISTORY_SHARE) : DEFAULT_HISTORY_CHARS;
  const turns: ChatTurn[] = [...history, { role: 'user', content: text }];
  let total = turns.reduce((n, t) => n + t.content.length, 0);
  let start = 0;
  while (start < turns.length - 1 && total > budget) {
    total -= turns[start]?.content.length ?? 0;
    start++;
  }
  while (start < turns.length - 1 && turns[start]?.role === 'assistant') start++;
  return turns.slice(start).map((t) => ({ role: t.role, content: t.content }));
}

function dialogStorage(store: KeyValueStore): VersionedStateStorage<string, ConversationData> {
  return {
    read: async (key) => {
      const raw = await store.get(key);
      return raw ? (JSON.parse(raw) as VersionedState<ConversationData>) : undefined;
    },
    write: (key, state) => store.set(key, JSON.stringify(state), DIALOG_TTL_SECONDS),
    delete: (key) => store.delete(key),
  };
}

function isAddressedInGroup(ctx: BotContext): boolean {
  if (ctx.callbackQuery) return true;
  const message = ctx.message;
  if (!message) return false;
  const text = message.text ?? message.caption ?? '';
  const entities = message.entities ?? message.caption_entities ?? [];
  if (entities.some((e) => e.type === 'bot_command' && e.offset === 0)) return true;
  if (ctx.me.username && text.toLowerCase().includes(`@${ctx.me.username.toLowerCase()}`)) return true;
  return message.reply_to_message?.from?.id === ctx.me.id;
}

export function createBot(container: Container): Bot<BotContext> {
  const { config, log, messenger, users, plans, catalog, generations, queue, history, clock } = container;
  const token = config.telegram.botToken;
  if (!token) throw new Error('the bot needs TELEGRAM_BOT_TOKEN');
  const bot = new Bot<BotContext>(token, { client: { apiRoot: config.telegram.apiRoot } });
  bot.api.config.use(boundedRetry());
  const store = createKeyValueStore({ db: container.db, clock, redis: container.redis, redisPrefix: config.redisPrefix });
  const chats = new ChatStates(store);
  const deliveries = new BotDeliveries(container);

  async function accountOf(from: TelegramUser): Promise<Account> {
    const { user, isNew } = await messenger.findOrCreateUser({
      telegramId: from.id,
      firstName: from.first_name,
      lastName: from.last_name,
      username: from.username,
      languageCode: from.language_code,
    });
    const language = languageOf(user.language);
    return { user, plan: plans.get(users.effectivePlan(user)), language, texts: TEXTS[language], isNew };
  }

  function account(ctx: BotContext): Account {
    if (!ctx.account) throw new Error('no account on this update');
    return ctx.account;
  }

  function idempotencyKey(ctx: { me: TelegramUser; update: { update_id: number } }): string {
    return `tg-${ctx.me.id}-${ctx.update.update_id}`;
  }

  bot.catch((error) => {
    log.error({ err: error.error, updateId: error.ctx.update.update_id }, 'bot update failed');
    const texts = error.ctx.account?.texts;
    if (texts && error.ctx.chat) void error.ctx.reply(texts.somethingWrong).catch(() => undefined);
  });

  // One update at a time per chat (dialog state), many chats at once.
  bot.use(sequentialize((ctx: BotContext) => ctx.chat?.id.toString()));
  // In groups: only commands, mentions, replies to the bot, and its buttons.
  bot.use(async (ctx, next) => {
    const type = ctx.chat?.type;
    if ((type === 'group' || type === 'supergroup') && !isAddressedInGroup(ctx)) return;
    if (type === 'channel') return;
    await next();
  });
  bot.use(async (ctx, next) => {
    if (ctx.from && !ctx.from.is_bot) {
      ctx.account = await accountOf(ctx.from);
      if (ctx.chat && ctx.message) {
        const chatId = ctx.chat.id;
        const state = await chats.load(chatId);
        if (state.blocked) await chats.save(chatId, { ...state, blocked: false });
      }
    }
    await next();
  });
  bot.use(conversations<BotContext, DialogContext>({ storage: { type: 'key', version: 1, prefix: 'dialog:', adapter: dialogStorage(store) } }));

  bot.command('cancel', async (ctx) => {
    const texts = account(ctx).texts;
    if (Object.keys(ctx.conversation.active()).length === 0) {
      await ctx.reply(texts.nothingToCancel);
      return;
    }
    await ctx.conversation.exitAll();
    await ctx.reply(texts.cancelled);
  });
  // Any other command leaves a dialog in progress, then runs.
  bot.use(async (ctx, next) => {
    const entity = ctx.message?.entities?.[0];
    if (entity?.type === 'bot_command' && entity.offset === 0 && Object.keys(ctx.conversation.active()).length > 0) {
      await ctx.conversation.exitAll();
    }
    await next();
  });
  bot.use(createConversation<BotContext, DialogContext>(imageDialog, 'image'));

  // ---- The image dialog ----------------------------------------------------------------------

  /** Waits for a button of this dialog; the ✖️ button leaves it. The answer's update id keys its generation. */
  async function choose(conversation: Dialog, texts: Texts, prefix: string): Promise<{ value: string; updateId: number }> {
    for (;;) {
      const answer = await conversation.waitFor('callback_query:data', { otherwise: (c) => c.reply(texts.useButtons) });
      await answer.answerCallbackQuery();
      const data = answer.callbackQuery.data;
      if (data === 'img:x') {
        await answer.reply(texts.cancelled);
        return conversation.halt();
      }
      if (data.startsWith(prefix)) return { value: data.slice(prefix.length), updateId: answer.update.update_id };
      await answer.reply(texts.useButtons);
    }
  }

  async function imageDialog(conversation: Dialog, ctx: DialogContext): Promise<void> {
    const from = ctx.from;
    const chatId = ctx.chat?.id;
    if (!from || chatId === undefined) return;
    const info = await conversation.external(async () => {
      const a = await accountOf(from);
      const models = modelsFor(catalog, a.plan, 'image').map((l) => ({ slug: l.model.slug, name: l.model.name, min: l.minTokenCost, max: l.maxTokenCost }));
      return { language: a.language, models };
    });
    const texts = TEXTS[info.language];
    if (info.models.length === 0) {
      await ctx.reply(texts.noImageModel);
      return;
    }
    const pick = new InlineKeyboard();
    for (const m of info.models) pick.text(`${m.name} · ${texts.tokensRange(m.min, m.max)}`, `img:m:${m.slug}`).row();
    pick.text(texts.cancel, 'img:x');
    await ctx.reply(texts.pickImageModel, { reply_markup: pick });
    const slug = (await choose(conversation, texts, 'img:m:')).value;

    await ctx.reply(texts.askPrompt);
    const promptCtx = await conversation.waitFor('message:text', { otherwise: (c) => c.reply(texts.sendText) });
    const prompt = promptCtx.message.text.trim();

    const option = await conversation.external(() => {
      const model = catalog.find(slug);
      const found = model ? imageOption(model) : null;
      if (!model || !found) return null;
      return { param: found.param, values: found.values.map((value) => ({ value, price: priceOf(model, { [found.param]: value }) })) };
    });
    const params: Record<string, string> = {};
    if (option) {
      const keyboard = new InlineKeyboard();
      for (const v of option.values) keyboard.text(`${v.value} · ${texts.tokensRange(v.price, v.price)}`, `img:o:${v.value}`).row();
      keyboard.text(texts.cancel, 'img:x');
      await ctx.reply(texts.pickOption(option.param), { reply_markup: keyboard });
      params[option.param] = (await choose(conversation, texts, 'img:o:')).value;
    }

    const quote = await conversation.external(async () => {
      const a = await accountOf(from);
      try {
        const model = generations.model(slug);
        if (!plans.allows(a.plan.name, model.minPlan)) return { ok: false as const, text: texts.insufficientPlan };
        const { price } = generations.quote(model, { model: slug, prompt, params, topLevel: {} });
        const balance = Math.max(0, a.user.subscriptionTokens + a.user.bonusTokens - a.user.heldTokens);
        return { ok: true as const, price, balance, name: model.name };
      } catch (error) {
        const text = refusalText(error, texts, clock());
        if (text === null) throw error;
        return { ok: false as const, text };
      }
    });
    if (!quote.ok) {
      await ctx.reply(quote.text);
      return;
    }
    const confirm = new InlineKeyboard().text(texts.confirm, 'img:go').text(texts.cancel, 'img:x');
    await ctx.reply(texts.confirmPrice({ model: quote.name, price: quote.price, balance: quote.balance }), { reply_markup: confirm });
    const confirmed = await choose(conversation, texts, 'img:go');
    const key = idempotencyKey({ me: ctx.me, update: { update_id: confirmed.updateId } });
    await conversation.external(() => startMedia(from, String(chatId), { model: slug, prompt, params, topLevel: {} }, key));
  }

  /** Accepts a media generation, says it started, and queues it; the worker delivers the result. */
  async function startMedia(from: TelegramUser, chatId: string, request: GenerateRequest, key: string): Promise<void> {
    const a = await accountOf(from);
    let accepted;
    try {
      accepted = await generations.accept({ user: a.user, plan: a.plan }, request, { idempotencyKey: key, source: 'bot' });
    } catch (error) {
      const text = refusalText(error, a.texts, clock());
      if (text === null) throw error;
      await bot.api.sendMessage(chatId, text);
      return;
    }
    const { generation, model } = accepted;
    if (accepted.replay && (await deliveries.get(generation.id))) return;
    if (generation.status === 'failed') {
      await bot.api.sendMessage(chatId, a.texts.failed(generation.error ?? ''));
      return;
    }
    const started = await bot.api.sendMessage(chatId, a.texts.started(model.sync ? null : model.etaSeconds));
    if (!(await deliveries.create({ generationId: generation.id, chatId, messageId: started.message_id, kind: 'media', language: a.language, prompt: null }))) return;
    if (generation.status === 'pending') {
      await queue.enqueue('generation.run', { generationId: generation.id }, { jobId: `gen-${generation.id}` });
    } else {
      await queue.enqueue('bot.deliver', { generationId: generation.id }, { jobId: `bot-deliver-${generation.id}` });
    }
  }

  // ---- Chat ----------------------------------------------------------------------------------

  async function chatTurn(ctx: BotContext, text: string): Promise<void> {
    const a = account(ctx);
    const chat = ctx.chat;
    if (!chat) return;
    const chatId = String(chat.id);
    const state = await chats.load(chatId);
    const model = chatModel(catalog, a.plan, state.textModel);
    if (!model) {
      await ctx.reply(a.texts.noTextModel);
      return;
    }
    const request: GenerateRequest = { model: model.slug, messages: trimToContext(state.history, text, model), topLevel: {} };
    let accepted;
    try {
      accepted = await generations.accept({ user: a.user, plan: a.plan }, request, { idempotencyKey: idempotencyKey(ctx), source: 'bot' });
    } catch (error) {
      const refusal = refusalText(error, a.texts, clock());
      if (refusal === null) throw error;
      await ctx.reply(refusal);
      return;
    }
    const { generation } = accepted;
    // A redelivered update: the first delivery is already under way (and charged at most once).
    if (accepted.replay && (await deliveries.get(generation.id))) return;
    if (generation.status === 'failed') {
      await ctx.reply(a.texts.failed(generation.error ?? ''));
      return;
    }
    const inGroup = chat.type !== 'private';
    const placeholder = await ctx.reply(a.texts.thinking, inGroup && ctx.msg ? { reply_parameters: { message_id: ctx.msg.message_id } } : {});
    const created = await deliveries.create({
      generationId: generation.id,
      chatId,
      messageId: placeholder.message_id,
      kind: 'chat',
      language: a.language,
      prompt: text,
    });
    if (created) await queue.enqueue('bot.chat', { generationId: generation.id }, { jobId: `bot-chat-${generation.id}` });
  }

  // ---- Commands and menu -------------------------------------------------------------------

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
      }),
    );
  }

  async function showHistory(ctx: BotContext): Promise<void> {
    const a = account(ctx);
    const page = await history.list(a.user.id, { page: 1, limit: 10 });
    if (page.items.length === 0) {
      await ctx.reply(a.texts.historyEmpty);
      return;
    }
    const lines = page.items.map((g) => {
      const prompt = (g.prompt ?? '').replace(/\s+/g, ' ').slice(0, 60);
      return `#${g.id} · ${g.modelSlug} · ${a.texts.status[g.status]} · ${g.tokensSpent}\n${prompt}`;
    });
    await ctx.reply([a.texts.historyTitle, ...lines].join('\n\n'));
  }

  async function showSettings(ctx: BotContext): Promise<void> {
    const a = account(ctx);
    const chatId = ctx.chat?.id;
    if (chatId === undefined) return;
    const model = chatModel(catalog, a.plan, (await chats.load(chatId)).textModel);
    const other = LANGUAGES.find((l) => l !== a.language) ?? 'en';
    const keyboard = new InlineKeyboard().text(a.texts.settingsLanguage, `set:lang:${other}`).row().text(a.texts.settingsTextModel, 'set:models');
    await ctx.reply(a.texts.settingsTitle({ language: a.language === 'ru' ? 'Русский' : 'English', textModel: model?.name ?? '—' }), { reply_markup: keyboard });
  }

  async function showHelp(ctx: BotContext): Promise<void> {
    await ctx.reply(account(ctx).texts.help);
  }

  bot.command('start', async (ctx) => {
    const a = account(ctx);
    await ctx.reply(a.texts.greeting(ctx.from?.first_name ?? a.user.name, a.isNew), { reply_markup: mainMenu(a.texts) });
  });
  bot.command('help', showHelp);
  bot.command('link', async (ctx) => {
    const a = account(ctx);
    const code = await container.links.createCode(a.user.id);
    await ctx.reply(a.texts.linkCode(code, 10));
  });
  bot.command('balance', showBalance);
  bot.command('history', showHistory);
  bot.command('settings', showSettings);
  bot.command('new', async (ctx) => {
    if (!ctx.chat) return;
    await chats.update(ctx.chat.id, (state) => {
      state.history = [];
    });
    await ctx.reply(account(ctx).texts.newChat);
  });
  bot.command('image', (ctx) => ctx.conversation.enter('image'));

  bot.callbackQuery(/^menu:(\w+)$/, async (ctx) => {
    await ctx.answerCallbackQuery();
    const a = account(ctx);
    switch (ctx.match[1]) {
      case 'chat': {
        const model = chatModel(catalog, a.plan, ctx.chat ? (await chats.load(ctx.chat.id)).textModel : null);
        await ctx.reply(model ? a.texts.chatHint(model.name) : a.texts.noTextModel);
        return;
      }
      case 'image':
        await ctx.conversation.enter('image');
        return;
      case 'balance':
        return showBalance(ctx);
      case 'history':
        return showHistory(ctx);
      case 'settings':
        return showSettings(ctx);
      default:
        return showHelp(ctx);
    }
  });
  bot.callbackQuery(/^set:lang:(en|ru)$/, async (ctx) => {
    const a = account(ctx);
    const language = languageOf(ctx.match[1]);
    await users.updateSettings(a.user.id, { language });
    const texts = textsFor(language);
    await ctx.answerCallbackQuery({ text: texts.languageSet });
    await ctx.reply(texts.languageSet, { reply_markup: mainMenu(texts) });
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
    const slug = ctx.match[1] ?? '';
    const model = modelsFor(catalog, a.plan, 'text').find((l) => l.model.slug === slug)?.model;
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
  // Buttons of a dialog that has ended.
  bot.on('callback_query:data', async (ctx) => {
    await ctx.answerCallbackQuery({ text: account(ctx).texts.expired });
  });

  bot.on('message:text', async (ctx) => {
    let text = ctx.message.text;
    if (text.startsWith('/')) return; // an unknown command
    if (ctx.me.username) text = text.replace(new RegExp(`@${ctx.me.username}\\b`, 'gi'), '').trim();
    if (!text) return;
    await chatTurn(ctx, text);
  });

  return bot;
}

/** Registers the command menus in both languages. */
export async function setCommands(bot: Bot<BotContext>): Promise<void> {
  await bot.api.setMyCommands(commandList('en'));
  await bot.api.setMyCommands(commandList('ru'), { language_code: 'ru' });
}
