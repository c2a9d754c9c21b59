/**
 * Results of generations the bot started, sent through the Bot API by the worker: a chat reply
 * streams by editing one message (at most about once a second, split at 4096 characters, formatted
 * with a plain-text fallback); a media result is uploaded as bytes read from storage (never a
 * link); a failure is a message in the person's language. A person who blocked the bot stops
 * getting deliveries; nothing is retried for them.
 */
import { Api, InputFile } from 'grammy';
import type { Container } from '../container';
import { BotDelivery, BotDeliveryKind, BotDeliveryState, Generation } from '../db/entities';
import type { GenerationRunner } from '../generation/runner';
import type { Logger } from '../log';
import type { Queue } from '../queue/types';
import { createTelegramApi, isNotModified, isParseError, isTransient, isUnreachable } from './api';
import { escapeHtml, markdownToHtml, splitMessage } from './format';
import { ChatStates, createKeyValueStore, KeyValueStore } from './state';
import { Texts, textsFor } from './texts';
import { isDuplicateKey } from '../db/errors';

/** Edits of a streaming reply: at most one per interval, and only when the text grew this much. */
export const STREAM_EDIT_INTERVAL_MS = 1000;
export const STREAM_MIN_GROWTH = 24;
/** Bot API upload limits. */
const PHOTO_LIMIT = 10 * 1024 * 1024;
const UPLOAD_LIMIT = 50 * 1024 * 1024;

export class BotDeliveries {
  constructor(private readonly container: Pick<Container, 'db' | 'clock'>) {}

  get(generationId: number): Promise<BotDelivery | null> {
    return this.container.db.repo(BotDelivery).findOneBy({ generationId });
  }

  /** Records where a result goes; false when a row for this generation exists already. */
  async create(row: { generationId: number; chatId: string; messageId: number | null; kind: BotDeliveryKind; language: string; prompt: string | null }): Promise<boolean> {
    try {
      await this.container.db.transaction((em) =>
        em.getRepository(BotDelivery).insert({ ...row, state: 'pending', createdAt: this.container.clock(), deliveredAt: null }),
      );
      return true;
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }

  /** pending → delivering; true for the one caller that may send. */
  async claim(generationId: number): Promise<boolean> {
    const result = await this.container.db.transaction((em) =>
      em.getRepository(BotDelivery).update({ generationId, state: 'pending' }, { state: 'delivering' }),
    );
    return result.affected === 1;
  }

  async release(generationId: number): Promise<void> {
    await this.container.db.transaction((em) => em.getRepository(BotDelivery).update({ generationId, state: 'delivering' }, { state: 'pending' }));
  }

  async finish(generationId: number, state: BotDeliveryState): Promise<void> {
    await this.container.db.transaction((em) =>
      em.getRepository(BotDelivery).update({ generationId }, { state, deliveredAt: this.container.clock() }),
    );
  }
}

/** Sends `text` as HTML made from its Markdown; when Telegram rejects the formatting, as plain text. */
async function withFormatting<T>(text: string, send: (body: string, html: boolean) => Promise<T>): Promise<T> {
  const html = markdownToHtml(text);
  if (html === escapeHtml(text)) return send(text, false);
  try {
    return await send(html, true);
  } catch (error) {
    if (!isParseError(error)) throw error;
    return send(text, false);
  }
}

export async function sendFormatted(api: Api, chatId: string | number, text: string): Promise<number[]> {
  const ids: number[] = [];
  for (const chunk of splitMessage(text)) {
    const message = await withFormatting(chunk, (body, html) => api.sendMessage(chatId, body, html ? { parse_mode: 'HTML' } : {}));
    ids.push(message.message_id);
  }
  return ids;
}

/** One reply shown across messages of at most 4096 characters, the last one edited as it grows. */
export class StreamingReply {
  private readonly ids: number[] = [];
  private readonly shown: string[] = [];
  private lastEditAt = 0;
  private lastLength = 0;
  /** Set when the chat cannot be reached: nothing more is sent. */
  unreachable = false;

  constructor(
    private readonly api: Api,
    private readonly chatId: string,
    firstMessageId: number | null,
    placeholder: string,
    private readonly log: Logger,
  ) {
    if (firstMessageId !== null) {
      this.ids.push(firstMessageId);
      this.shown.push(placeholder);
    }
  }

  /** Called with the text so far; edits when the interval passed and the text grew enough. */
  async progress(text: string): Promise<void> {
    if (this.unreachable) return;
    const now = Date.now();
    if (now - this.lastEditAt < STREAM_EDIT_INTERVAL_MS || text.length - this.lastLength < STREAM_MIN_GROWTH) return;
    this.lastEditAt = now;
    this.lastLength = text.length;
    try {
      await this.render(text, false);
    } catch (error) {
      if (isUnreachable(error)) this.unreachable = true;
      // A missed intermediate edit does not matter: the final one shows everything.
      else this.log.warn({ err: (error as Error).message, chatId: this.chatId }, 'streaming edit failed');
    }
  }

