/**
 * A chat reply streamed as a native draft (Bot API 9.5+ `sendMessageDraft`, private chats only):
 * the text grows in the person's chat as it is generated, then the final message is sent with
 * sendMessage (a draft is an ephemeral preview). Where drafts are not available — a group, or a
 * Bot API server that does not know the method (404 / "method not found") — the reply streams by
 * editing the placeholder (StreamingReply), and a missing method is remembered for the life of
 * the process, so later replies do not ask again.
 */
import { type Api, GrammyError } from 'grammy';
import type { Logger } from '../log';
import { isUnreachable } from './api';
import { splitMessage } from './format';
import { sendFormatted, STREAM_EDIT_INTERVAL_MS, STREAM_MIN_GROWTH, StreamingReply } from './streaming-reply';

/** What the chat job needs of a reply shown while it streams. */
export interface ReplyView {
  progress(text: string): Promise<void>;
  /** The whole reply, formatted. Throws what Telegram answered. */
  finish(text: string): Promise<void>;
  /** A failure in place of the reply. */
  replace(text: string): Promise<void>;
  readonly unreachable: boolean;
}

/** Set once this process's Bot API server answered that it has no sendMessageDraft. */
let draftsMissing = false;

export function draftsAvailable(): boolean {
  return !draftsMissing;
}

/** The server does not have the method at all (older than Bot API 9.5, or a proxy without it). */
function isMethodMissing(error: unknown): boolean {
  if (!(error instanceof GrammyError)) return false;
  return error.error_code === 404 || (error.error_code === 400 && /method.*not found|unknown method/i.test(error.description));
}

/** The message to edit is not there (deleted). */
function isEditTargetGone(error: unknown): boolean {
  return error instanceof GrammyError && error.error_code === 400 && /message to edit not found/i.test(error.description);
}

class DraftReply implements ReplyView {
  private readonly fallback: StreamingReply;
  /** Drafts failed for this reply (or the process): the placeholder is edited instead. */
  private editing = false;
  private placeholderId: number | null;
  private lastDraftAt = 0;
  private lastLength = 0;
  private blocked = false;

  constructor(
    private readonly api: Api,
    private readonly chatId: number,
    private readonly draftId: number,
    placeholderId: number | null,
    placeholder: string,
    private readonly log: Logger,
  ) {
    this.placeholderId = placeholderId;
    this.fallback = new StreamingReply(api, String(chatId), placeholderId, placeholder, log);
  }

  get unreachable(): boolean {
    return this.blocked || this.fallback.unreachable;
  }

  async progress(text: string): Promise<void> {
    if (this.editing) return this.fallback.progress(text);
    if (this.blocked) return;
    const now = Date.now();
    if (now - this.lastDraftAt < STREAM_EDIT_INTERVAL_MS || text.length - this.lastLength < STREAM_MIN_GROWTH) return;
    this.lastDraftAt = now;
    this.lastLength = text.length;
    // A draft holds one message: the part being written now (the earlier parts come with the final send).
    const shown = splitMessage(text).at(-1) ?? text;
    try {
      await this.api.sendMessageDraft(this.chatId, this.draftId, shown);
    } catch (error) {
      if (isUnreachable(error)) {
        this.blocked = true;
        return;
      }
      if (isMethodMissing(error)) {
        draftsMissing = true;
        this.log.info({ err: (error as Error).message }, 'the Bot API server has no sendMessageDraft: replies stream by editing');
      } else if (this.placeholderId === null) {
        // Drafts worked for this reply already: a missed one does not matter, the final send shows all.
        return;
      } else {
        this.log.warn({ err: (error as Error).message, chatId: this.chatId }, 'draft refused: this reply streams by editing');
      }
      if (this.placeholderId === null) return;
      this.editing = true;
      return this.fallback.progress(text);
    }
    // The draft shows the reply now: the "…" placeholder would only sit above it.
    const placeholder = this.placeholderId;
    this.placeholderId = null;
    if (placeholder !== null) await this.api.deleteMessage(this.chatId, placeholder).catch(() => undefined);
  }

  async finish(text: string): Promise<void> {
    // No draft was shown (a short reply, or drafts failed): the placeholder becomes the reply.
    if (this.editing || this.placeholderId !== null) {
      try {
        return await this.fallback.finish(text);
      } catch (error) {
        // A retried delivery whose earlier attempt deleted the placeholder for its draft.
        if (!isEditTargetGone(error) || this.editing) throw error;
      }
    }
    await sendFormatted(this.api, this.chatId, text.trim() === '' ? '…' : text);
  }

  async replace(text: string): Promise<void> {
    if (this.editing || this.placeholderId !== null) {
      try {
        return await this.fallback.replace(text);
      } catch (error) {
        if (!isEditTargetGone(error) || this.editing) throw error;
      }
    }
    await this.api.sendMessage(this.chatId, text);
  }
}

/**
 * The view a chat reply streams into: a draft in a private chat while this process has not
 * learned that drafts are missing, else edits of the placeholder. `draftId` must be non-zero
 * (the generation id); changes of one draft id animate.
 */
export function openReplyView(api: Api, chatId: string, draftId: number, placeholderId: number | null, placeholder: string, log: Logger): ReplyView {
  const numeric = Number(chatId);
  // Private chats have positive ids (the person's); groups and channels negative.
  if (draftsMissing || !Number.isSafeInteger(numeric) || numeric <= 0 || draftId === 0) {
    return new StreamingReply(api, chatId, placeholderId, placeholder, log);
  }
  return new DraftReply(api, numeric, draftId, placeholderId, placeholder, log);
}
