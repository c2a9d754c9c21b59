/**
 * A fake ElevenLabs on 127.0.0.1, speaking the text-to-speech wire protocol as ElevenLabs documents
 * it: `POST /v1/text-to-speech/{voice_id}?output_format=…` with `xi-api-key` and a JSON body
 * `{text, model_id, voice_settings}`; audio bytes back (mp3, raw 16-bit PCM for `pcm_*`, Ogg/Opus
 * for `opus_*`). Errors as ElevenLabs sends them: `{detail: {status, message}}`, and FastAPI's
 * `{detail: [{type, loc, msg, input}]}` for a body that fails validation (422).
 * Every request is recorded; failures are scripted per request with `next(...)`.
 */
import { spawnSync } from 'node:child_process';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { findFfmpeg } from '../../shared/media/executables';
import { sineWav } from './fake-openai';
import { LoopbackServer } from './loopback-server';

export interface ElevenLabsRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  json: Record<string, unknown> | null;
}

export type ElevenLabsBehaviour =
  | { kind: 'rate_limit'; status?: 'too_many_concurrent_requests' | 'system_busy'; retryAfter?: string }
  | { kind: 'server_error'; status?: number }
  | { kind: 'unauthorized' }
  /** A 422 with FastAPI's list form, or with ElevenLabs' `{status, message}` object. */
  | { kind: 'unprocessable'; form: 'list' | 'object'; message?: string }
  | { kind: 'hang' }
  | { kind: 'drop' };

/** The premade voices the fake account has (ElevenLabs' ids), plus any added with `voices.add`. */
const PREMADE_VOICES = ['21m00Tcm4TlvDq8ikWAM', 'pNInz6obpgDQGcFmaJgB', 'EXAVITQu4vr4xnSDxMaL', 'TxGEqnHWrfWFTfGW9XjX'];
const MODELS = ['eleven_flash_v2_5', 'eleven_multilingual_v2', 'eleven_turbo_v2_5'];
const OUTPUT_FORMATS = /^(mp3_(22050_32|44100_(32|64|96|128|192))|pcm_(8000|16000|22050|24000|44100|48000)|opus_48000_(32|64|96|128|192)|ulaw_8000|alaw_8000)$/;

export class FakeElevenLabs extends LoopbackServer {
  readonly requests: ElevenLabsRequest[] = [];
  readonly voices = new Set(PREMADE_VOICES);
  /** Seconds of speech every request returns. */
  speechSeconds = 1;
  /** Echo the received key in 401 messages (a worst case; ElevenLabs does not). */
  echoKey = false;
  private readonly script: ElevenLabsBehaviour[] = [];

  constructor(readonly apiKey?: string) {
    super();
  }

  protected internalError(res: ServerResponse, message: string): void {
    this.detail(res, 500, 'internal_error', message);
  }

  next(...behaviours: ElevenLabsBehaviour[]): this {
    this.script.push(...behaviours);
    return this;
  }

  reset(): void {
    this.requests.length = 0;
    this.script.length = 0;
    this.speechSeconds = 1;
    this.echoKey = false;
  }

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const url = new URL(req.url ?? '/', 'http://fake');
    let json: Record<string, unknown> | null = null;
    if ((req.headers['content-type'] ?? '').startsWith('application/json')) {
      try {
        json = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
      } catch {
        return this.validation(res, [{ type: 'json_invalid', loc: ['body', 0], msg: 'JSON decode error', input: {} }]);
      }
    }
    this.requests.push({ method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, headers: req.headers, json });

    const given = req.headers['xi-api-key'];
    if (this.apiKey !== undefined && given !== this.apiKey) {
      const shown = this.echoKey ? String(given ?? '') : 'the provided key';
      return this.detail(res, 401, 'invalid_api_key', `Invalid API key: ${shown}`);
    }