  /** The whole reply, formatted. Throws what Telegram answered. */
  finish(text: string): Promise<void> {
    return this.render(text.trim() === '' ? '…' : text, true);
  }

  /** Replaces the placeholder with a message (a failure). */
  async replace(text: string): Promise<void> {
    const first = this.ids[0];
    if (first === undefined) {
      await this.api.sendMessage(this.chatId, text);
      return;
    }
    try {
      await this.api.editMessageText(this.chatId, first, text);
    } catch (error) {
      if (!isNotModified(error)) throw error;
    }
  }

  private async render(text: string, final: boolean): Promise<void> {
    const chunks = splitMessage(text);
    for (let i = 0; i < chunks.length; i++) {
      const chunk = chunks[i] ?? '';
      const id = this.ids[i];
      if (id === undefined) {
        const message = final
          ? await withFormatting(chunk, (body, html) => this.api.sendMessage(this.chatId, body, html ? { parse_mode: 'HTML' } : {}))
          : await this.api.sendMessage(this.chatId, chunk);
        this.ids.push(message.message_id);
      } else {
        const formatted = final && markdownToHtml(chunk) !== escapeHtml(chunk);
        if (this.shown[i] === chunk && !formatted) continue;
        try {
          if (final) {
            await withFormatting(chunk, (body, html) => this.api.editMessageText(this.chatId, id, body, html ? { parse_mode: 'HTML' } : {}));
          } else {
            await this.api.editMessageText(this.chatId, id, chunk);
          }
        } catch (error) {
          if (!isNotModified(error)) throw error;
        }
      }
      this.shown[i] = chunk;
    }
  }
}

export interface JobSignal {
  signal: AbortSignal;
}

/** What the worker's bot jobs do. */
export class TelegramDelivery {
  readonly deliveries: BotDeliveries;
  readonly chats: ChatStates;

  constructor(
    private readonly container: Container,
    readonly api: Api,
    store: KeyValueStore = createKeyValueStore({
      db: container.db,
      clock: container.clock,
      redis: container.redis,
      redisPrefix: container.config.redisPrefix,
    }),
  ) {
    this.deliveries = new BotDeliveries(container);
    this.chats = new ChatStates(store);
  }

  static fromContainer(container: Container): TelegramDelivery {
    return new TelegramDelivery(container, createTelegramApi(container.config.telegram));
  }

  private async reload(generationId: number): Promise<Generation | null> {
    return this.container.db.repo(Generation).findOneBy({ id: generationId });
  }

  /** The `bot.chat` job: runs a chat turn, streaming the reply into the placeholder message. */
  async runChat(generationId: number, job: JobSignal): Promise<void> {
    const { runner, log } = this.container;
    const delivery = await this.deliveries.get(generationId);
    if (!delivery || delivery.state !== 'pending') return;
    let generation = await this.reload(generationId);
    if (!generation) {
      await this.deliveries.finish(generationId, 'failed');
      return;
    }
    const texts = textsFor(delivery.language);
    if ((await this.chats.load(delivery.chatId)).blocked) {
      // Nobody can read it: do not run (or charge) it.
      if (generation.status === 'pending') await runner.fail(generationId, 'The chat cannot be reached');
      await this.deliveries.finish(generationId, 'blocked');
      return;
    }
    const view = new StreamingReply(this.api, delivery.chatId, delivery.messageId, texts.thinking, log);
    if (generation.status === 'pending') {
      const model = runner.modelOf(generation);
      if (!model) {
        generation = (await runner.fail(generationId, 'This model is no longer offered')) ?? (await this.reload(generationId)) ?? generation;
      } else if (model.supportsStreaming) {
        const stream = runner.streamText(generation, model, job.signal);
        let text = '';
        let next = await stream.next();
        while (!next.done) {
          text += next.value;
          await view.progress(text);
          next = await stream.next();
        }
        generation = next.value;
      } else {
        await this.api.sendChatAction(delivery.chatId, 'typing').catch(() => undefined);
        generation = await runner.runSync(generation, model, job.signal);
      }
    }
    if (generation.status === 'pending') return;
    if (!(await this.deliveries.claim(generationId))) return;
    try {
      if (view.unreachable) throw Object.assign(new Error('unreachable'), { unreachable: true });
      if (generation.status === 'completed') {
        const reply = generation.resultText ?? '';
        await view.finish(reply);
        const prompt = delivery.prompt;
        if (prompt !== null) {
          await this.chats.update(delivery.chatId, (state) => {
            state.history.push({ role: 'user', content: prompt }, { role: 'assistant', content: reply });
          });
        }
      } else {
        await view.replace(failureText(texts, generation));
      }
      await this.deliveries.finish(generationId, 'delivered');
    } catch (error) {
      await this.sendFailed(delivery, error, (error as { unreachable?: boolean }).unreachable === true);
    }
  }

