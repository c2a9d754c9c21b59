/**
 * A fake OpenAI-compatible upstream on 127.0.0.1, speaking the wire protocol as OpenAI documents
 * it: `POST /v1/chat/completions` (JSON, or SSE `data:` chunks ending in `data: [DONE]` with the
 * usage in the last chunk when `stream_options.include_usage` is set), `/v1/images/generations`
 * (`b64_json` or `url` results), `/v1/audio/speech` (audio bytes), `/v1/audio/transcriptions`
 * (multipart; `json` / `verbose_json`, and the gpt-4o transcribers refuse `verbose_json` as the
 * real API does), error bodies `{error: {message, type, param, code}}` and `Retry-After`.
 * Chat takes `tools` / `tool_choice` and answers a tool call as OpenAI does (content null,
 * `finish_reason: "tool_calls"`; streamed as indexed `delta.tool_calls`, the arguments in pieces)
 * until the conversation ends with a tool's answer; it refuses what OpenAI refuses (a tool message
 * answering no call, a `tool_choice` without tools, `json_object` without the word JSON), and it
 * cuts its reply at the first `stop` sequence (naming it as vLLM does when `namesStopSequence`).
 * Every request is recorded; failures are scripted per request with `next(...)`.
 */
import { spawnSync } from 'node:child_process';
import http, { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { findFfmpeg } from '../../shared/media/executables';

export interface RecordedFile {
  filename: string;
  type: string;
  bytes: Buffer;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  raw: Buffer;
  /** The parsed JSON body, when it was JSON. */
  json: Record<string, unknown> | null;
  /** The multipart fields, when it was multipart. */
  form: Record<string, string | RecordedFile> | null;
}

export type FakeBehaviour =
  | { kind: 'rate_limit'; retryAfter?: string; retryAfterMs?: string }
  | { kind: 'server_error'; status?: number }
  | { kind: 'policy'; message?: string; code?: string | null }
  | { kind: 'error'; status: number; message: string; type?: string; code?: string | null }
  | { kind: 'hang' }
  | { kind: 'slow'; delayMs: number }
  | { kind: 'drop' }
  /** Streaming only: after `afterWords` deltas, an `{error: …}` chunk (as OpenAI and OpenRouter send mid-stream). */
  | { kind: 'stream_error'; afterWords: number; message: string; code?: string | null }
  /** Streaming only: after `afterWords` deltas, the connection is cut without `[DONE]`. */
  | { kind: 'stream_cut'; afterWords: number };

const VOICES = ['alloy', 'ash', 'ballad', 'coral', 'echo', 'fable', 'onyx', 'nova', 'sage', 'shimmer', 'verse'];
const SPEECH_FORMATS: Record<string, string> = { mp3: 'audio/mpeg', opus: 'audio/ogg', aac: 'audio/aac', flac: 'audio/flac', wav: 'audio/wav', pcm: 'audio/pcm' };
const IMAGE_SIZES = ['256x256', '512x512', '1024x1024', '1024x1792', '1792x1024', '1536x1024', '1024x1536', '768x1344', '1344x768'];

/** A mono 16-bit PCM WAV of a sine tone. */
export function sineWav(seconds: number, sampleRate = 16_000): Buffer {
  const samples = Math.round(seconds * sampleRate);
  const data = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++) data.writeInt16LE(Math.round(Math.sin((2 * Math.PI * 440 * i) / sampleRate) * 8000), i * 2);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + data.length, 4);
  header.write('WAVE', 8, 'latin1');
  header.write('fmt ', 12, 'latin1');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(data.length, 40);
  return Buffer.concat([header, data]);
}

