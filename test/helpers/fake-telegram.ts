/**
 * A fake Bot API server on 127.0.0.1 speaking Telegram's wire protocol: POST /bot<token>/<method>
 * with JSON, form or multipart bodies, answering `{ok, result}` with realistic objects. It serves
 * queued updates to `getUpdates` (long polling) or, once `setWebhook` was called, POSTs them to
 * the webhook with its secret; answers a second concurrent poller (or polling while a webhook is
 * set) 409 Conflict; records every call (uploads with their bytes), and can be told to answer 429
 * with `retry_after`, or 403 for a chat that blocked the bot. Telegram Stars (invoices,
 * pre-checkout, charges, refunds, transactions) are in fake-telegram-stars.ts, inline mode (queries,
 * answers, chosen results, inline message edits) in fake-telegram-inline.ts; `deliverTo` posts
 * one update to several webhook processes at once, as a redelivery behind a load balancer can.
 * `sendMessageDraft` (Bot API 9.5) streams drafts in private chats; with `supportsDrafts = false`
 * it answers 404 as an older server that does not know the method. A deleted message cannot be
 * edited (400 "message to edit not found").
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { FakeInline } from './fake-telegram-inline';
import { Charge, FakeStars, Invoice } from './fake-telegram-stars';

export interface TgUser {
  id: number;
  is_bot: boolean;
  first_name: string;
  username?: string;
  language_code?: string;
}

export interface TgChat {
  id: number;
  type: 'private' | 'group' | 'supergroup';
  title?: string;
  first_name?: string;
}

export interface RecordedCall {
  method: string;
  params: Record<string, unknown>;
  /** Uploaded files by the param that named them. */
  files: Record<string, { filename: string; bytes: Buffer }>;
  at: number;
}

interface ScriptedError {
  error_code: number;
  description: string;
  parameters?: { retry_after?: number };
  /** Only for calls addressed to this chat. */
  chatId?: number;
  /** Only for calls whose `text` is this. */
  text?: string;
}

export type Update = Record<string, unknown> & { update_id: number };

/** Telegram's 4096-character limit counts the text after entity parsing: HTML tags do not count, `&lt;` is one. */
function visibleLength(params: Record<string, unknown>): number {
  const text = String(params.text ?? '');
  if (params.parse_mode !== 'HTML') return text.length;
  return text.replace(/<[^>]*>/g, '').replace(/&(?:lt|gt|amp|quot|#\d+|#x[0-9a-f]+);/gi, '.').length;
}

export const BOT_USER: TgUser = { id: 7000001, is_bot: true, first_name: 'Gensvc', username: 'gensvc_test_bot' };

function parseMultipart(body: Buffer, boundary: string): { fields: Record<string, string>; files: Record<string, { filename: string; bytes: Buffer }> } {
  const fields: Record<string, string> = {};
  const files: Record<string, { filename: string; bytes: Buffer }> = {};
  const delimiter = Buffer.from(`--${boundary}`);
  let position = body.indexOf(delimiter);
  while (position !== -1) {
    const start = position + delimiter.length;
    if (body.subarray(start, start + 2).toString() === '--') break;
    const next = body.indexOf(delimiter, start);
    if (next === -1) break;
    const part = body.subarray(start + 2, next - 2); // skip CRLF after the delimiter and before the next
    const split = part.indexOf('\r\n\r\n');
    const headers = part.subarray(0, split).toString();
    const content = part.subarray(split + 4);
    const name = /name="([^"]*)"/i.exec(headers)?.[1] ?? '';
    const file = /filename=(?:"([^"]*)"|([^\r\n;]*))/i.exec(headers);
    const filename = file ? (file[1] ?? file[2] ?? '') : undefined;
    if (filename !== undefined) files[name] = { filename, bytes: Buffer.from(content) };
    else fields[name] = content.toString();
    position = next;
  }
  return { fields, files };
}