  /** The `bot.deliver` job: sends an ended generation's result (media) or its failure. */
  async deliver(generationId: number): Promise<void> {
    const delivery = await this.deliveries.get(generationId);
    if (!delivery || delivery.state !== 'pending') return;
    const generation = await this.reload(generationId);
    if (!generation || generation.status === 'pending') return;
    // A completed chat reply is the chat job's to deliver (it streams it).
    if (delivery.kind === 'chat' && generation.status === 'completed') return;
    if ((await this.chats.load(delivery.chatId)).blocked) {
      await this.deliveries.finish(generationId, 'blocked');
      return;
    }
    if (!(await this.deliveries.claim(generationId))) return;
    const texts = textsFor(delivery.language);
    try {
      if (generation.status === 'failed') {
        if (delivery.kind === 'chat') {
          await new StreamingReply(this.api, delivery.chatId, delivery.messageId, texts.thinking, this.container.log).replace(failureText(texts, generation));
        } else {
          await this.api.sendMessage(delivery.chatId, failureText(texts, generation));
        }
      } else {
        await this.sendResult(delivery.chatId, generation, texts);
      }
      await this.deliveries.finish(generationId, 'delivered');
    } catch (error) {
      await this.sendFailed(delivery, error, false);
    }
  }

  /** A generation's result as an upload of its bytes: photo, video, audio or document. */
  async sendResult(chatId: string, generation: Generation, texts: Texts): Promise<void> {
    const { storage } = this.container;
    if (!generation.resultKey) {
      await sendFormatted(this.api, chatId, generation.resultText ?? '…');
      return;
    }
    const stat = await storage.stat(generation.resultKey);
    if (!stat) {
      await this.api.sendMessage(chatId, texts.somethingWrong);
      return;
    }
    if (stat.size > UPLOAD_LIMIT) {
      await this.api.sendMessage(chatId, texts.tooLarge);
      return;
    }
    const bytes = await storage.readAll(generation.resultKey);
    const extension = generation.resultKey.split('.').pop() ?? 'bin';
    const file = new InputFile(bytes, `${generation.modelSlug}-${generation.id}.${extension}`);
    const caption = (generation.prompt ?? '').slice(0, 900) || undefined;
    const type = stat.contentType;
    if (/^image\/(png|jpeg|webp)$/.test(type) && stat.size <= PHOTO_LIMIT) await this.api.sendPhoto(chatId, file, { caption });
    else if (type === 'video/mp4') await this.api.sendVideo(chatId, file, { caption });
    else if (/^audio\/(mpeg|mp4|aac)$/.test(type)) await this.api.sendAudio(chatId, file, { caption });
    else await this.api.sendDocument(chatId, file, { caption });
  }

  private async sendFailed(delivery: BotDelivery, error: unknown, unreachable: boolean): Promise<void> {
    if (unreachable || isUnreachable(error)) {
      this.container.log.info({ chatId: delivery.chatId, generationId: delivery.generationId }, 'chat unreachable (blocked?): deliveries stop');
      await this.deliveries.finish(delivery.generationId, 'blocked');
      await this.chats.update(delivery.chatId, (state) => {
        state.blocked = true;
      });
      return;
    }
    if (isTransient(error)) {
      await this.deliveries.release(delivery.generationId);
      throw error;
    }
    this.container.log.warn({ err: (error as Error).message, generationId: delivery.generationId }, 'telegram refused a delivery');
    await this.deliveries.finish(delivery.generationId, 'failed');
  }
}

function failureText(texts: Texts, generation: Generation): string {
  return texts.failed(generation.error ?? 'unknown error');
}

/**
 * Every process with a bot token: when a generation the bot started ends (in a worker, a
 * request, a cancel), its delivery is queued. The job id de-duplicates; the claim makes it once.
 */
export function watchBotGenerations(runner: GenerationRunner, queue: Queue, log: Logger): void {
  runner.onEnd((generation) => {
    // Bot generations, and schedule runs of users who talk to the bot (a delivery row decides).
    if (generation.source !== 'bot' && generation.source !== 'schedule') return;
    queue.enqueue('bot.deliver', { generationId: generation.id }, { jobId: `bot-deliver-${generation.id}` }).catch((error: unknown) => {
      log.error({ err: error, generationId: generation.id }, 'could not queue a bot delivery');
    });
  });
}