function encodeWith(ffmpeg: string, wav: Buffer, args: string[]): Buffer {
  const result = spawnSync(ffmpeg, ['-hide_banner', '-loglevel', 'error', '-i', 'pipe:0', ...args, 'pipe:1'], { input: wav, maxBuffer: 16 * 1024 * 1024 });
  if (result.status !== 0) throw new Error(`ffmpeg failed: ${result.stderr.toString()}`);
  return result.stdout;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export class FakeOpenAI {
  readonly requests: RecordedRequest[] = [];
  /** Text the chat model answers; streamed word by word. */
  reply = 'Hello from the fake upstream';
  /** Usage the chat model reports. */
  usage = { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 };
  /** Pause between SSE chunks. */
  chunkDelayMs = 0;
  /** How image results come back (`url` as some compatible hosts do whatever was asked). */
  imageResult: 'b64_json' | 'url' = 'b64_json';
  /** The key expected in `Authorization: Bearer …` (undefined: none required). */
  apiKey: string | undefined;
  /** Echo the received key in 401 messages (worse than OpenAI, which masks it). */
  echoKey = false;
  /** Seconds of audio the speech endpoint returns. */
  speechSeconds = 1;
  /** The arguments (JSON text) of the tool calls the chat model makes. */
  toolArguments = '{"city":"Paris","unit":"celsius"}';
  /** Name the stop sequence that cut the reply as the choice's `stop_reason`, as vLLM does (OpenAI does not). */
  namesStopSequence = false;
  /** Streams that the client closed before their end. */
  abortedStreams = 0;
  /** Words of the current stream already sent. */
  streamedWords = 0;
  private readonly script: FakeBehaviour[] = [];
  private readonly files = new Map<string, Buffer>();
  private readonly server: http.Server;
  private nextFile = 1;
  private nextCall = 1;
  private streamFault: Extract<FakeBehaviour, { kind: 'stream_error' | 'stream_cut' }> | null = null;

  constructor(options: { apiKey?: string } = {}) {
    this.apiKey = options.apiKey;
    this.server = http.createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) this.error(res, 500, String(error), 'server_error', null);
        else res.destroy();
      });
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
    return this;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** `http://127.0.0.1:<port>/v1` */
  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}/v1`;
  }

  next(...behaviours: FakeBehaviour[]): this {
    this.script.push(...behaviours);
    return this;
  }

  reset(): void {
    this.requests.length = 0;
    this.script.length = 0;
    this.reply = 'Hello from the fake upstream';
    this.usage = { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 };
    this.chunkDelayMs = 0;
    this.imageResult = 'b64_json';
    this.echoKey = false;
    this.speechSeconds = 1;
    this.toolArguments = '{"city":"Paris","unit":"celsius"}';
    this.namesStopSequence = false;
    this.abortedStreams = 0;
    this.streamedWords = 0;
  }

  /** Requests to the API (not result downloads). */
  apiRequests(): RecordedRequest[] {
    return this.requests.filter((r) => r.path.startsWith('/v1/'));
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const contentType = req.headers['content-type'] ?? '';
    let json: Record<string, unknown> | null = null;
    let form: Record<string, string | RecordedFile> | null = null;
    if (contentType.startsWith('application/json')) {
      try {
        json = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
      } catch {
        return this.error(res, 400, 'We could not parse the JSON body of your request.', 'invalid_request_error', null);
      }
    } else if (contentType.startsWith('multipart/form-data')) {
      const parsed = await new Response(raw, { headers: { 'content-type': contentType } }).formData();
      form = {};
      for (const [key, value] of parsed.entries()) {
        form[key] = typeof value === 'string' ? value : { filename: value.name, type: value.type, bytes: Buffer.from(await value.arrayBuffer()) };
      }
    }
    this.requests.push({ method: req.method ?? 'GET', path, headers: req.headers, raw, json, form });

    if (req.method === 'GET' && path.startsWith('/files/')) {
      const file = this.files.get(path);
      if (!file) return this.error(res, 404, 'not found', 'invalid_request_error', null);
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': file.length });
      res.end(file);
      return;
    }

    if (this.apiKey !== undefined && req.headers.authorization !== `Bearer ${this.apiKey}`) {
      const given = (req.headers.authorization ?? '').replace(/^Bearer /, '');
      const shown = this.echoKey ? given : `${given.slice(0, 3)}*****${given.slice(-2)}`;
      return this.error(res, 401, `Incorrect API key provided: ${shown}. You can find your API key at https://platform.openai.com/account/api-keys.`, 'invalid_request_error', 'invalid_api_key');
    }

    const behaviour = this.script.shift();
    if (behaviour) {
      switch (behaviour.kind) {
        case 'rate_limit': {
          const headers: Record<string, string> = {};
          if (behaviour.retryAfter !== undefined) headers['retry-after'] = behaviour.retryAfter;
          if (behaviour.retryAfterMs !== undefined) headers['retry-after-ms'] = behaviour.retryAfterMs;
          return this.error(res, 429, 'Rate limit reached for requests. Please try again in 1s.', 'requests', 'rate_limit_exceeded', headers);
        }
        case 'server_error':
          return this.error(res, behaviour.status ?? 500, 'The server had an error while processing your request. Sorry about that!', 'server_error', null);
        case 'policy':
          return this.error(
            res,
            400,
            behaviour.message ?? 'Your request was rejected as a result of our safety system. Your prompt may contain text that is not allowed by our safety system.',
            'invalid_request_error',
            behaviour.code === undefined ? 'content_policy_violation' : behaviour.code,
          );
        case 'error':
          return this.error(res, behaviour.status, behaviour.message, behaviour.type ?? 'invalid_request_error', behaviour.code ?? null);
        case 'hang':
          return; // never answers; the client gives up
        case 'slow':
          await sleep(behaviour.delayMs);
          break;
        case 'drop':
          req.socket.destroy();
          return;
        case 'stream_error':
        case 'stream_cut':
          this.streamFault = behaviour;
          break;
      }
    }

    if (req.method !== 'POST') return this.error(res, 405, 'Method not allowed', 'invalid_request_error', null);
    switch (path) {
      case '/v1/chat/completions':
        return this.chat(json, res);
      case '/v1/images/generations':
        return this.images(json, res);
      case '/v1/audio/speech':
        return this.speech(json, res);
      case '/v1/audio/transcriptions':
        return this.transcriptions(form, res);
      default:
        return this.error(res, 404, `Invalid URL (POST ${path})`, 'invalid_request_error', null);
    }
  }

  private error(res: ServerResponse, status: number, message: string, type: string, code: string | null, headers: Record<string, string> = {}, param: string | null = null): void {
    const body = JSON.stringify({ error: { message, type, param, code } });
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(body);
  }

  private send(res: ServerResponse, body: unknown): void {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  /** What OpenAI refuses about tools, formats and tool turns before it generates anything, or null. */
  private chatProblem(body: Record<string, unknown>): { message: string; param: string; code: string | null } | null {
    const tools = body.tools;
    if (tools !== undefined) {
      if (!Array.isArray(tools) || tools.length === 0) return { message: "Invalid 'tools': empty array. Expected an array with minimum length 1.", param: 'tools', code: 'empty_array' };
      for (const [i, tool] of (tools as Array<Record<string, unknown>>).entries()) {
        const fn = tool?.function as Record<string, unknown> | undefined;
        if (tool?.type !== 'function' || typeof fn?.name !== 'string') return { message: `Missing required parameter: 'tools[${i}].function.name'.`, param: `tools[${i}].function.name`, code: 'missing_required_parameter' };
      }
    }
    const choice = body.tool_choice;
    if (choice !== undefined && tools === undefined) {
      return { message: "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.", param: 'tool_choice', code: null };
    }
    if (typeof choice === 'object' && choice !== null) {
      const name = ((choice as Record<string, unknown>).function as Record<string, unknown> | undefined)?.name;
      if (!(tools as Array<{ function: { name: string } }>).some((t) => t.function.name === name)) {
        return { message: `Invalid value for 'tool_choice': no function named '${String(name)}' was specified in the 'tools' parameter.`, param: 'tool_choice', code: null };
      }
    }
    const messages = body.messages as Array<Record<string, unknown>>;
    const called = new Set<string>();
    for (const [i, message] of messages.entries()) {
      for (const call of (message.tool_calls as Array<{ id: string }> | undefined) ?? []) called.add(call.id);
      if (message.role === 'tool' && !called.has(String(message.tool_call_id))) {
        return { message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", param: `messages.[${i}].role`, code: null };
      }
    }
    const format = body.response_format as Record<string, unknown> | undefined;
    if (format?.type === 'json_schema' && typeof (format.json_schema as Record<string, unknown> | undefined)?.name !== 'string') {
      return { message: "Missing required parameter: 'response_format.json_schema'.", param: 'response_format.json_schema', code: 'missing_required_parameter' };
    }
    if (format?.type === 'json_object' && !/json/i.test(JSON.stringify(messages))) {
      return { message: "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.", param: 'messages', code: null };
    }
    return null;
  }

  /** The call the model makes: the function `tool_choice` names, else the first tool; none when told `none` or when a tool just answered. */
  private toolCallFor(body: Record<string, unknown>): { id: string; type: 'function'; function: { name: string; arguments: string } } | null {
    const tools = body.tools as Array<{ function: { name: string } }> | undefined;
    const messages = body.messages as Array<Record<string, unknown>>;
    if (!tools || body.tool_choice === 'none' || messages.at(-1)?.role === 'tool') return null;
    const choice = body.tool_choice as { function?: { name: string } } | undefined;
    const name = typeof choice === 'object' && choice.function ? choice.function.name : (tools[0]?.function.name ?? '');
    return { id: `call_fake${this.nextCall++}`, type: 'function', function: { name, arguments: this.toolArguments } };
  }

  /** The reply up to the first stop sequence, as OpenAI cuts it (the sequence itself is not sent), and that sequence. */
  private replyFor(body: Record<string, unknown>): { text: string; matched: string | null } {
    const stop = typeof body.stop === 'string' ? [body.stop] : Array.isArray(body.stop) ? (body.stop as string[]) : [];
    let matched: string | null = null;
    for (const sequence of stop) {
      const at = this.reply.indexOf(sequence);
      if (at >= 0 && (matched === null || at < this.reply.indexOf(matched))) matched = sequence;
    }
    return { text: matched === null ? this.reply : this.reply.slice(0, this.reply.indexOf(matched)), matched };
  }

  /** The choice's finish fields: vLLM adds `stop_reason` (the sequence, or null) beside `finish_reason`. */
  private finishOf(reason: string, matched: string | null): Record<string, unknown> {
    return this.namesStopSequence ? { finish_reason: reason, stop_reason: matched } : { finish_reason: reason };
  }

  private async chat(body: Record<string, unknown> | null, res: ServerResponse): Promise<void> {
    if (!body || typeof body.model !== 'string') return this.error(res, 400, "you must provide a model parameter", 'invalid_request_error', null);
    if (!Array.isArray(body.messages) || body.messages.length === 0) {
      return this.error(res, 400, "Invalid 'messages': empty array. Expected an array with minimum length 1.", 'invalid_request_error', 'empty_array');
    }
    const problem = this.chatProblem(body);
    if (problem) return this.error(res, 400, problem.message, 'invalid_request_error', problem.code, {}, problem.param);
    const id = `chatcmpl-${Date.now()}`;
    const created = Math.floor(Date.now() / 1000);
    const toolCall = this.toolCallFor(body);
    const { text: reply, matched } = this.replyFor(body);
    if (body.stream !== true) {
      const message = toolCall ? { role: 'assistant', content: null, tool_calls: [toolCall], refusal: null } : { role: 'assistant', content: reply, refusal: null };
      this.send(res, {
        id,
        object: 'chat.completion',
        created,
        model: body.model,
        choices: [{ index: 0, message, logprobs: null, ...(toolCall ? { finish_reason: 'tool_calls' } : this.finishOf('stop', matched)) }],
        usage: this.usage,
      });
      return;
    }
    const includeUsage = typeof body.stream_options === 'object' && body.stream_options !== null && (body.stream_options as Record<string, unknown>).include_usage === true;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    let closed = false;
    res.on('close', () => {
      if (!res.writableEnded) {
        closed = true;
        this.abortedStreams++;
      }
    });
    const chunk = (choices: unknown[], extra: Record<string, unknown> = {}): string =>
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: body.model, system_fingerprint: 'fp_fake', choices, ...(includeUsage ? { usage: null } : {}), ...extra })}\n\n`;
    res.write(': keep-alive comment, as OpenRouter sends\n\n');
    if (toolCall) {
      // As OpenAI streams a call: id, type and name with empty arguments, then the arguments in pieces.
      res.write(chunk([{ index: 0, delta: { role: 'assistant', content: null }, logprobs: null, finish_reason: null }]));
      const { name, arguments: args } = toolCall.function;
      res.write(chunk([{ index: 0, delta: { tool_calls: [{ index: 0, id: toolCall.id, type: 'function', function: { name, arguments: '' } }] }, logprobs: null, finish_reason: null }]));
      for (let at = 0; at < args.length; at += 5) {
        if (this.chunkDelayMs > 0) await sleep(this.chunkDelayMs);
        if (closed) return;
        res.write(chunk([{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: args.slice(at, at + 5) } }] }, logprobs: null, finish_reason: null }]));
      }
      res.write(chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' }]));
      if (includeUsage) res.write(chunk([], { usage: this.usage }));
      res.end('data: [DONE]\n\n');
      return;
    }
    res.write(chunk([{ index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null }]));
    const words = reply.split(' ');
    const fault = this.streamFault;
    this.streamFault = null;
    this.streamedWords = 0;
    for (let i = 0; i < words.length; i++) {
      if (this.chunkDelayMs > 0) await sleep(this.chunkDelayMs);
      if (closed) return;
      if (fault && i === fault.afterWords) {
        if (fault.kind === 'stream_cut') {
          res.socket?.destroy();
          return;
        }
        res.end(`data: ${JSON.stringify({ error: { message: fault.message, type: 'invalid_request_error', param: null, code: fault.code ?? null } })}\n\n`);
        return;
      }
      res.write(chunk([{ index: 0, delta: { content: (i === 0 ? '' : ' ') + words[i] }, logprobs: null, finish_reason: null }]));
      this.streamedWords++;
    }
    res.write(chunk([{ index: 0, delta: {}, logprobs: null, ...this.finishOf('stop', matched) }]));
    if (includeUsage) res.write(chunk([], { usage: this.usage }));
    res.end('data: [DONE]\n\n');
  }

  private async images(body: Record<string, unknown> | null, res: ServerResponse): Promise<void> {
    if (!body || typeof body.prompt !== 'string' || body.prompt === '') return this.error(res, 400, "Missing required parameter: 'prompt'.", 'invalid_request_error', 'missing_required_parameter');
    const size = typeof body.size === 'string' ? body.size : '1024x1024';
    if (!IMAGE_SIZES.includes(size)) {
      return this.error(res, 400, `'${size}' is not one of ${JSON.stringify(IMAGE_SIZES)} - 'size'`, 'invalid_request_error', null);
    }
    const [width, height] = size.split('x').map(Number) as [number, number];
    const png = await sharp({ create: { width, height, channels: 3, background: { r: 40, g: 90, b: 160 } } }).png().toBuffer();
    const format = body.response_format === 'b64_json' && this.imageResult === 'b64_json' ? 'b64_json' : 'url';
    let item: Record<string, unknown>;
    if (format === 'b64_json') {
      item = { b64_json: png.toString('base64'), revised_prompt: body.prompt };
    } else {
      const path = `/files/img-${this.nextFile++}.png`;
      this.files.set(path, png);
      item = { url: `http://127.0.0.1:${this.port}${path}`, revised_prompt: body.prompt };
    }
    this.send(res, { created: Math.floor(Date.now() / 1000), data: [item] });
  }

  private speech(body: Record<string, unknown> | null, res: ServerResponse): void {
    if (!body || typeof body.input !== 'string' || body.input === '') return this.error(res, 400, "Missing required parameter: 'input'.", 'invalid_request_error', 'missing_required_parameter');
    if (typeof body.voice !== 'string' || !VOICES.includes(body.voice)) {
      return this.error(res, 400, `Invalid value for 'voice' = ${String(body.voice)}. Supported values are: ${VOICES.map((v) => `'${v}'`).join(', ')}.`, 'invalid_request_error', 'invalid_value');
    }
    const format = typeof body.response_format === 'string' ? body.response_format : 'mp3';
    const contentType = SPEECH_FORMATS[format];
    if (!contentType) return this.error(res, 400, `Invalid value for 'response_format' = ${format}.`, 'invalid_request_error', 'invalid_value');
    const wav = sineWav(this.speechSeconds, 24_000);
    let bytes: Buffer = wav;
    const ffmpeg = findFfmpeg();
    if (format === 'mp3' || format === 'opus') {
      if (!ffmpeg) return this.error(res, 500, 'fake upstream has no ffmpeg to encode', 'server_error', null);
      bytes = format === 'mp3' ? encodeWith(ffmpeg, wav, ['-f', 'mp3']) : encodeWith(ffmpeg, wav, ['-c:a', 'libopus', '-f', 'ogg']);
    }
    res.writeHead(200, { 'content-type': contentType, 'transfer-encoding': 'chunked' });
    res.end(bytes);
  }

  private transcriptions(form: Record<string, string | RecordedFile> | null, res: ServerResponse): void {
    const file = form?.file;
    if (!form || typeof file !== 'object') return this.error(res, 400, "Missing required parameter: 'file'.", 'invalid_request_error', 'missing_required_parameter');
    const model = form.model;
    if (typeof model !== 'string') return this.error(res, 400, "Missing required parameter: 'model'.", 'invalid_request_error', 'missing_required_parameter');
    const format = typeof form.response_format === 'string' ? form.response_format : 'json';
    if (/^gpt-4o.*transcribe/.test(model) && !['json', 'text'].includes(format)) {
      return this.error(res, 400, `response_format '${format}' is not compatible with model '${model}'. Use 'json' or 'text' instead.`, 'invalid_request_error', 'unsupported_value');
    }
    const text = ' Hello from the fake transcriber.';
    const language = typeof form.language === 'string' ? form.language : null;
    if (format === 'verbose_json') {
      this.send(res, {
        task: 'transcribe',
        language: language === 'de' ? 'german' : 'english',
        duration: 1.25,
        text,
        segments: [{ id: 0, seek: 0, start: 0, end: 1.25, text, tokens: [50364], temperature: 0, avg_logprob: -0.2, compression_ratio: 0.9, no_speech_prob: 0.01 }],
      });
      return;
    }
    const usage = /transcribe/.test(model)
      ? { type: 'tokens', input_tokens: 14, input_token_details: { text_tokens: 0, audio_tokens: 14 }, output_tokens: 7, total_tokens: 21 }
      : { type: 'duration', seconds: 2 };
    this.send(res, { text, usage });
  }
}
