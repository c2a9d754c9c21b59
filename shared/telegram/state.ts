/**
 * The bot's state: per chat (conversation history, chosen chat model, whether the person blocked
 * the bot) and the dialog state of @grammyjs/conversations. In Redis when configured, otherwise in
 * the `bot_state` table. Every value carries a version; a value of an unknown version is read as
 * empty, so a deploy that changes the shape never breaks on old data.
 */
import { LessThan } from 'typeorm';
import type { Clock } from '../clock';
import type { Database } from '../db/database';
import { BotState } from '../db/entities';
import type { Redis } from '../redis';

export interface KeyValueStore {
  get(key: string): Promise<string | null>;
  set(key: string, value: string, ttlSeconds?: number): Promise<void>;
  delete(key: string): Promise<void>;
}

export class DatabaseKeyValueStore implements KeyValueStore {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  async get(key: string): Promise<string | null> {
    const row = await this.db.repo(BotState).findOneBy({ key });
    if (!row) return null;
    if (row.expiresAt && row.expiresAt.getTime() <= this.clock().getTime()) return null;
    return row.value;
  }

  async set(key: string, value: string, ttlSeconds?: number): Promise<void> {
    const now = this.clock();
    const expiresAt = ttlSeconds ? new Date(now.getTime() + ttlSeconds * 1000) : null;
    await this.db.transaction((em) => em.getRepository(BotState).upsert({ key, value, updatedAt: now, expiresAt }, ['key']));
  }

  async delete(key: string): Promise<void> {
    await this.db.transaction((em) => em.getRepository(BotState).delete({ key }));
  }

  /** Removes expired values (the clock role may call it; reads ignore them anyway). */
  async sweep(): Promise<number> {
    const result = await this.db.transaction((em) => em.getRepository(BotState).delete({ expiresAt: LessThan(this.clock()) }));
    return result.affected ?? 0;
  }
}

export class RedisKeyValueStore implements KeyValueStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  private k(key: string): string {
    return `${this.prefix}:bot:${key}`;
  }

  get(key: string): Promise<string | null> {
    return this.redis.get(this.k(key));
  }

  async set(key: string, value: string, ttlSeconds?: number): Promise<void> {
    if (ttlSeconds) await this.redis.set(this.k(key), value, 'EX', ttlSeconds);
    else await this.redis.set(this.k(key), value);
  }

  async delete(key: string): Promise<void> {
    await this.redis.del(this.k(key));
  }
}

export function createKeyValueStore(deps: { db: Database; clock: Clock; redis: Redis | undefined; redisPrefix: string }): KeyValueStore {
  return deps.redis ? new RedisKeyValueStore(deps.redis, deps.redisPrefix) : new DatabaseKeyValueStore(deps.db, deps.clock);
}

export interface ChatTurn {
  role: 'user' | 'assistant';
  content: string;
}

export interface ChatState {
  history: ChatTurn[];
  /** The chat model chosen in /settings; null: the default for the plan. */
  textModel: string | null;
  /** The person blocked the bot: deliveries stop until they write again. */
  blocked: boolean;
  /** The persona (/mode): an installed assistant whose system prompt (and model) the chat uses; /new keeps it. */
  assistantId: string | null;
}

const CHAT_STATE_VERSION = 1;
/** A `text` column holds 65,535 bytes; the history is trimmed (oldest first) to fit well below. */
const MAX_STATE_BYTES = 60_000;
const MAX_TURNS = 100;
const CHAT_TTL_SECONDS = 90 * 86_400;

export function emptyChatState(): ChatState {
  return { history: [], textModel: null, blocked: false, assistantId: null };
}

function isTurn(value: unknown): value is ChatTurn {
  const v = value as ChatTurn;
  return typeof v === 'object' && v !== null && (v.role === 'user' || v.role === 'assistant') && typeof v.content === 'string';
}

/**
 * A chat's state in two keys: `chat:<id>` (the conversation and whether the person blocked the
 * bot) and `chat-settings:<id>` (the chosen model and persona). The worker appends each reply to
 * the conversation while the person may be changing a setting in the bot; `update` writes only the
 * part it changed, so neither write can put back what the other just changed (a persona switched
 * off while a reply streamed stays off).
 */
export class ChatStates {
  constructor(private readonly store: KeyValueStore) {}

  async load(chatId: string | number): Promise<ChatState> {
    const [raw, rawSettings] = await Promise.all([this.store.get(`chat:${chatId}`), this.store.get(`chat-settings:${chatId}`)]);
    const state = emptyChatState();
    const conversation = parseVersioned(raw);
    if (conversation) {
      state.history = Array.isArray(conversation.history) ? conversation.history.filter(isTurn) : [];
      state.blocked = conversation.blocked === true;
    }
    // Settings written before they had their own key are read from the conversation's.
    const settings = parseVersioned(rawSettings) ?? conversation;
    if (settings) {
      state.textModel = typeof settings.textModel === 'string' ? settings.textModel : null;
      state.assistantId = typeof settings.assistantId === 'string' ? settings.assistantId : null;
    }
    return state;
  }

  /** Writes the whole state (both keys). */
  async save(chatId: string | number, state: ChatState): Promise<void> {
    await Promise.all([this.saveConversation(chatId, state), this.saveSettings(chatId, state)]);
  }

  /** Changes the state; writes only the key whose part changed. */
  async update(chatId: string | number, change: (state: ChatState) => ChatState | void): Promise<ChatState> {
    const state = await this.load(chatId);
    const before = { conversation: conversationPart(state), settings: settingsPart(state) };
    const next = change(state) ?? state;
    const writes: Array<Promise<void>> = [];
    if (conversationPart(next) !== before.conversation) writes.push(this.saveConversation(chatId, next));
    if (settingsPart(next) !== before.settings) writes.push(this.saveSettings(chatId, next));
    await Promise.all(writes);
    return next;
  }

  private async saveConversation(chatId: string | number, state: ChatState): Promise<void> {
    let history = state.history.slice(-MAX_TURNS);
    const encode = (turns: ChatTurn[]): string => JSON.stringify({ v: CHAT_STATE_VERSION, history: turns, blocked: state.blocked });
    let value = encode(history);
    while (Buffer.byteLength(value) > MAX_STATE_BYTES && history.length > 0) {
      history = history.slice(Math.max(1, Math.ceil(history.length / 4)));
      value = encode(history);
    }
    if (Buffer.byteLength(value) > MAX_STATE_BYTES) value = encode([]);
    await this.store.set(`chat:${chatId}`, value, CHAT_TTL_SECONDS);
  }

  private async saveSettings(chatId: string | number, state: ChatState): Promise<void> {
    await this.store.set(`chat-settings:${chatId}`, JSON.stringify({ v: CHAT_STATE_VERSION, textModel: state.textModel, assistantId: state.assistantId }), CHAT_TTL_SECONDS);
  }
}

type StoredChat = { v?: number; history?: unknown; textModel?: unknown; blocked?: unknown; assistantId?: unknown };

function parseVersioned(raw: string | null | undefined): StoredChat | null {
  if (!raw) return null;
  try {
    const parsed = JSON.parse(raw) as StoredChat;
    return parsed.v === CHAT_STATE_VERSION ? parsed : null;
  } catch {
    return null;
  }
}

const conversationPart = (state: ChatState): string => JSON.stringify([state.history, state.blocked]);
const settingsPart = (state: ChatState): string => JSON.stringify([state.textModel, state.assistantId]);
