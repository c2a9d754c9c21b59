/**
 * A fake Deepgram on 127.0.0.1, speaking the pre-recorded transcription wire protocol as Deepgram
 * documents it: `POST /v1/listen?model=…&smart_format=…&diarize=…&language=…|detect_language=true`
 * with `Authorization: Token <key>` and the raw audio as the body; the answer is
 * `{metadata: {request_id, duration, channels, …}, results: {channels: [{detected_language?,
 * alternatives: [{transcript, confidence, words, paragraphs?}]}]}}`, with `speaker` on words and
 * paragraphs only under `diarize=true`, and paragraphs only under `smart_format`/`paragraphs`.
 * Errors as Deepgram sends them: `{err_code, err_msg, request_id}`.
 * Every request is recorded; failures are scripted per request with `next(...)`.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { sniffAudio } from '../../shared/media/sniff';
import { wavDuration } from '../../shared/media/wav';
import { LoopbackServer } from './loopback-server';

export interface DeepgramRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export type DeepgramBehaviour =
  | { kind: 'rate_limit'; retryAfter?: string }
  | { kind: 'server_error'; status?: number }
  | { kind: 'unauthorized' }
  | { kind: 'payment_required' }
  | { kind: 'hang' }
  | { kind: 'drop' }
  /** A 200 whose body is not what Deepgram sends. */
  | { kind: 'garbage' };

/** One speaker's turn: Deepgram counts speakers from 0. */
export interface SpokenTurn {
  speaker: number;
  sentences: string[];
}

const MODELS = ['nova-3', 'nova-2', 'base', 'enhanced', 'whisper-large'];

/** A turn the way the conversation goes unless a test sets its own. */
export const DEFAULT_TURNS: SpokenTurn[] = [
  { speaker: 0, sentences: ['Hello, how are you today?'] },
  { speaker: 1, sentences: ['Fine, thanks.', 'And you?'] },
  { speaker: 0, sentences: ['Very well.'] },
];

export class FakeDeepgram extends LoopbackServer {
  readonly requests: DeepgramRequest[] = [];
  turns: SpokenTurn[] = DEFAULT_TURNS;
  /** What `detect_language=true` reports. */
  detectedLanguage = 'en';
  /** Echo the received key in 401 messages (a worst case; Deepgram does not). */
  echoKey = false;
  /** Whether smart formatting yields paragraphs (it does not for every language and model). */
  withParagraphs = true;
  private readonly script: DeepgramBehaviour[] = [];

  constructor(readonly apiKey?: string) {
    super();
  }

  protected internalError(res: ServerResponse, message: string): void {
    this.error(res, 500, 'INTERNAL_SERVER_ERROR', message);
  }

  next(...behaviours: DeepgramBehaviour[]): this {
    this.script.push(...behaviours);
    return this;
  }

  reset(): void {
    this.requests.length = 0;
    this.script.length = 0;
    this.turns = DEFAULT_TURNS;
    this.detectedLanguage = 'en';
    this.echoKey = false;
    this.withParagraphs = true;
  }

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const url = new URL(req.url ?? '/', 'http://fake');
    this.requests.push({ method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, headers: req.headers, body });

    const given = req.headers.authorization ?? '';
    if (this.apiKey !== undefined && given !== `Token ${this.apiKey}`) {
      return this.error(res, 401, 'INVALID_AUTH', this.echoKey ? `Invalid credentials: ${given}` : 'Invalid credentials.');
    }

