/**
 * Inline mode in the fake Bot API: `inline_query` updates as Telegram sends them, the bot's
 * `answerInlineQuery` checked against Telegram's rules (one answer per query, at most 50 results,
 * unique ids of 1–64 bytes, the fields each result type requires), the person sending one of the
 * answered results (`chosen_inline_result`, with an `inline_message_id` only when the result has
 * an inline keyboard, as Telegram does), and edits of that inline message: `editMessageText` and
 * `editMessageMedia` with `inline_message_id` (no uploads: a URL, which the fake fetches as
 * Telegram would, or a file id).
 */
import { randomBytes } from 'node:crypto';

/** The person asking (fake-telegram.ts's TgUser and Update; not imported, so the two files do not import each other). */
interface TgUser {
  id: number;
  is_bot: boolean;
  first_name: string;
  username?: string;
  language_code?: string;
}
type Update = Record<string, unknown> & { update_id: number };

export interface InlineAnswer {
  results: Array<Record<string, unknown>>;
  cache_time?: number;
  is_personal?: boolean;
  button?: { text: string; start_parameter?: string };
}

/** A message sent by choosing an inline result, as it shows now. */
export interface InlineMessageState {
  text?: string;
  photo?: { url: string; bytes: Buffer; contentType: string; caption?: string };
  edits: number;
}

interface Failure {
  error_code: number;
  description: string;
}

const fail = (description: string, error_code = 400): Failure => ({ error_code, description });

export class FakeInline {
  private nextQueryId = 1;
  private readonly queries = new Map<string, { from: TgUser; query: string }>();
  /** The bot's answers by inline query id. */
  readonly answers = new Map<string, InlineAnswer>();
  readonly messages = new Map<string, InlineMessageState>();

  constructor(private readonly push: (update: Omit<Update, 'update_id'>) => Update) {}

  /** The person types `@bot query` in some chat. */
  query(from: TgUser, query: string, chatType: 'sender' | 'private' | 'group' | 'supergroup' = 'sender'): { id: string; update: Update } {
    const id = `${from.id}${String(this.nextQueryId++).padStart(6, '0')}`;
    this.queries.set(id, { from, query });
    return { id, update: this.push({ inline_query: { id, from, query, offset: '', chat_type: chatType } }) };
  }

  /**
   * The person sends the answered result `resultId` of query `queryId`: the message goes out and
   * the bot gets `chosen_inline_result` (its update is returned, to deliver again if wanted).
   */
  choose(queryId: string, resultId: string): { update: Update; inlineMessageId: string | undefined } {
    const asked = this.queries.get(queryId);
    const result = this.answers.get(queryId)?.results.find((r) => r.id === resultId);
    if (!asked || !result) throw new Error(`fake telegram: no result ${resultId} answered for query ${queryId}`);
    const content = result.input_message_content as { message_text?: string } | undefined;
    const inlineMessageId = result.reply_markup ? randomBytes(18).toString('base64url') : undefined;
    if (inlineMessageId) this.messages.set(inlineMessageId, { text: content?.message_text, edits: 0 });
    const chosen = { result_id: resultId, from: asked.from, query: asked.query, ...(inlineMessageId ? { inline_message_id: inlineMessageId } : {}) };
    return { update: this.push({ chosen_inline_result: chosen }), inlineMessageId };
  }

  handles(method: string, params: Record<string, unknown>): boolean {
    return method === 'answerInlineQuery' || (params.inline_message_id !== undefined && (method === 'editMessageText' || method === 'editMessageMedia'));
  }

  async answer(method: string, params: Record<string, unknown>): Promise<unknown> {
    if (method === 'answerInlineQuery') return this.answerQuery(params);
    const message = this.messages.get(String(params.inline_message_id));
    if (!message) throw fail('Bad Request: MESSAGE_ID_INVALID');
    if (method === 'editMessageText') {
      const text = String(params.text ?? '');
      if (text.length === 0 || text.length > 4096) throw fail('Bad Request: MESSAGE_TOO_LONG');
      if (message.text === text && !message.photo) throw fail('Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message');
      message.text = text;
      message.edits++;
      return true;
    }
    const media = params.media as { type?: string; media?: string; caption?: string } | undefined;
    if (!media || media.type !== 'photo' || typeof media.media !== 'string') throw fail('Bad Request: media not found');
    if (media.media.startsWith('attach://')) throw fail("Bad Request: can't upload file to an inline message: use a file_id or an HTTP URL");
    if (!/^https?:\/\//.test(media.media)) throw fail('Bad Request: wrong file identifier/HTTP URL specified');
    // Telegram downloads the photo from the URL.
    const response = await fetch(media.media).catch(() => null);
    const contentType = response?.headers.get('content-type') ?? '';
    if (!response?.ok) throw fail('Bad Request: failed to get HTTP URL content');
    if (!contentType.startsWith('image/')) throw fail('Bad Request: wrong type of the web page content');
    message.photo = { url: media.media, bytes: Buffer.from(await response.arrayBuffer()), contentType, ...(media.caption ? { caption: media.caption } : {}) };
    message.text = undefined;
    message.edits++;
    return true;
  }

  private answerQuery(params: Record<string, unknown>): true {
    const id = String(params.inline_query_id ?? '');
    if (!this.queries.has(id) || this.answers.has(id)) throw fail('Bad Request: query is too old and response timeout expired or query ID is invalid');
    const results = (typeof params.results === 'string' ? JSON.parse(params.results) : params.results) as Array<Record<string, unknown>>;
    if (!Array.isArray(results) || results.length > 50) throw fail('Bad Request: RESULTS_TOO_MUCH');
    const ids = new Set<string>();
    for (const result of results) {
      const resultId = String(result.id ?? '');
      if (resultId.length === 0 || Buffer.byteLength(resultId) > 64) throw fail('Bad Request: RESULT_ID_INVALID');
      if (ids.has(resultId)) throw fail('Bad Request: RESULT_ID_DUPLICATE');
      ids.add(resultId);
      if (result.type === 'article') {
        const text = (result.input_message_content as { message_text?: string } | undefined)?.message_text ?? '';
        if (!result.title) throw fail('Bad Request: RESULT_TITLE_EMPTY');
        if (text.length === 0 || text.length > 4096) throw fail('Bad Request: MESSAGE_EMPTY');
      } else if (result.type === 'photo') {
        if (!result.photo_url || !result.thumbnail_url) throw fail('Bad Request: PHOTO_INVALID');
      } else {
        throw fail(`Bad Request: result type ${String(result.type)} is not faked`);
      }
    }
    const button = params.button as InlineAnswer['button'] | undefined;
    if (button?.start_parameter !== undefined && !/^[A-Za-z0-9_-]{1,64}$/.test(button.start_parameter)) throw fail('Bad Request: START_PARAM_INVALID');
    this.answers.set(id, {
      results,
      ...(params.cache_time !== undefined ? { cache_time: Number(params.cache_time) } : {}),
      ...(params.is_personal !== undefined ? { is_personal: params.is_personal === true || params.is_personal === 'true' } : {}),
      ...(button ? { button } : {}),
    });
    return true;
  }
}
