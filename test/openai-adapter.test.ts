/**
 * The OpenAI-compatible adapter against a fake upstream that speaks OpenAI's wire protocol:
 * the requests we send (paths, headers, bodies), what we make of the answers (SSE deltas and
 * usage, images, audio, transcriptions) and the error mapping; then end to end through the real
 * app with OPENAI_BASE_URL pointing at the fake and the shipped catalog.
 */
import sharp from 'sharp';
import { ConfigError, loadConfig } from '../shared/config';
import { createOpenAIProvider } from '../shared/providers/openai';
import { estimateDuration } from '../shared/media/audio-duration';
import { wavDuration } from '../shared/media/wav';
import { parseRetryAfter } from '../shared/providers/upstream-http';
import { findFfmpeg } from '../shared/media/executables';
import { ProviderError, ProviderAdapter, TextChunk, TextRequest } from '../shared/providers/types';
import { Generation } from '../shared/db/entities';
import { startTestApp, TestApp } from './helpers/app';
import { FakeOpenAI, RecordedFile, sineWav } from './helpers/fake-openai';
import { userOnPlan } from './helpers/users';

const KEY = 'sk-test-secret-0123456789';
const fake = new FakeOpenAI({ apiKey: KEY });
let adapter: ProviderAdapter;

beforeAll(async () => {
  await fake.start();
  adapter = createOpenAIProvider({ baseUrl: fake.baseUrl, apiKey: KEY });
});
afterAll(() => fake.close());
beforeEach(() => fake.reset());

function signal(ms = 10_000): AbortSignal {
  return AbortSignal.timeout(ms);
}

function textRequest(overrides: Partial<TextRequest> = {}): TextRequest {
  return { upstreamModel: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello' }], temperature: 0.3, maxTokens: 64, maxContext: 128_000, ...overrides };
}

async function collect(chunks: AsyncIterable<TextChunk>): Promise<TextChunk[]> {
  const all: TextChunk[] = [];
  for await (const chunk of chunks) all.push(chunk);
  return all;
}

async function caught(promise: Promise<unknown>): Promise<ProviderError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ProviderError) return error;
    throw error;
  }
  throw new Error('expected a ProviderError');
}

function text() {
  if (!adapter.text) throw new Error('no text capability');
  return adapter.text;
}