    const behaviour = this.script.shift();
    if (behaviour) {
      switch (behaviour.kind) {
        case 'rate_limit':
          return this.error(res, 429, 'TOO_MANY_REQUESTS', 'Too many requests. Please try again later', behaviour.retryAfter !== undefined ? { 'retry-after': behaviour.retryAfter } : {});
        case 'server_error':
          return this.error(res, behaviour.status ?? 500, 'INTERNAL_SERVER_ERROR', 'Internal server error.');
        case 'unauthorized':
          return this.error(res, 401, 'INVALID_AUTH', 'Invalid credentials.');
        case 'payment_required':
          return this.error(res, 402, 'ASR_PAYMENT_REQUIRED', 'Project does not have enough credits for an ASR request.');
        case 'hang':
          return;
        case 'drop':
          req.socket.destroy();
          return;
        case 'garbage':
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ hello: 'world' }));
          return;
      }
    }

    if (req.method !== 'POST' || url.pathname !== '/v1/listen') return this.error(res, 404, 'NOT_FOUND', 'Not found.');
    const model = url.searchParams.get('model') ?? 'base';
    if (!MODELS.includes(model)) return this.error(res, 400, 'Bad Request', 'No such model/language/tier combination found.');
    if (body.length === 0) return this.error(res, 400, 'Bad Request', 'Bad Request: payload is empty.');
    const kind = sniffAudio(body);
    if (!kind) return this.error(res, 400, 'Bad Request', 'Bad Request: failed to process audio: corrupt or unsupported data');
    const duration = wavDuration(body) ?? 2;
    this.send(res, this.transcript(url.searchParams, duration));
  }

  private transcript(query: URLSearchParams, duration: number): Record<string, unknown> {
    const diarize = query.get('diarize') === 'true';
    const paragraphsOn = this.withParagraphs && (query.get('smart_format') === 'true' || query.get('paragraphs') === 'true');
    const all = this.turns.flatMap((turn) => turn.sentences.flatMap((sentence) => sentence.split(' ').map((w) => ({ w, speaker: turn.speaker }))));
    const step = all.length > 0 ? duration / all.length : 0;
    const words = all.map(({ w, speaker }, i) => ({
      word: w.toLowerCase().replace(/[^\p{L}\p{N}']/gu, ''),
      start: i * step,
      end: (i + 1) * step,
      confidence: 0.98,
      ...(diarize ? { speaker, speaker_confidence: 0.9 } : {}),
      punctuated_word: w,
    }));
    const transcript = this.turns.flatMap((t) => t.sentences).join(' ');
    let at = 0;
    const paragraphs = this.turns.map((turn) => {
      const count = turn.sentences.join(' ').split(' ').length;
      const paragraph = {
        sentences: turn.sentences.map((text) => ({ text, start: at * step, end: (at + count) * step })),
        ...(diarize ? { speaker: turn.speaker } : {}),
        num_words: count,
        start: at * step,
        end: (at + count) * step,
      };
      at += count;
      return paragraph;
    });
    const paragraphTranscript = this.turns.map((t) => `${diarize ? `Speaker ${t.speaker}: ` : ''}${t.sentences.join(' ')}`).join('\n\n');
    const channel: Record<string, unknown> = {
      alternatives: [
        {
          transcript,
          confidence: 0.99,
          words,
          ...(paragraphsOn ? { paragraphs: { transcript: `\n${paragraphTranscript}`, paragraphs } } : {}),
        },
      ],
    };
    if (query.get('detect_language') === 'true') {
      channel.detected_language = this.detectedLanguage;
      channel.language_confidence = 0.97;
    }
    return {
      metadata: {
        transaction_key: 'deprecated',
        request_id: `req-${this.requests.length}`,
        sha256: 'fake',
        created: new Date().toISOString(),
        duration,
        channels: 1,
        models: ['30089e05-99d1-4376-b32e-c263170674af'],
        model_info: { '30089e05-99d1-4376-b32e-c263170674af': { name: `general-${query.get('model')}`, version: '2025-01-01', arch: query.get('model') } },
      },
      results: { channels: [channel] },
    };
  }

  private send(res: ServerResponse, body: unknown): void {
    res.writeHead(200, { 'content-type': 'application/json', 'dg-request-id': `req-${this.requests.length}` });
    res.end(JSON.stringify(body));
  }

  private error(res: ServerResponse, status: number, code: string, message: string, headers: Record<string, string> = {}): void {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify({ err_code: code, err_msg: message, request_id: `req-${this.requests.length}` }));
  }
}
