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

export class ChatStates {
  constructor(private readonly store: KeyValueStore) {}

  async load(chatId: string | number): Promise<ChatState> {
    const raw = await this.store.get(`chat:${chatId}`);
    if (!raw) return emptyChatState();
    try {
      const parsed = JSON.parse(raw) as { v?: number; history?: unknown; textModel?: unknown; blocked?: unknown; assistantId?: unknown };
      if (parsed.v !== CHAT_STATE_VERSION) return emptyChatState();
      return {
        history: Array.isArray(parsed.history) ? parsed.history.filter(isTurn) : [],
        textModel: typeof parsed.textModel === 'string' ? parsed.textModel : null,
        blocked: parsed.blocked === true,
        assistantId: typeof parsed.assistantId === 'string' ? parsed.assistantId : null,
      };
    } catch {
      return emptyChatState();
    }
  }

  async save(chatId: string | number, state: ChatState): Promise<void> {
    let history = state.history.slice(-MAX_TURNS);
    let value = JSON.stringify({ v: CHAT_STATE_VERSION, ...state, history });
    while (Buffer.byteLength(value) > MAX_STATE_BYTES && history.length > 0) {
      history = history.slice(Math.max(1, Math.ceil(history.length / 4)));
      value = JSON.stringify({ v: CHAT_STATE_VERSION, ...state, history });
    }
    if (Buffer.byteLength(value) > MAX_STATE_BYTES) value = JSON.stringify({ v: CHAT_STATE_VERSION, ...state, history: [] });
    await this.store.set(`chat:${chatId}`, value, CHAT_TTL_SECONDS);
  }

  async update(chatId: string | number, change: (state: ChatState) => ChatState | void): Promise<ChatState> {
    const state = await this.load(chatId);
    const next = change(state) ?? state;
    await this.save(chatId, next);
    return next;
  }
}
