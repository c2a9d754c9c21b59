/**
 * What every part of the bot shares: the context type, the person's account on each update, the
 * chat state, and the two ways a handler starts work (a chat turn, a media generation), both of
 * which only accept and queue: the worker delivers (shared/telegram/delivery.ts).
 */
import type { Api, Context } from 'grammy';
import type { User as TelegramUser } from 'grammy/types';
import type { Conversation, ConversationFlavor } from '@grammyjs/conversations';
import type { Container } from '../shared/container';
import type { CatalogModel } from '../shared/catalog/types';
import type { Generation, User } from '../shared/db/entities';
import type { GenerateRequest } from '../shared/generation/input';
import type { Plan } from '../shared/plans';
import type { BotDeliveries } from '../shared/telegram/deliveries';
import { refusalMessage } from './refusals';
import type { ChatStates, KeyValueStore } from '../shared/telegram/state';
import { Language, languageOf, Texts, TEXTS } from '../shared/telegram/texts';
import { Preferences } from './preferences';
import { jobIds } from '../shared/queue/job-ids';

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
export type DialogContext = Context;
export type Dialog = Conversation<BotContext, DialogContext>;

export interface BotServices {
  container: Container;
  api: Api;
  store: KeyValueStore;
  chats: ChatStates;
  deliveries: BotDeliveries;
  preferences: Preferences;
  accountOf(from: TelegramUser): Promise<Account>;
  /** The account the middleware attached to this update. */
  account(ctx: BotContext): Account;
  /** A generation's idempotency key: the bot and the update that asked for it. */
  idempotencyKey(me: TelegramUser, updateId: number): string;
  /** A redelivered update whose generation is under way already: nothing to download or start again. */
  alreadyStarted(userId: number, key: string): Promise<boolean>;
  /**
   * Accepts a media generation, says it started, and queues it. With `statusMessageId` (a message
   * that already says what is happening, sent before a download) that message is the one the
   * result updates, and a refusal replaces its text.
   */
  startMedia(from: TelegramUser, chatId: string, request: GenerateRequest, key: string, statusMessageId?: number): Promise<void>;
}

export function createServices(container: Container, api: Api): BotServices {
  const { messenger, plans, users, generations, queue, clock, botState: store, botDeliveries: deliveries } = container;

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

  async function startMedia(from: TelegramUser, chatId: string, request: GenerateRequest, key: string, statusMessageId?: number): Promise<void> {
    const a = await accountOf(from);
    /** Says the work started and records where its result goes; false when a redelivered update already did. */
    const announce = async (generation: Generation, model: CatalogModel): Promise<boolean> => {
      if (await deliveries.get(generation.id)) return false;
      const messageId = statusMessageId ?? (await api.sendMessage(chatId, a.texts.started(model.sync ? null : model.etaSeconds))).message_id;
      return deliveries.create({ generationId: generation.id, chatId, messageId, kind: 'media', language: a.language, prompt: null });
    };
    let started;
    try {
      // In the background: the worker runs it and delivers the result to the chat.
      started = await generations.start({ user: a.user, plan: a.plan }, request, { idempotencyKey: key, source: 'bot', runIn: 'background', beforeRun: announce });
    } catch (error) {
      const refusal = refusalMessage(error, a.texts, clock());
      if (refusal === null) throw error;
      const { text, ...extra } = refusal;
      if (statusMessageId === undefined) await api.sendMessage(chatId, text, extra);
      else await api.editMessageText(chatId, statusMessageId, text, extra);
      return;
    }
    const { generation, model } = started;
    if (generation.status === 'pending') return;
    // Ended already: refused by the content policy now, or a replay of one that ended meanwhile
    // (said once: a replay whose result went out already says nothing).
    if (started.replay && (await deliveries.get(generation.id))) return;
    if (generation.status === 'failed') {
      await api.sendMessage(chatId, a.texts.failed(generation.error ?? ''));
      return;
    }
    if (await announce(generation, model)) await queue.enqueue('bot.deliver', { generationId: generation.id }, { jobId: jobIds.botDeliver(generation.id) });
  }

  return {
    container,
    api,
    store,
    chats: container.chats,
    deliveries,
    preferences: new Preferences(store),
    accountOf,
    account(ctx) {
      if (!ctx.account) throw new Error('no account on this update');
      return ctx.account;
    },
    idempotencyKey: (me, updateId) => `tg-${me.id}-${updateId}`,
    async alreadyStarted(userId, key) {
      const existing = await generations.findIdempotent(userId, key);
      return existing !== null && (await deliveries.get(existing.id)) !== null;
    },
    startMedia,
  };
}