describe('configuration', () => {
  it('enables openai with only a key (default base URL) or only a base URL (no key), and not otherwise', () => {
    expect(loadConfig({ OPENAI_API_KEY: 'sk-a' }).providers).toEqual({ openai: { apiKey: 'sk-a', baseUrl: 'https://api.openai.com/v1' } });
    expect(loadConfig({ OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1/' }).providers).toEqual({ openai: { baseUrl: 'http://127.0.0.1:11434/v1' } });
    expect(loadConfig({}).providers).toEqual({});
    expect(loadConfig({ REPLICATE_API_KEY: 'r8_x' }).providers).toEqual({ replicate: { apiKey: 'r8_x', baseUrl: 'https://api.replicate.com/v1' } });
  });

  it('refuses a base URL that is not http(s), naming the variable', () => {
    let error: unknown;
    try {
      loadConfig({ OPENAI_BASE_URL: 'ftp://x' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems.some((p) => p.startsWith('OPENAI_BASE_URL: '))).toBe(true);
  });
});

describe('chat completions', () => {
  it('POSTs model, messages, temperature and max_tokens with the bearer key, and returns content and usage', async () => {
    const result = await text().complete(textRequest(), { signal: signal() });
    expect(result).toEqual({ content: 'Hello from the fake upstream', toolCalls: [], finishReason: 'stop', usage: { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 } });
    const [request] = fake.apiRequests();
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe('/v1/chat/completions');
    expect(request?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(request?.headers['content-type']).toMatch(/^application\/json/);
    expect(request?.json).toEqual({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello' }], temperature: 0.3, max_tokens: 64 });
  });

  it('omits max_tokens when null and passes vision content parts through', async () => {
    const parts = [
      { type: 'text' as const, text: 'What is in this picture?' },
      { type: 'image_url' as const, image_url: { url: 'https://example.test/cat.png' } },
    ];
    await text().complete(textRequest({ maxTokens: null, messages: [{ role: 'system', content: 'Be brief' }, { role: 'user', content: parts }] }), { signal: signal() });
    const body = fake.apiRequests()[0]?.json;
    expect(body).not.toHaveProperty('max_tokens');
    expect(body?.messages).toEqual([{ role: 'system', content: 'Be brief' }, { role: 'user', content: parts }]);
  });

  it('sends no Authorization header when no key is configured (a local Ollama or llama.cpp server)', async () => {
    const open = new FakeOpenAI();
    await open.start();
    try {
      const keyless = createOpenAIProvider({ baseUrl: `${open.baseUrl}/` });
      await keyless.text?.complete(textRequest(), { signal: signal() });
      expect(open.apiRequests()[0]?.path).toBe('/v1/chat/completions');
      expect(open.apiRequests()[0]?.headers.authorization).toBeUndefined();
    } finally {
      await open.close();
    }
  });

  it('streams: stream + stream_options.include_usage, deltas from the SSE chunks, usage from the last one', async () => {
    fake.usage = { prompt_tokens: 7, completion_tokens: 5, total_tokens: 12 };
    const chunks = await collect(text().stream(textRequest(), { signal: signal() }));
    const body = fake.apiRequests()[0]?.json;
    expect(body).toMatchObject({ stream: true, stream_options: { include_usage: true }, model: 'gpt-4o-mini' });
    expect(fake.apiRequests()[0]?.headers.accept).toBe('text/event-stream');
    const deltas = chunks.flatMap((c) => ('delta' in c ? [c.delta] : []));
    expect(deltas).toEqual(['Hello', ' from', ' the', ' fake', ' upstream']);
    expect(chunks.at(-1)).toEqual({ usage: { prompt_tokens: 7, completion_tokens: 5, total_tokens: 12 } });
  });

  it('stops reading a stream when the signal aborts, and the upstream sees the connection close', async () => {
    fake.reply = Array.from({ length: 300 }, (_, i) => `w${i}`).join(' ');
    fake.chunkDelayMs = 10;
    const controller = new AbortController();
    const received: string[] = [];
    const error = await caught(
      (async () => {
        for await (const chunk of text().stream(textRequest(), { signal: controller.signal })) {
          if ('delta' in chunk) received.push(chunk.delta);
          if (received.length === 3) controller.abort();
        }
      })(),
    );
    expect(error.kind).toBe('timeout');
    expect(received).toHaveLength(3);
    for (let i = 0; i < 100 && fake.abortedStreams === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(fake.abortedStreams).toBe(1);
    expect(fake.streamedWords).toBeLessThan(300);
  });

  it('maps an error chunk inside a stream, and a stream cut before [DONE] to unavailable', async () => {
    const received: string[] = [];
    const consume = async () => {
      for await (const chunk of text().stream(textRequest(), { signal: signal() })) if ('delta' in chunk) received.push(chunk.delta);
    };
    fake.next({ kind: 'stream_error', afterWords: 2, message: 'Output blocked by the content filter', code: 'content_filter' });
    expect(await caught(consume())).toMatchObject({ kind: 'refused', message: 'Output blocked by the content filter' });
    expect(received).toEqual(['Hello', ' from']);
    received.length = 0;
    fake.next({ kind: 'stream_error', afterWords: 1, message: 'Internal error', code: null });
    expect(await caught(consume())).toMatchObject({ kind: 'unavailable', message: 'The openai provider failed: Internal error' });
    fake.next({ kind: 'stream_cut', afterWords: 3 });
    expect((await caught(consume())).kind).toBe('unavailable');
    fake.next({ kind: 'drop' });
    expect((await caught(consume())).kind).toBe('unavailable');
  });
});

describe('images', () => {
  it('POSTs model, prompt, size WxH, quality, style, b64_json and n=1; converts to the asked format and reports its size', async () => {
    const image = adapter.image;
    if (!image) throw new Error('no image capability');
    const result = await image.generate(
      {
        upstreamModel: 'dall-e-3',
        prompt: 'a lighthouse in the fog',
        negativePrompt: null,
        width: 1792,
        height: 1024,
        aspectRatio: null,
        format: 'webp',
        quality: 'hd',
        style: 'natural',
        seed: 42,
        inputImage: null,
      },
      { signal: signal() },
    );
    const [request] = fake.apiRequests();
    expect(request?.path).toBe('/v1/images/generations');
    expect(request?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(request?.json).toEqual({ model: 'dall-e-3', prompt: 'a lighthouse in the fog', n: 1, size: '1792x1024', quality: 'hd', style: 'natural', response_format: 'b64_json' });
    expect(result).toMatchObject({ width: 1792, height: 1024, seed: 42, file: { contentType: 'image/webp', extension: 'webp' } });
    const meta = await sharp(result.file.bytes).metadata();
    expect(meta).toMatchObject({ format: 'webp', width: 1792, height: 1024 });
  });

  it('downloads a URL result (without sending the key there) and converts it to jpeg', async () => {
    fake.imageResult = 'url';
    const result = await adapter.image?.generate(
      {
        upstreamModel: 'stable-diffusion-3.5-large',
        prompt: 'a cat',
        negativePrompt: 'dogs',
        width: 768,
        height: 1344,
        aspectRatio: null,
        format: 'jpeg',
        quality: 'standard',
        style: null,
        seed: 7,
        inputImage: null,
      },
      { signal: signal() },
    );
    expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /v1/images/generations', expect.stringMatching(/^GET \/files\/img-\d+\.png$/)]);
    expect(fake.requests[0]?.json).not.toHaveProperty('style');
    expect(fake.requests[0]?.json).toMatchObject({ negative_prompt: 'dogs' });
    expect(fake.requests[1]?.headers.authorization).toBeUndefined();
    expect(result).toMatchObject({ width: 768, height: 1344, seed: 7, file: { contentType: 'image/jpeg', extension: 'jpg' } });
    expect((await sharp(result?.file.bytes).metadata()).format).toBe('jpeg');
  });
});

describe('speech', () => {
  const hasFfmpeg = findFfmpeg() !== null;

  it('POSTs model, input, voice, speed and response_format; returns the WAV bytes with their duration', async () => {
    fake.speechSeconds = 1.5;
    const result = await adapter.speech?.synthesize({ upstreamModel: 'tts-1', text: 'Hello there', voice: 'nova', speed: 1.25, format: 'wav' }, { signal: signal() });
    const [request] = fake.apiRequests();
    expect(request?.path).toBe('/v1/audio/speech');
    expect(request?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(request?.json).toEqual({ model: 'tts-1', input: 'Hello there', voice: 'nova', speed: 1.25, response_format: 'wav' });
    expect(result?.file).toMatchObject({ contentType: 'audio/wav', extension: 'wav' });
    expect(result?.file.bytes.subarray(0, 4).toString('latin1')).toBe('RIFF');
    expect(result?.durationSeconds).toBeCloseTo(1.5, 2);
  });

  (hasFfmpeg ? it : it.skip)('asks for opus when we want ogg, and measures mp3 and ogg with ffmpeg', async () => {
    fake.speechSeconds = 2;
    const ogg = await adapter.speech?.synthesize({ upstreamModel: 'tts-1', text: 'Hi', voice: 'alloy', speed: 1, format: 'ogg' }, { signal: signal() });
    expect(fake.apiRequests()[0]?.json).toMatchObject({ response_format: 'opus' });
    expect(ogg?.file).toMatchObject({ contentType: 'audio/ogg', extension: 'ogg' });
    expect(ogg?.file.bytes.subarray(0, 4).toString('latin1')).toBe('OggS');
    expect(ogg?.durationSeconds).toBeGreaterThan(1.9);
    expect(ogg?.durationSeconds).toBeLessThan(2.1);
    const mp3 = await adapter.speech?.synthesize({ upstreamModel: 'tts-1', text: 'Hi', voice: 'alloy', speed: 1, format: 'mp3' }, { signal: signal() });
    expect(mp3?.file).toMatchObject({ contentType: 'audio/mpeg', extension: 'mp3' });
    expect(mp3?.durationSeconds).toBeGreaterThan(1.9);
    expect(mp3?.durationSeconds).toBeLessThan(2.2);
    // Without ffmpeg the duration is estimated from the bytes (the Ogg granule, the MP3 bitrate).
    const noFfmpeg = createOpenAIProvider({ baseUrl: fake.baseUrl, apiKey: KEY, ffmpeg: () => null });
    const estimated = await noFfmpeg.speech?.synthesize({ upstreamModel: 'tts-1', text: 'Hi', voice: 'alloy', speed: 1, format: 'ogg' }, { signal: signal() });
    expect(estimated?.durationSeconds).toBeCloseTo(2, 1);
    if (mp3) expect(estimateDuration(mp3.file.bytes)).toBeGreaterThan(1.5);
  });

  it('is bad_request with the provider message for a voice the upstream does not have', async () => {
    const error = await caught(Promise.resolve(adapter.speech?.synthesize({ upstreamModel: 'tts-1', text: 'Hi', voice: 'male-qn-qingse', speed: 1, format: 'wav' }, { signal: signal() })));
    expect(error.kind).toBe('bad_request');
    expect(error.message).toMatch(/HTTP 400.*Invalid value for 'voice'/);
  });
});

describe('transcriptions', () => {
  const wav = sineWav(0.75);

  it('POSTs multipart file, model, language and verbose_json; maps the language name to its code', async () => {
    const result = await adapter.transcription?.transcribe({ upstreamModel: 'whisper-1', audio: wav, language: 'de', diarize: false }, { signal: signal() });
    const [request] = fake.apiRequests();
    expect(request?.path).toBe('/v1/audio/transcriptions');
    expect(request?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(request?.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    const file = request?.form?.file as RecordedFile;
    expect(file.filename).toBe('audio.wav');
    expect(file.type).toBe('audio/wav');
    expect(file.bytes.equals(wav)).toBe(true);
    expect(request?.form).toMatchObject({ model: 'whisper-1', language: 'de', response_format: 'verbose_json' });
    expect(result).toEqual({ text: 'Hello from the fake transcriber.', language: 'de', durationSeconds: 1.25 });
  });

  it('omits language when none is given; asks the gpt-4o transcribers for json and measures the audio itself', async () => {
    const result = await adapter.transcription?.transcribe({ upstreamModel: 'gpt-4o-mini-transcribe', audio: wav, language: null, diarize: false }, { signal: signal() });
    const form = fake.apiRequests()[0]?.form;
    expect(form).not.toHaveProperty('language');
    expect(form).toMatchObject({ model: 'gpt-4o-mini-transcribe', response_format: 'json' });
    expect(result?.text).toBe('Hello from the fake transcriber.');
    expect(result?.durationSeconds).toBeCloseTo(0.75, 3);
  });

  it('falls back to json when a server refuses verbose_json for a model', async () => {
    fake.next({ kind: 'error', status: 400, message: "response_format 'verbose_json' is not supported for this model", code: 'unsupported_value' });
    const result = await adapter.transcription?.transcribe({ upstreamModel: 'whisper-large-v3', audio: wav, language: 'en', diarize: false }, { signal: signal() });
    expect(fake.apiRequests().map((r) => r.form?.response_format)).toEqual(['verbose_json', 'json']);
    expect(result).toMatchObject({ language: 'en', durationSeconds: 2 });
  });
});

describe('error mapping', () => {
  it('429 → rate_limited with Retry-After seconds, an HTTP date, or retry-after-ms', async () => {
    fake.next({ kind: 'rate_limit', retryAfter: '3' });
    const seconds = await caught(text().complete(textRequest(), { signal: signal() }));
    expect(seconds).toMatchObject({ kind: 'rate_limited', retryAfterMs: 3000 });
    expect(seconds.transient).toBe(true);
    fake.next({ kind: 'rate_limit', retryAfter: '2', retryAfterMs: '1500' });
    expect(await caught(text().complete(textRequest(), { signal: signal() }))).toMatchObject({ kind: 'rate_limited', retryAfterMs: 1500 });
    const now = Date.parse('2030-01-01T00:00:00Z');
    expect(parseRetryAfter(new Headers({ 'retry-after': 'Tue, 01 Jan 2030 00:00:05 GMT' }), now)).toBe(5000);
    expect(parseRetryAfter(new Headers({}), now)).toBeUndefined();
  });

  it('a content-policy 400 → refused with the provider message (by code or by wording)', async () => {
    fake.next({ kind: 'policy' });
    const byCode = await caught(text().complete(textRequest(), { signal: signal() }));
    expect(byCode.kind).toBe('refused');
    expect(byCode.message).toMatch(/^Your request was rejected as a result of our safety system/);
    fake.next({ kind: 'policy', code: null, message: 'This request violates our content policy.' });
    expect(await caught(text().complete(textRequest(), { signal: signal() }))).toMatchObject({ kind: 'refused', message: 'This request violates our content policy.' });
  });

  it('other 4xx → bad_request with a clear message; 5xx and network errors → unavailable', async () => {
    fake.next({ kind: 'error', status: 404, message: 'The model `gpt-9` does not exist', code: 'model_not_found' });
    expect(await caught(text().complete(textRequest(), { signal: signal() }))).toMatchObject({
      kind: 'bad_request',
      message: 'The openai provider rejected the request (HTTP 404): The model `gpt-9` does not exist',
    });
    fake.next({ kind: 'server_error', status: 503 });
    expect(await caught(text().complete(textRequest(), { signal: signal() }))).toMatchObject({ kind: 'unavailable', message: 'The openai provider is unavailable (HTTP 503)' });
    fake.next({ kind: 'drop' });
    expect((await caught(text().complete(textRequest(), { signal: signal() }))).kind).toBe('unavailable');
    const gone = new FakeOpenAI();
    await gone.start();
    const closedUrl = gone.baseUrl;
    await gone.close();
    const unreachable = createOpenAIProvider({ baseUrl: closedUrl, apiKey: KEY });
    expect(await caught(Promise.resolve(unreachable.text?.complete(textRequest(), { signal: signal() })))).toMatchObject({
      kind: 'unavailable',
      message: 'The openai provider could not be reached',
    });
  });

  it('a hung upstream → timeout when the signal fires', async () => {
    fake.next({ kind: 'hang' });
    const started = Date.now();
    const error = await caught(text().complete(textRequest(), { signal: AbortSignal.timeout(200) }));
    expect(error).toMatchObject({ kind: 'timeout', message: 'The openai provider did not answer in time' });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('never puts the key in an error message, even when the upstream echoes it', async () => {
    const errors: ProviderError[] = [];
    fake.next({ kind: 'error', status: 400, message: `Invalid request for key ${KEY}` });
    errors.push(await caught(text().complete(textRequest(), { signal: signal() })));
    fake.next({ kind: 'policy', message: `Refused (safety system) for ${KEY}` });
    errors.push(await caught(text().complete(textRequest(), { signal: signal() })));
    fake.echoKey = true;
    const wrongKey = `${KEY}-wrong`;
    const misconfigured = createOpenAIProvider({ baseUrl: fake.baseUrl, apiKey: wrongKey });
    const unauthorized = await caught(Promise.resolve(misconfigured.text?.complete(textRequest(), { signal: signal() })));
    expect(unauthorized).toMatchObject({ kind: 'bad_request', message: "The openai provider rejected the service's credentials (HTTP 401)" });
    errors.push(unauthorized);
    for (const error of errors) {
      expect(error.message).not.toContain(KEY);
      expect(String(error.stack)).not.toContain(KEY);
    }
    expect(errors[0]?.message).toContain('[redacted]');
  });
});

it('reads WAV durations from the header, also for streamed WAVs with no data size', () => {
  const wav = sineWav(0.5);
  expect(wavDuration(wav)).toBeCloseTo(0.5, 5);
  const streamed = Buffer.from(wav);
  streamed.writeUInt32LE(0xffffffff, 40);
  expect(wavDuration(streamed)).toBeCloseTo(0.5, 5);
  expect(wavDuration(Buffer.from('not a wav'))).toBeNull();
});

describe('end to end through /generate', () => {
  let app: TestApp;
  const upstream = new FakeOpenAI({ apiKey: 'sk-test' });

  beforeAll(async () => {
    await upstream.start();
    app = await startTestApp({ OPENAI_BASE_URL: upstream.baseUrl, OPENAI_API_KEY: 'sk-test' }, { worker: true });
  });
  afterAll(async () => {
    await app?.close();
    await upstream.close();
  });
  beforeEach(() => upstream.reset());

  async function setup(slug: string, body: Record<string, unknown>) {
    const user = await userOnPlan(app, 'elite');
    const auth = ['authorization', `Bearer ${user.accessToken}`] as const;
    const quote = await app.http().post(`/api/v2/models/${slug}/calculate-price`).send({ model: slug, ...body });
    expect(quote.status).toBe(200);
    const balance = async () => (await app.http().get('/api/v2/user/balance').set(...auth)).body.token_balance as number;
    return { user, auth, price: quote.body.token_cost as number, before: await balance(), balance };
  }

  function sseEvents(textBody: string) {
    return textBody
      .split('\n\n')
      .filter((block) => block.trim())
      .map((block) => ({ event: /event: (.+)/.exec(block)?.[1], data: JSON.parse(/data: (.+)/.exec(block)?.[1] ?? 'null') }));
  }

  it('offers the openai models of the shipped catalog', async () => {
    const res = await app.http().get('/api/v2/models');
    const slugs = res.body.models.map((m: { slug: string }) => m.slug);
    expect(slugs).toEqual(expect.arrayContaining(['chat-fast', 'chat-vision', 'image-prompt-following', 'tts-standard', 'stt-fast', 'stt-accurate']));
  });

  it('chat-fast completes with the upstream text and usage, charged its price', async () => {
    const { auth, price, before, balance } = await setup('chat-fast', { prompt: 'Say hello' });
    const res = await app.http().post('/api/v2/generate').set(...auth).send({ model: 'chat-fast', prompt: 'Say hello', max_tokens: 100 });
    expect(res.body).toMatchObject({ status: 'completed', content: 'Hello from the fake upstream', tokens_used: price, usage: upstream.usage });
    const [request] = upstream.apiRequests();
    expect(request?.headers.authorization).toBe('Bearer sk-test');
    expect(request?.json).toMatchObject({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello' }], max_tokens: 100 });
    expect(before - (await balance())).toBe(price);
  });

  it('chat-fast streams through our SSE with the upstream deltas and usage, charged once', async () => {
    const { auth, price, before, balance } = await setup('chat-fast', { prompt: 'stream' });
    const res = await app
      .http()
      .post('/api/v2/generate')
      .set(...auth)
      .send({ model: 'chat-fast', prompt: 'stream', stream: true })
      .buffer(true)
      .parse((response, done) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString()));
        response.on('end', () => done(null, body));
      });
    expect(res.headers['content-type']).toMatch(/text\/event-stream/);
    const events = sseEvents(res.body as string);
    expect(events.filter((e) => e.event === 'content_delta').map((e) => e.data.delta).join('')).toBe('Hello from the fake upstream');
    expect(events.at(-1)).toMatchObject({ event: 'generation_end', data: { status: 'completed', tokens_used: price, usage: upstream.usage } });
    expect(upstream.apiRequests()[0]?.json).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(before - (await balance())).toBe(price);
  });

  it('a refusal mid-stream ends the SSE with a failed generation_end, uncharged', async () => {
    const { auth, before, balance } = await setup('chat-fast', { prompt: 'stream' });
    upstream.next({ kind: 'stream_error', afterWords: 2, message: 'Output blocked by the content filter', code: 'content_filter' });
    const res = await app
      .http()
      .post('/api/v2/generate')
      .set(...auth)
      .send({ model: 'chat-fast', prompt: 'stream', stream: true })
      .buffer(true)
      .parse((response, done) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString()));
        response.on('end', () => done(null, body));
      });
    const events = sseEvents(res.body as string);
    expect(events.filter((e) => e.event === 'content_delta').map((e) => e.data.delta).join('')).toBe('Hello from');
    expect(events.at(-1)).toMatchObject({ event: 'generation_end', data: { status: 'failed', tokens_used: 0, error: 'Output blocked by the content filter' } });
    expect(await balance()).toBe(before);
  });

  it('image-prompt-following completes with a converted image of the asked size', async () => {
    const body = { prompt: 'a lighthouse', size: '1024x1792', quality: 'hd', style: 'vivid', format: 'png' };
    const { auth, price, before, balance } = await setup('image-prompt-following', body);
    const res = await app.http().post('/api/v2/generate').set(...auth).send({ model: 'image-prompt-following', ...body });
    expect(res.body.status).toBe('completed');
    expect(res.body.tokens_spent).toBe(price);
    expect(price).toBe(16);
    expect(upstream.apiRequests()[0]?.json).toEqual({
      model: 'dall-e-3',
      prompt: 'a lighthouse',
      n: 1,
      size: '1024x1792',
      quality: 'hd',
      style: 'vivid',
      response_format: 'b64_json',
    });
    const row = await app.container.db.repo(Generation).findOneByOrFail({ id: Number(String(res.body.id).replace('gen_', '')) });
    expect(JSON.parse(row.resultMetadata ?? '{}')).toMatchObject({ width: 1024, height: 1792 });
    const file = await app.http().get(new URL(res.body.result_url as string).pathname).buffer(true);
    expect(file.headers['content-type']).toBe('image/png');
    expect(before - (await balance())).toBe(price);
  });

  it('tts-standard completes with the upstream audio, charged its price', async () => {
    const body = { text: 'Hello there', voice_id: 'echo', format: 'wav' };
    const { auth, price, before, balance } = await setup('tts-standard', body);
    const res = await app.http().post('/api/v2/generate').set(...auth).send({ model: 'tts-standard', ...body });
    expect(res.body.status).toBe('completed');
    expect(upstream.apiRequests()[0]?.json).toMatchObject({ model: 'tts-1', input: 'Hello there', voice: 'echo', response_format: 'wav' });
    const row = await app.container.db.repo(Generation).findOneByOrFail({ id: Number(String(res.body.id).replace('gen_', '')) });
    expect(JSON.parse(row.resultMetadata ?? '{}').duration).toBeCloseTo(1, 2);
    expect(before - (await balance())).toBe(price);
  });

  it('stt-fast transcribes a data: WAV URL, charged its price', async () => {
    const body = { audio_url: `data:audio/wav;base64,${sineWav(0.5).toString('base64')}` };
    const { auth, price, before, balance } = await setup('stt-fast', body);
    const res = await app.http().post('/api/v2/generate').set(...auth).send({ model: 'stt-fast', ...body });
    expect(res.body.status).toBe('completed');
    expect(res.body.content ?? res.body.result_text).toBe('Hello from the fake transcriber.');
    const form = upstream.apiRequests()[0]?.form;
    expect(form).toMatchObject({ model: 'gpt-4o-mini-transcribe', response_format: 'json' });
    expect((form?.file as RecordedFile).filename).toBe('audio.wav');
    expect(before - (await balance())).toBe(price);
  });

  it('retries an upstream 429 once within the request, then succeeds and charges once', async () => {
    const { auth, price, before, balance } = await setup('chat-fast', { prompt: 'x' });
    upstream.next({ kind: 'rate_limit', retryAfter: '0' });
    const res = await app.http().post('/api/v2/generate').set(...auth).send({ model: 'chat-fast', prompt: 'x' });
    expect(res.body.status).toBe('completed');
    expect(upstream.apiRequests()).toHaveLength(2);
    expect(before - (await balance())).toBe(price);
  });

  it('a content-policy refusal ends failed with the provider message and 0 tokens, without a retry', async () => {
    const { auth, before, balance } = await setup('image-prompt-following', { prompt: 'something refused' });
    upstream.next({ kind: 'policy' });
    const res = await app.http().post('/api/v2/generate').set(...auth).send({ model: 'image-prompt-following', prompt: 'something refused' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'failed', tokens_spent: 0 });
    expect(res.body.error).toMatch(/^Your request was rejected as a result of our safety system/);
    expect(upstream.apiRequests()).toHaveLength(1);
    expect(await balance()).toBe(before);
  });

  it('a 5xx twice ends failed, uncharged, with no key in the error', async () => {
    const { auth, before, balance } = await setup('chat-fast', { prompt: 'x' });
    upstream.next({ kind: 'server_error' }, { kind: 'server_error', status: 502 });
    const res = await app.http().post('/api/v2/generate').set(...auth).send({ model: 'chat-fast', prompt: 'x' });
    expect(res.body).toMatchObject({ status: 'failed', tokens_spent: 0, error: 'The openai provider is unavailable (HTTP 502)' });
    expect(upstream.apiRequests()).toHaveLength(2);
    expect(JSON.stringify(res.body)).not.toContain('sk-test');
    expect(await balance()).toBe(before);
  });
});
