/**
 * A reply shown in the chat: formatted (HTML from Markdown, plain text when Telegram rejects the
 * formatting), split at 4096 characters, and, while it streams, one message edited at most about
 * once a second and only when the text grew enough.
 */
import type { Api } from 'grammy';
import type { Logger } from '../log';
import { isNotModified, isParseError, isUnreachable } from './api';
import { escapeHtml, markdownToHtml, splitMessage } from './format';

/** Edits of a streaming reply: at most one per interval, and only when the text grew this much. */
export const STREAM_EDIT_INTERVAL_MS = 1000;
export const STREAM_MIN_GROWTH = 24;

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