    const behaviour = this.script.shift();
    if (behaviour) {
      switch (behaviour.kind) {
        case 'rate_limit': {
          const status = behaviour.status ?? 'too_many_concurrent_requests';
          const message =
            status === 'system_busy'
              ? 'We are experiencing heavy traffic, please try again later.'
              : 'Too many concurrent requests for your subscription. Please upgrade or retry later.';
          return this.detail(res, 429, status, message, behaviour.retryAfter !== undefined ? { 'retry-after': behaviour.retryAfter } : {});
        }
        case 'server_error':
          return this.detail(res, behaviour.status ?? 500, 'internal_error', 'An internal server error occurred.');
        case 'unauthorized':
          return this.detail(res, 401, 'invalid_api_key', 'Invalid API key');
        case 'unprocessable':
          if (behaviour.form === 'list') return this.validation(res, [{ type: 'missing', loc: ['body', 'text'], msg: 'Field required', input: {} }]);
          return this.detail(res, 422, 'invalid_text', behaviour.message ?? 'The text contains characters that cannot be voiced.');
        case 'hang':
          return; // never answers
        case 'drop':
          req.socket.destroy();
          return;
      }
    }

    const match = /^\/v1\/text-to-speech\/([^/]+)$/.exec(url.pathname);
    if (req.method !== 'POST' || !match) return this.detail(res, 404, 'not_found', 'Not Found');
    const voiceId = decodeURIComponent(match[1] ?? '');
    if (!this.voices.has(voiceId)) return this.detail(res, 404, 'voice_not_found', `A voice with the voice_id ${voiceId} was not found.`);
    if (!json || typeof json.text !== 'string' || json.text === '') {
      return this.validation(res, [{ type: 'missing', loc: ['body', 'text'], msg: 'Field required', input: json ?? {} }]);
    }
    if (typeof json.model_id !== 'string' || !MODELS.includes(json.model_id)) {
      return this.detail(res, 400, 'model_not_found', `A model with model ID ${String(json.model_id)} does not exist.`);
    }
    const settings = json.voice_settings as Record<string, unknown> | undefined;
    const speed = settings?.speed;
    if (typeof speed === 'number' && (speed < 0.7 || speed > 1.2)) {
      return this.detail(res, 400, 'invalid_voice_settings', 'Speed must be between 0.7 and 1.2.');
    }
    const format = url.searchParams.get('output_format') ?? 'mp3_44100_128';
    if (!OUTPUT_FORMATS.test(format)) return this.validation(res, [{ type: 'enum', loc: ['query', 'output_format'], msg: 'Input should be a valid output format', input: format }]);
    return this.audio(res, format);
  }

  private audio(res: ServerResponse, format: string): void {
    const [codec, rate, bitrate] = format.split('_');
    const sampleRate = Number(rate);
    const wav = sineWav(this.speechSeconds, sampleRate);
    let bytes: Buffer;
    let contentType: string;
    if (codec === 'pcm') {
      bytes = wav.subarray(44); // raw 16-bit little-endian mono samples, no header
      contentType = 'audio/pcm';
    } else {
      const ffmpeg = findFfmpeg();
      if (!ffmpeg) return this.detail(res, 500, 'internal_error', 'fake upstream has no ffmpeg to encode');
      const args = codec === 'mp3' ? ['-f', 'mp3', '-b:a', `${bitrate}k`] : ['-c:a', 'libopus', '-b:a', `${bitrate}k`, '-f', 'ogg'];
      const result = spawnSync(ffmpeg, ['-hide_banner', '-loglevel', 'error', '-i', 'pipe:0', ...args, 'pipe:1'], { input: wav, maxBuffer: 16 * 1024 * 1024 });
      if (result.status !== 0) return this.detail(res, 500, 'internal_error', result.stderr.toString());
      bytes = result.stdout;
      contentType = codec === 'mp3' ? 'audio/mpeg' : 'audio/ogg';
    }
    res.writeHead(200, { 'content-type': contentType, 'transfer-encoding': 'chunked', 'request-id': `req_${this.requests.length}` });
    res.end(bytes);
  }

  private detail(res: ServerResponse, status: number, code: string, message: string, headers: Record<string, string> = {}): void {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify({ detail: { status: code, message } }));
  }

  private validation(res: ServerResponse, items: Array<Record<string, unknown>>): void {
    res.writeHead(422, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ detail: items }));
  }
}
