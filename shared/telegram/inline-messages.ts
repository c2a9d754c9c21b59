/**
 * Inline mode's generations (`@bot prompt` in any chat, a result chosen): each one's message is an
 * inline message (no chat or message id, only Telegram's `inline_message_id`), recorded in the bot
 * state under the generation's id when the generation is accepted. When it ends (in whichever
 * process), a `bot.inline` job edits that message: the answer's text, or the image. Telegram lets
 * no file be uploaded into an inline message, so the image goes as its public URL
 * (`PUBLIC_BASE_URL/files/<unguessable key>`), which Telegram fetches.
 */
import type { Api } from 'grammy';
import type { Generation } from '../db/entities';
import type { GenerationRunner } from '../generation/runner';
import type { GenerationStore } from '../generation/store';
import type { Logger } from '../log';
import { jobIds } from '../queue/job-ids';
import type { Queue } from '../queue/types';
import { isNotModified, isTransient } from './api';
import { INLINE_TEXTS } from './inline-texts';
import type { KeyValueStore } from './state';
import { languageOf, textsFor } from './texts';

export type InlineKind = 'chat' | 'image';

/** Where an inline generation's result goes. */
export interface InlineMessage {
  inlineMessageId: string;
  kind: InlineKind;
  language: string;
  prompt: string;
}

const VERSION = 1;
/** Long enough for any generation to end and its delivery to be retried. */
const TTL_SECONDS = 2 * 86_400;
const KEY_PREFIX = 'tgi-';
const MESSAGE_LIMIT = 4096;
const CAPTION_LIMIT = 1024;

/**
 * The idempotency key of an inline generation: the bot and the sent inline message. One sent
 * message is one generation, however often Telegram delivers its `chosen_inline_result`.
 */
export function inlineIdempotencyKey(botId: number, inlineMessageId: string): string {
  return `${KEY_PREFIX}${botId}-${inlineMessageId}`;
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export class InlineMessages {
  constructor(private readonly store: KeyValueStore) {}

  async load(generationId: number): Promise<InlineMessage | null> {
    const raw = await this.store.get(`inline:${generationId}`);
    if (!raw) return null;
    try {
      const parsed = JSON.parse(raw) as Partial<InlineMessage> & { v?: number };
      if (parsed.v !== VERSION || typeof parsed.inlineMessageId !== 'string' || typeof parsed.prompt !== 'string') return null;
      return { inlineMessageId: parsed.inlineMessageId, kind: parsed.kind === 'image' ? 'image' : 'chat', language: String(parsed.language ?? 'en'), prompt: parsed.prompt };
    } catch {
      return null;
    }
  }

  save(generationId: number, message: InlineMessage): Promise<void> {
    return this.store.set(`inline:${generationId}`, JSON.stringify({ v: VERSION, ...message }), TTL_SECONDS);
  }

  delete(generationId: number): Promise<void> {
    return this.store.delete(`inline:${generationId}`);
  }
}

/** What an ended inline generation's message becomes: the answer, the image, or why it failed. */
export async function editInlineMessage(api: Api, publicBaseUrl: string, message: InlineMessage, generation: Generation): Promise<void> {
  const texts = textsFor(message.language);
  const inline = INLINE_TEXTS[languageOf(message.language)];
  const id = message.inlineMessageId;
  try {
    if (generation.status === 'failed') {
      await api.editMessageTextInline(id, clip(`${message.prompt}\n\n${texts.failed(generation.error ?? 'unknown error')}`, MESSAGE_LIMIT));
    } else if (message.kind === 'image' && generation.resultKey) {
      const url = `${publicBaseUrl}/files/${generation.resultKey}`;
      await api.editMessageMediaInline(id, { type: 'photo', media: url, caption: clip(inline.imageCaption(message.prompt), CAPTION_LIMIT) });
    } else {
      await api.editMessageTextInline(id, clip(inline.chatAnswer(message.prompt, generation.resultText?.trim() || '…'), MESSAGE_LIMIT));
    }
  } catch (error) {
    // Said already (a retried job whose first edit arrived).
    if (!isNotModified(error)) throw error;
  }
}

/** What the `bot.inline` job needs. */
export interface InlineDeliveryDeps {
  botState: KeyValueStore;
  generationStore: Pick<GenerationStore, 'find'>;
  config: { publicBaseUrl: string };
  log: Logger;
}

/** The `bot.inline` job: edits an ended inline generation's message once, then forgets it. */
export class InlineDelivery {
  private readonly messages: InlineMessages;

  constructor(
    private readonly deps: InlineDeliveryDeps,
    private readonly api: Api,
  ) {
    this.messages = new InlineMessages(deps.botState);
  }

  async deliver(generationId: number): Promise<void> {
    const message = await this.messages.load(generationId);
    if (!message) return;
    const generation = await this.deps.generationStore.find(generationId);
    if (!generation || generation.status === 'pending') return;
    try {
      await editInlineMessage(this.api, this.deps.config.publicBaseUrl, message, generation);
    } catch (error) {
      if (isTransient(error)) throw error;
      // Telegram refused it (the message was deleted, the image URL could not be fetched): not retried.
      this.deps.log.warn({ err: (error as Error).message, generationId }, 'telegram refused an inline result');
      if (message.kind === 'image' && generation.status === 'completed') await this.sayImageUnreachable(message);
    }
    await this.messages.delete(generationId);
  }

  /** The image is made and charged, but the inline message cannot show it: say where it is instead of "Drawing…" forever. */
  private async sayImageUnreachable(message: InlineMessage): Promise<void> {
    const text = clip(INLINE_TEXTS[languageOf(message.language)].imageUnreachable(message.prompt), MESSAGE_LIMIT);
    await this.api.editMessageTextInline(message.inlineMessageId, text).catch((error: unknown) => {
      if (isTransient(error)) throw error;
    });
  }
}

/** Every process with a bot token: an ended inline generation queues its `bot.inline` job (the job id de-duplicates). */
export function watchInlineGenerations(runner: GenerationRunner, queue: Queue, log: Logger): void {
  runner.onEnd((generation) => {
    if (generation.source !== 'bot' || !generation.idempotencyKey?.startsWith(KEY_PREFIX)) return;
    queue.enqueue('bot.inline', { generationId: generation.id }, { jobId: jobIds.botInline(generation.id) }).catch((error: unknown) => {
      log.error({ err: error, generationId: generation.id }, 'could not queue an inline delivery');
    });
  });
}
