/**
 * The Telegram bot (grammY). People chatting with it are users of the service: the first update
 * from a Telegram id creates (or finds) their account, and every generation goes through the same
 * pipeline as the API (plan gate, price, limits, hold). Handlers never wait for a generation:
 * they accept it and queue a job; the worker delivers the result (shared/telegram/delivery.ts).
 * This file composes the parts: the middleware every update passes, the dialogs, the handlers.
 */
import { Bot } from 'grammy';
import { ConversationData, conversations, createConversation, VersionedState, VersionedStateStorage } from '@grammyjs/conversations';
import { sequentialize } from '@grammyjs/runner';
import type { Container } from '../shared/container';
import { boundedRetry } from '../shared/telegram/api';
import type { KeyValueStore } from '../shared/telegram/state';
import { BotContext, createServices, DialogContext } from './context';
import { mediaDialog } from './dialogs/media';
import { registerAccount } from './handlers/account';
import { registerChat } from './handlers/chat';
import { registerInline } from './handlers/inline';
import { registerMediaInput } from './handlers/media-input';
import { registerMode } from './handlers/mode';
import { registerRedeem } from './handlers/redeem';
import { registerResults } from './handlers/results';
import { registerStarsPayments, registerStarsShop } from './handlers/stars';
import { commandList, Feature, FEATURE_CATEGORIES, lockedFeatures, lockedText } from './menu';
import { MEDIA_KINDS, MediaKind } from './models';
import { upgradeKeyboard } from './refusals';

export type { Account, BotContext } from './context';
export { commandList, mainMenu } from './menu';
export { trimToContext } from '../shared/telegram/chat-turn';

const DIALOG_TTL_SECONDS = 86_400;
const DIALOGS = Object.keys(MEDIA_KINDS) as MediaKind[];
const FEATURES = Object.keys(FEATURE_CATEGORIES) as Feature[];

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
  // A payment made from an invoice sent to the group: credited like any other.
  if (message.successful_payment || message.refunded_payment) return true;
  const text = message.text ?? message.caption ?? '';
  const entities = message.entities ?? message.caption_entities ?? [];
  if (entities.some((e) => e.type === 'bot_command' && e.offset === 0)) return true;
  if (ctx.me.username && text.toLowerCase().includes(`@${ctx.me.username.toLowerCase()}`)) return true;
  return message.reply_to_message?.from?.id === ctx.me.id;
}

export function createBot(container: Container): Bot<BotContext> {
  const { config, log } = container;
  const token = config.telegram.botToken;
  if (!token) throw new Error('the bot needs TELEGRAM_BOT_TOKEN');
  const bot = new Bot<BotContext>(token, { client: { apiRoot: config.telegram.apiRoot } });
  bot.api.config.use(boundedRetry());
  const services = createServices(container, bot.api);
  const { chats } = services;

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
      ctx.account = await services.accountOf(ctx.from);
      if (ctx.chat && ctx.message) {
        const chatId = ctx.chat.id;
        const state = await chats.load(chatId);
        if (state.blocked) await chats.save(chatId, { ...state, blocked: false });
      }
    }
    await next();
  });
  // Payments before the dialogs: an active dialog would otherwise take the payment's message.
  registerStarsPayments(bot, services);
  // Inline mode has no chat: no dialog can be waiting for its updates.
  registerInline(bot, services);
  bot.use(
    conversations<BotContext, DialogContext>({
      storage: {
        type: 'key',
        version: 1,
        prefix: 'dialog:',
        adapter: dialogStorage(services.store),
        // In a group each member has their own dialog: nobody else can press another's buttons
        // or answer their prompt (and spend their tokens).
        getStorageKey: (ctx) => (ctx.chat === undefined ? undefined : ctx.chat.type === 'private' ? String(ctx.chat.id) : `${ctx.chat.id}:${ctx.from?.id ?? 0}`),
      },
    }),
  );

  bot.command('cancel', async (ctx) => {
    const texts = services.account(ctx).texts;
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
  for (const kind of DIALOGS) {
    bot.use(createConversation<BotContext, DialogContext>(mediaDialog(services, kind), kind));
    bot.command(kind, (ctx) => ctx.conversation.enter(kind));
  }
  registerRedeem(bot, services);
  const shop = registerStarsShop(bot, services);

  // Before the text handlers: its face-swap dialog must see the messages while it waits.
  registerMediaInput(bot, services);
  registerResults(bot, services);
  const views = registerAccount(bot, services);
  const modes = registerMode(bot, services);
  const chat = registerChat(bot, services);

  bot.callbackQuery(/^menu:locked:(\w+)$/, async (ctx) => {
    await ctx.answerCallbackQuery();
    const a = services.account(ctx);
    const feature = FEATURES.find((f) => f === ctx.match[1]);
    if (!feature) return;
    // Recomputed at the press: the plan may have changed since the menu was sent.
    const locked = lockedFeatures(container.catalog, container.plans, a.plan);
    if (!(feature in locked)) {
      if (feature === 'tools') return void (await ctx.reply(a.texts.toolsHint));
      return ctx.conversation.enter(feature);
    }
    const unlocking = locked[feature] ?? null;
    await ctx.reply(lockedText(a.texts, feature, unlocking), unlocking ? { reply_markup: upgradeKeyboard(a.texts) } : {});
  });
  bot.callbackQuery(/^menu:(\w+)$/, async (ctx) => {
    await ctx.answerCallbackQuery();
    const action = ctx.match[1] ?? '';
    const dialog = DIALOGS.find((d) => d === action);
    if (dialog) return ctx.conversation.enter(dialog);
    switch (action) {
      case 'chat':
        return chat.chatHint(ctx);
      case 'tools':
        await ctx.reply(services.account(ctx).texts.toolsHint);
        return;
      case 'balance':
        return views.showBalance(ctx);
      case 'history':
        return views.showHistory(ctx);
      case 'settings':
        return views.showSettings(ctx);
      case 'buy':
        return shop.showOffers(ctx);
      case 'mode':
        return modes.showModes(ctx);
      default:
        return views.showHelp(ctx);
    }
  });
  // Buttons of a dialog that has ended.
  bot.on('callback_query:data', async (ctx) => {
    await ctx.answerCallbackQuery({ text: services.account(ctx).texts.expired });
  });

  return bot;
}

/** Registers the command menus in both languages. */
export async function setCommands(bot: Bot<BotContext>): Promise<void> {
  await bot.api.setMyCommands(commandList('en'));
  await bot.api.setMyCommands(commandList('ru'), { language_code: 'ru' });
}