function decodeField(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

export class FakeTelegram {
  readonly calls: RecordedCall[] = [];
  private server: http.Server | null = null;
  private readonly updates: Update[] = [];
  /** Updates served again whatever the offset (a redelivery after a crash). */
  private readonly redeliveries: Update[] = [];
  private nextUpdateId = 100_000;
  private readonly waiting = new Set<() => void>();
  private readonly messageIds = new Map<number, number>();
  private readonly texts = new Map<string, string>();
  /** Messages deleted (`chat:message`): editing one is refused, as Telegram does. */
  private readonly deleted = new Set<string>();
  private readonly scripted = new Map<string, ScriptedError[]>();
  private readonly blocked = new Set<number>();
  /** Files people sent, served by getFile and GET /file/bot<token>/<path>. */
  private readonly files = new Map<string, { path: string; bytes: Buffer; size: number }>();
  /** The pending long poll: a newer getUpdates ends it with 409, as Telegram does. */
  private activePoll: ((error: ScriptedError) => void) | null = null;
  url = '';
  /** The webhook set by setWebhook (null after deleteWebhook): updates then go there, getUpdates is refused. */
  webhook: { url: string; secret_token?: string; allowed_updates?: unknown; drop_pending_updates?: unknown } | null = null;
  /** Answers to POSTs of updates to the webhook, in order. */
  readonly webhookDeliveries: Array<{ updateId: number; status: number }> = [];
  /** getUpdates answered 409 Conflict (two pollers, or polling while a webhook is set). */
  conflicts = 0;
  /** getUpdates calls received (they are not in `calls`). */
  polls = 0;
  /** False: acts as a Bot API server older than 9.5, without sendMessageDraft (404). */
  supportsDrafts = true;
  /** Telegram Stars: invoices, charges, refunds, transactions. */
  readonly stars = new FakeStars({ push: (update) => this.push(update), nextMessageId: (chatId) => this.nextMessageId(chatId) });
  /** Inline mode: `inline.query(...)`, `inline.choose(...)`, the answers and the inline messages. */
  readonly inline = new FakeInline((update) => this.push(update));

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', () => resolve()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    for (const wake of this.waiting) wake();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  // ---- Scripting ---------------------------------------------------------------------------

  /** Queues an update (or, while a webhook is set, POSTs it there); returns it with its id. */
  push(update: Omit<Update, 'update_id'> & { update_id?: number }): Update {
    const full = { ...update, update_id: update.update_id ?? this.nextUpdateId++ } as Update;
    if (this.webhook) {
      void this.deliver(full);
      return full;
    }
    this.updates.push(full);
    this.wake();
    return full;
  }

  /** POSTs an update to the webhook with the secret it was set with, as Telegram does. */
  private async deliver(update: Update): Promise<void> {
    const hook = this.webhook;
    if (!hook) return;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (hook.secret_token) headers['x-telegram-bot-api-secret-token'] = hook.secret_token;
    // Telegram tries an update again while the webhook answers 5xx or cannot be reached.
    let status = 0;
    for (let attempt = 1; attempt <= 10; attempt++) {
      status = await fetch(hook.url, { method: 'POST', headers, body: JSON.stringify(update) }).then(
        async (res) => {
          await res.arrayBuffer();
          return res.status;
        },
        () => 0,
      );
      if (status !== 0 && status < 500) break;
      await new Promise((r) => setTimeout(r, 300));
    }
    this.webhookDeliveries.push({ updateId: update.update_id, status });
  }

  /** Gives an update its id without sending it (for `redeliver` or `deliverTo`). */
  stamp(update: Omit<Update, 'update_id'>): Update {
    return { ...update, update_id: this.nextUpdateId++ } as Update;
  }

  /**
   * POSTs the same update to each webhook URL at once, with the secret of the webhook set, as
   * Telegram's redelivery of an update whose first delivery it gave up on can reach another
   * process behind a load balancer. Resolves with each answer's status.
   */
  async deliverTo(update: Update, urls: string[]): Promise<number[]> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.webhook?.secret_token) headers['x-telegram-bot-api-secret-token'] = this.webhook.secret_token;
    return Promise.all(
      urls.map(async (url) => {
        const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(update) });
        await res.arrayBuffer();
        return res.status;
      }),
    );
  }

  /** The person pays `invoice` (its pre-checkout was answered ok): the charge, and its `successful_payment` update sent. */
  pay(from: TgUser, invoice: Pick<Invoice, 'payload' | 'currency' | 'total_amount' | 'subscription_period'>, renewalOf?: Charge): { charge: Charge; update: Update } {
    const made = this.stars.charge(from, invoice, renewalOf);
    return { charge: made.charge, update: this.push(made.update) };
  }

  /**
   * The person confirms `invoice`: the pre-checkout query goes to the bot; once the bot answered
   * it ok, Telegram charges and sends `successful_payment`. Resolves with the answer (and the charge).
   */
  async checkout(from: TgUser, invoice: Invoice): Promise<{ answer: { ok: boolean; error_message?: string }; charge?: Charge }> {
    const { id } = this.stars.preCheckout(from, invoice);
    const answer = await this.waitFor(() => this.stars.answers.get(id));
    if (!answer.ok) return { answer };
    return { answer, charge: this.pay(from, invoice).charge };
  }

  /** Serves an update again although the bot confirmed it (as Telegram does after a lost confirmation). */
  redeliver(update: Update): void {
    this.redeliveries.push(update);
    this.wake();
  }

  message(from: TgUser, text: string, chat: TgChat = { id: from.id, type: 'private', first_name: from.first_name }, extra: Record<string, unknown> = {}): Update {
    const entities = text.startsWith('/') ? [{ type: 'bot_command', offset: 0, length: text.split(/\s/)[0]?.length ?? 1 }] : undefined;
    return this.push({
      message: { message_id: this.nextMessageId(chat.id), date: Math.floor(Date.now() / 1000), chat, from, text, ...(entities ? { entities } : {}), ...extra },
    });
  }

  /**
   * A message carrying a file (`voice`, `audio`, `photo`, `document`): the bytes are kept for
   * getFile and the download path; `size` is the file_size Telegram reports (default: the bytes').
   */
  media(
    from: TgUser,
    kind: 'voice' | 'audio' | 'photo' | 'document',
    file: { bytes: Buffer; size?: number; mime_type?: string; caption?: string },
    chat: TgChat = { id: from.id, type: 'private', first_name: from.first_name },
  ): Update {
    const fileId = `file-${this.files.size + 1}-${kind}`;
    const size = file.size ?? file.bytes.length;
    this.files.set(fileId, { path: `${kind}s/file_${this.files.size + 1}.${kind === 'photo' ? 'jpg' : 'bin'}`, bytes: file.bytes, size });
    const meta = { file_id: fileId, file_unique_id: `u-${fileId}`, file_size: size };
    const body =
      kind === 'photo'
        ? { photo: [{ ...meta, width: 1, height: 1 }] }
        : { [kind]: { ...meta, ...(kind === 'voice' || kind === 'audio' ? { duration: 2 } : {}), ...(file.mime_type ? { mime_type: file.mime_type } : {}) } };
    return this.push({
      message: {
        message_id: this.nextMessageId(chat.id),
        date: Math.floor(Date.now() / 1000),
        chat,
        from,
        ...body,
        ...(file.caption ? { caption: file.caption } : {}),
      },
    });
  }

  /** A button press on a message the bot sent. */
  press(from: TgUser, data: string, messageId = 1, chat: TgChat = { id: from.id, type: 'private', first_name: from.first_name }): Update {
    return this.push({
      callback_query: {
        id: String(Math.floor(Math.random() * 1e12)),
        from,
        chat_instance: String(chat.id),
        data,
        message: { message_id: messageId, date: Math.floor(Date.now() / 1000), chat, from: BOT_USER, text: '…' },
      },
    });
  }

  /** The next calls of `method` answer with this error. */
  failNext(method: string, error: ScriptedError, times = 1): void {
    const list = this.scripted.get(method) ?? [];
    for (let i = 0; i < times; i++) list.push(error);
    this.scripted.set(method, list);
  }

  /** Every call addressed to this chat answers 403, as when the person blocked the bot. */
  block(chatId: number): void {
    this.blocked.add(chatId);
  }

  // ---- Inspection --------------------------------------------------------------------------

  callsOf(method: string, chatId?: number): RecordedCall[] {
    return this.calls.filter((c) => c.method === method && (chatId === undefined || Number(c.params.chat_id) === chatId));
  }

  /** Calls that send or change something in the chat. */
  sentTo(chatId: number): RecordedCall[] {
    return this.calls.filter((c) => Number(c.params.chat_id) === chatId && c.method !== 'sendChatAction');
  }

  hasRedeliveries(): boolean {
    return this.redeliveries.length > 0;
  }

  /** The text a message shows now. */
  textOf(chatId: number, messageId: number): string | undefined {
    return this.texts.get(`${chatId}:${messageId}`);
  }

  async waitFor<T>(find: () => T | undefined | null | false, timeoutMs = 10_000): Promise<T> {
    const started = Date.now();
    for (;;) {
      const found = find();
      if (found) return found;
      if (Date.now() - started > timeoutMs) throw new Error('fake telegram: timed out waiting');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  // ---- Server ------------------------------------------------------------------------------

  private wake(): void {
    for (const wake of [...this.waiting]) wake();
  }

  private nextMessageId(chatId: number): number {
    const id = (this.messageIds.get(chatId) ?? 0) + 1;
    this.messageIds.set(chatId, id);
    return id;
  }

  private async readBody(req: http.IncomingMessage): Promise<{ params: Record<string, unknown>; files: RecordedCall['files'] }> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const type = req.headers['content-type'] ?? '';
    if (body.length === 0) return { params: {}, files: {} };
    if (type.startsWith('application/json')) return { params: JSON.parse(body.toString()) as Record<string, unknown>, files: {} };
    const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(type);
    if (type.startsWith('multipart/form-data') && boundary) {
      const { fields, files } = parseMultipart(body, boundary[1] ?? boundary[2] ?? '');
      const params: Record<string, unknown> = {};
      const named: RecordedCall['files'] = {};
      for (const [k, v] of Object.entries(fields)) {
        const attach = /^attach:\/\/(.+)$/.exec(v);
        if (attach?.[1] && files[attach[1]]) named[k] = files[attach[1]] as { filename: string; bytes: Buffer };
        params[k] = decodeField(v);
      }
      for (const [k, f] of Object.entries(files)) if (!Object.values(named).includes(f)) named[k] = f;
      return { params, files: named };
    }
    return { params: Object.fromEntries(new URLSearchParams(body.toString())), files: {} };
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const match = /^\/bot([^/]+)\/(\w+)$/.exec(req.url ?? '');
    const reply = (status: number, payload: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(payload));
    };
    const download = /^\/file\/bot[^/]+\/(.+)$/.exec(req.url ?? '');
    if (download && req.method === 'GET') {
      const file = [...this.files.values()].find((f) => f.path === download[1]);
      if (!file) return reply(404, { ok: false, error_code: 404, description: 'Not Found' });
      this.calls.push({ method: 'downloadFile', params: { file_path: file.path }, files: {}, at: Date.now() });
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(file.bytes.length) });
      res.end(file.bytes);
      return;
    }
    if (!match || req.method !== 'POST') return reply(404, { ok: false, error_code: 404, description: 'Not Found' });
    const method = match[2] ?? '';
    const { params, files } = await this.readBody(req);
    if (method !== 'getUpdates') this.calls.push({ method, params, files, at: Date.now() });

    const chatId = params.chat_id === undefined ? undefined : Number(params.chat_id);
    const queue = this.scripted.get(method) ?? [];
    const index = queue.findIndex((e) => (e.chatId === undefined || e.chatId === chatId) && (e.text === undefined || e.text === params.text));
    if (index >= 0) {
      const [scripted] = queue.splice(index, 1);
      if (scripted) {
        const { chatId: _ignored, text: _text, ...error } = scripted;
        return reply(error.error_code, { ok: false, ...error });
      }
    }
    if (chatId !== undefined && this.blocked.has(chatId)) {
      return reply(403, { ok: false, error_code: 403, description: 'Forbidden: bot was blocked by the user' });
    }
    try {
      const result = await this.answer(method, params, files, res);
      reply(200, { ok: true, result });
    } catch (error) {
      const e = error as ScriptedError;
      reply(e.error_code ?? 500, { ok: false, error_code: e.error_code ?? 500, description: e.description ?? String(error) });
    }
  }

  private message_(chatId: number, extra: Record<string, unknown>): Record<string, unknown> {
    const id = this.nextMessageId(chatId);
    return { message_id: id, date: Math.floor(Date.now() / 1000), chat: { id: chatId, type: chatId < 0 ? 'group' : 'private' }, from: BOT_USER, ...extra };
  }

  private async answer(method: string, params: Record<string, unknown>, files: RecordedCall['files'], res: http.ServerResponse): Promise<unknown> {
    const chatId = Number(params.chat_id);
    if (this.stars.handles(method)) return this.stars.answer(method, params);
    if (this.inline.handles(method, params)) return this.inline.answer(method, params);
    switch (method) {
      case 'getMe':
        return { ...BOT_USER, can_join_groups: true, can_read_all_group_messages: false, supports_inline_queries: true };
      case 'getUpdates':
        return this.serveUpdates(params, res);
      case 'setWebhook':
        if (!/^https?:\/\//.test(String(params.url ?? ''))) throw { error_code: 400, description: 'Bad Request: bad webhook: An HTTPS URL must be provided for webhook' };
        if (params.secret_token !== undefined && !/^[A-Za-z0-9_-]{1,256}$/.test(String(params.secret_token))) {
          throw { error_code: 400, description: 'Bad Request: secret token contains unallowed characters' };
        }
        this.webhook = {
          url: String(params.url),
          ...(params.secret_token !== undefined ? { secret_token: String(params.secret_token) } : {}),
          allowed_updates: params.allowed_updates,
          drop_pending_updates: params.drop_pending_updates,
        };
        return true;
      case 'deleteWebhook':
        this.webhook = null;
        return true;
      case 'getWebhookInfo':
        return { url: this.webhook?.url ?? '', has_custom_certificate: false, pending_update_count: this.updates.length };
      case 'sendMessageDraft': {
        if (!this.supportsDrafts) throw { error_code: 404, description: 'Not Found' };
        const draftId = Number(params.draft_id);
        if (!Number.isInteger(draftId) || draftId === 0) throw { error_code: 400, description: 'Bad Request: draft_id must be non-zero' };
        if (!(chatId > 0)) throw { error_code: 400, description: 'Bad Request: TEXTDRAFT_PEER_INVALID' };
        const text = String(params.text ?? '');
        if (text.length === 0 || visibleLength(params) > 4096) throw { error_code: 400, description: 'Bad Request: text must be 1-4096 characters' };
        this.checkHtml(params);
        return true;
      }
      case 'setMyCommands':
      case 'sendChatAction':
      case 'answerCallbackQuery':
        return true;
      case 'deleteMessage': {
        const key = `${chatId}:${Number(params.message_id)}`;
        if (this.deleted.has(key)) throw { error_code: 400, description: 'Bad Request: message to delete not found' };
        this.texts.delete(key);
        this.deleted.add(key);
        return true;
      }
      case 'sendMessage': {
        const text = String(params.text ?? '');
        if (text.length === 0 || visibleLength(params) > 4096) throw { error_code: 400, description: `Bad Request: message text is ${text.length ? 'too long' : 'empty'}` };
        this.checkHtml(params);
        const message = this.message_(chatId, { text });
        this.texts.set(`${chatId}:${message.message_id as number}`, text);
        return message;
      }
      case 'editMessageText': {
        const text = String(params.text ?? '');
        const key = `${chatId}:${Number(params.message_id)}`;
        if (this.deleted.has(key)) throw { error_code: 400, description: 'Bad Request: message to edit not found' };
        if (text.length === 0 || visibleLength(params) > 4096) throw { error_code: 400, description: 'Bad Request: MESSAGE_TOO_LONG' };
        this.checkHtml(params);
        if (this.texts.get(key) === text) {
          throw { error_code: 400, description: 'Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message' };
        }
        this.texts.set(key, text);
        return { message_id: Number(params.message_id), date: Math.floor(Date.now() / 1000), edit_date: Math.floor(Date.now() / 1000), chat: { id: chatId, type: 'private' }, from: BOT_USER, text };
      }
      case 'sendPhoto': {
        if (String(params.caption ?? '').length > 1024) throw { error_code: 400, description: 'Bad Request: message caption is too long' };
        const photo = files.photo;
        if (!photo) throw { error_code: 400, description: 'Bad Request: there is no photo in the request' };
        return this.message_(chatId, {
          photo: [{ file_id: `photo-${this.calls.length}`, file_unique_id: `u${this.calls.length}`, width: 1, height: 1, file_size: photo.bytes.length }],
          ...(params.caption ? { caption: params.caption } : {}),
          ...(params.reply_markup ? { reply_markup: params.reply_markup } : {}),
        });
      }
      case 'getFile': {
        const file = this.files.get(String(params.file_id));
        if (!file) throw { error_code: 400, description: 'Bad Request: invalid file_id' };
        // Telegram gives no path for files a bot may not download.
        if (file.size > 20 * 1024 * 1024) throw { error_code: 400, description: 'Bad Request: file is too big' };
        return { file_id: String(params.file_id), file_unique_id: `u-${String(params.file_id)}`, file_size: file.size, file_path: file.path };
      }
      case 'sendDocument':
      case 'sendVideo':
      case 'sendVoice':
      case 'sendAudio': {
        if (String(params.caption ?? '').length > 1024) throw { error_code: 400, description: 'Bad Request: message caption is too long' };
        const field = method.slice(4).toLowerCase();
        const file = files[field];
        if (!file) throw { error_code: 400, description: `Bad Request: there is no ${field} in the request` };
        return this.message_(chatId, {
          [field]: { file_id: `${field}-${this.calls.length}`, file_unique_id: `u${this.calls.length}`, file_size: file.bytes.length },
          ...(params.caption ? { caption: params.caption } : {}),
          ...(params.reply_markup ? { reply_markup: params.reply_markup } : {}),
        });
      }
      default:
        throw { error_code: 404, description: `Not Found: method ${method} is not faked` };
    }
  }

  /** Telegram refuses HTML it cannot parse; the fake checks that tags are known and balanced. */
  private checkHtml(params: Record<string, unknown>): void {
    if (params.parse_mode !== 'HTML') return;
    const stack: string[] = [];
    for (const m of String(params.text).matchAll(/<(\/?)([a-z-]+)(?:\s[^>]*)?>/gi)) {
      const tag = (m[2] ?? '').toLowerCase();
      if (!['b', 'i', 'u', 's', 'code', 'pre', 'a', 'strong', 'em', 'tg-spoiler', 'blockquote'].includes(tag)) {
        throw { error_code: 400, description: `Bad Request: can't parse entities: Unsupported start tag "${tag}"` };
      }
      if (m[1]) {
        if (stack.pop() !== tag) throw { error_code: 400, description: `Bad Request: can't parse entities: Can't find end tag corresponding to start tag "${tag}"` };
      } else stack.push(tag);
    }
    if (stack.length) throw { error_code: 400, description: `Bad Request: can't parse entities: Can't find end tag corresponding to start tag "${stack[0]}"` };
  }

  private serveUpdates(params: Record<string, unknown>, res: http.ServerResponse): Promise<Update[]> {
    const offset = Number(params.offset ?? 0);
    const limit = Number(params.limit ?? 100);
    const timeout = Number(params.timeout ?? 0);
    this.polls++;
    // Telegram keeps one long poll per token: a newer one ends the older with 409.
    this.activePoll?.({ error_code: 409, description: 'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running' });
    this.activePoll = null;
    if (this.webhook) {
      this.conflicts++;
      return Promise.reject({ error_code: 409, description: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first" });
    }
    // Updates below the offset are confirmed: Telegram forgets them.
    while (this.updates.length && (this.updates[0]?.update_id ?? 0) < offset) this.updates.shift();
    const take = (): Update[] => {
      const again = this.redeliveries.splice(0, limit);
      return [...again, ...this.updates.filter((u) => u.update_id >= offset).slice(0, limit - again.length)];
    };
    const ready = take();
    if (ready.length || timeout <= 0) return Promise.resolve(ready);
    return new Promise((resolve, reject) => {
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        this.waiting.delete(finish);
        if (this.activePoll === terminate) this.activePoll = null;
        resolve(take());
      };
      const terminate = (error: ScriptedError) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        this.waiting.delete(finish);
        this.conflicts++;
        reject(error);
      };
      const timer = setTimeout(finish, timeout * 1000);
      this.waiting.add(finish);
      this.activePoll = terminate;
      res.on('close', finish);
    });
  }
}
