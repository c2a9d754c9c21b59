/**
 * The Replicate-style prediction adapter against a fake that speaks Replicate's protocol: the
 * requests we send (paths, headers, inputs), polling with backoff and Retry-After, cancel on
 * abort, the error mapping, outputs (downloaded without the key from another origin), the webhook
 * signature check and the signals that wake a poll; then end to end through the real app with
 * REPLICATE_BASE_URL pointing at the fake and the shipped catalog.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { Generation } from '../shared/db/entities';
import { ConfigError, loadConfig } from '../shared/config';
import { findFfmpeg } from '../shared/media/executables';
import { createReplicateProvider, PredictionSignals, ReplicateProviderOptions } from '../shared/providers/replicate';
import { signWebhook, verifyWebhook } from '../shared/providers/replicate/webhook';
import { createRedis } from '../shared/redis';
import { ImageRequest, MusicRequest, ProviderAdapter, ProviderError, VideoRequest } from '../shared/providers/types';
import { startTestApp, TestApp } from './helpers/app';
import { FakeReplicate } from './helpers/fake-replicate';
import { userOnPlan } from './helpers/users';

const KEY = 'r8_test-secret-0123456789';
const SECRET = `whsec_${Buffer.from('a test signing secret of 32 byte').toString('base64')}`;
const fake = new FakeReplicate({ apiKey: KEY });

beforeAll(async () => {
  await fake.start();
}, 30_000);
afterAll(() => fake.close());
beforeEach(() => fake.reset());

function adapterWith(options: Partial<ReplicateProviderOptions> = {}): ProviderAdapter {
  return createReplicateProvider({ baseUrl: fake.baseUrl, apiKey: KEY, pollInitialMs: 20, pollMaxMs: 80, ...options });
}

function signal(ms = 10_000): AbortSignal {
  return AbortSignal.timeout(ms);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not reached');
    await sleep(10);
  }
}

function imageRequest(overrides: Partial<ImageRequest> = {}): ImageRequest {
  return {
    upstreamModel: 'ideogram-ai/ideogram-v2',
    prompt: 'a red fox in the snow',
    negativePrompt: 'blurry',
    width: 1024,
    height: 1024,
    aspectRatio: '16:9',
    format: 'png',
    quality: 'standard',
    style: null,
    seed: 42,
    inputImage: null,
    ...overrides,
  };
}

function videoRequest(overrides: Partial<VideoRequest> = {}): VideoRequest {
  return {
    upstreamModel: 'wan-video/wan-2.2-t2v-fast',
    prompt: 'waves at dusk',
    negativePrompt: null,
    durationSeconds: 5,
    aspectRatio: '16:9',
    resolution: '480p',
    seed: 0,
    startImage: null,
    ...overrides,
  };
}

function musicRequest(overrides: Partial<MusicRequest> = {}): MusicRequest {
  return { upstreamModel: 'meta/musicgen', prompt: 'calm piano', lyrics: null, instrumental: true, durationSeconds: 3, format: 'wav', seed: 0, ...overrides };
}

function image(adapter: ProviderAdapter) {
  if (!adapter.image) throw new Error('no image capability');
  return adapter.image;
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

describe('configuration', () => {
  it('enables replicate at https://api.replicate.com/v1 with a key, and reads the webhook secret', () => {
    const config = loadConfig({ REPLICATE_API_KEY: 'r8_x', REPLICATE_WEBHOOK_SECRET: SECRET });
    expect(config.providers.replicate).toEqual({ apiKey: 'r8_x', baseUrl: 'https://api.replicate.com/v1' });
    expect(config.replicateWebhook).toEqual({ secret: SECRET });
    expect(loadConfig({}).replicateWebhook).toBeUndefined();
  });

  it('refuses a webhook secret that is not whsec_<base64>, naming the variable', () => {
    let error: unknown;
    try {
      loadConfig({ REPLICATE_WEBHOOK_SECRET: 'not a secret' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems.some((p) => p.startsWith('REPLICATE_WEBHOOK_SECRET: '))).toBe(true);
  });

  it('offers image, video, music and the image tools', () => {
    const adapter = adapterWith();
    expect(adapter.name).toBe('replicate');
    expect(adapter.image && adapter.video && adapter.music && adapter.tool).toBeTruthy();
  });
});

describe('requests', () => {
  it('POSTs {input} to /models/{owner}/{name}/predictions with the bearer key, then polls GET /predictions/{id}', async () => {
    const result = await image(adapterWith()).generate(imageRequest(), { signal: signal() });
    const [create] = fake.creates();
    expect(create?.path).toBe('/v1/models/ideogram-ai/ideogram-v2/predictions');
    expect(create?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(create?.headers['content-type']).toBe('application/json');
    expect(create?.json).toEqual({
      input: { prompt: 'a red fox in the snow', negative_prompt: 'blurry', aspect_ratio: '16:9', output_format: 'png', seed: 42 },
    });
    const id = fake.latest().id;
    expect(fake.polls(id).length).toBeGreaterThanOrEqual(1);
    expect(fake.polls(id)[0]?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(result.file.contentType).toBe('image/png');
    expect(result).toMatchObject({ width: 96, height: 64, seed: 42 });
  });

  it('records the prediction it starts, and a later run of the same generation resumes it instead of paying again', async () => {
    const saved: string[] = [];
    const first = await image(adapterWith()).generate(imageRequest(), { signal: signal(), upstreamRef: { previous: null, save: async (ref) => void saved.push(ref) } });
    const id = fake.latest().id;
    expect(saved).toEqual([`replicate:${id}`]);
    // A retry (a download that failed, a worker that died): the same prediction, no new create.
    const again = await image(adapterWith()).generate(imageRequest(), { signal: signal(), upstreamRef: { previous: saved[0] as string, save: async (ref) => void saved.push(ref) } });
    expect(fake.creates()).toHaveLength(1);
    expect(saved).toHaveLength(1);
    expect(again.file.bytes.equals(first.file.bytes)).toBe(true);
    // One that failed (or that the API no longer knows) is not resumed: a new prediction starts.
    fake.plan({ pollsBeforeEnd: 0, end: { kind: 'failed', error: 'out of memory' } });
    await expect(image(adapterWith()).generate(imageRequest(), { signal: signal() })).rejects.toThrow();
    const failed = fake.latest().id;
    await image(adapterWith()).generate(imageRequest(), { signal: signal(), upstreamRef: { previous: `replicate:${failed}`, save: async (ref) => void saved.push(ref) } });
    await image(adapterWith()).generate(imageRequest(), { signal: signal(), upstreamRef: { previous: 'replicate:no-such-prediction', save: async () => undefined } });
    expect(fake.creates()).toHaveLength(4);
    expect(saved).toHaveLength(2);
    expect(saved[1]).not.toBe(`replicate:${failed}`);
  });

  it('sends width/height without an aspect ratio, the input image as a data: URI, and omits seed 0', async () => {
    const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#00f' } }).png().toBuffer();
    await image(adapterWith()).generate(imageRequest({ aspectRatio: null, seed: 0, negativePrompt: null, inputImage: png, format: 'jpeg' }), { signal: signal() });
    expect(fake.creates()[0]?.json).toEqual({
      input: { prompt: 'a red fox in the snow', width: 1024, height: 1024, output_format: 'jpg', image: `data:image/png;base64,${png.toString('base64')}` },
    });
  });

  it('uses /predictions with the version for owner/name:version ids', async () => {
    await image(adapterWith()).generate(imageRequest({ upstreamModel: 'acme/painter:5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa' }), { signal: signal() });
    const [create] = fake.creates();
    expect(create?.path).toBe('/v1/predictions');
    expect(create?.json).toMatchObject({ version: '5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa', input: { prompt: 'a red fox in the snow' } });
  });

  it('downloads the output from another origin without the key, and converts it to the asked format', async () => {
    fake.plan({ pollsBeforeEnd: 0, end: { kind: 'succeeded', output: 'image', shape: 'array' } });
    const result = await image(adapterWith()).generate(imageRequest({ format: 'webp' }), { signal: signal() });
    expect(fake.cdnRequests).toHaveLength(1);
    expect(fake.cdnRequests[0]?.headers.authorization).toBeUndefined();
    expect(result.file).toMatchObject({ contentType: 'image/webp', extension: 'webp' });
    expect((await sharp(result.file.bytes).metadata()).format).toBe('webp');
  });

  it('sends the key to an output URL on the API origin itself (its file API)', async () => {
    fake.outputOrigin = 'api';
    await image(adapterWith()).generate(imageRequest(), { signal: signal() });
    const download = fake.requests.find((r) => r.path.startsWith('/v1/files/'));
    expect(download?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(fake.cdnRequests).toHaveLength(0);
  });

  it('video: prompt, duration, aspect_ratio, resolution, start_image; an MP4 with its duration (and a thumbnail with ffmpeg)', async () => {
    const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#0f0' } }).png().toBuffer();
    const adapter = adapterWith();
    if (!adapter.video) throw new Error('no video');
    const result = await adapter.video.generate(videoRequest({ startImage: png, seed: 7, negativePrompt: 'text' }), { signal: signal(30_000) });
    expect(fake.creates()[0]?.path).toBe('/v1/models/wan-video/wan-2.2-t2v-fast/predictions');
    expect(fake.creates()[0]?.json).toEqual({
      input: { prompt: 'waves at dusk', duration: 5, aspect_ratio: '16:9', resolution: '480p', negative_prompt: 'text', seed: 7, start_image: `data:image/png;base64,${png.toString('base64')}` },
    });
    expect(result.file).toMatchObject({ contentType: 'video/mp4', extension: 'mp4' });
    expect(result.durationSeconds).toBe(5);
    if (findFfmpeg()) {
      expect(result.thumbnail?.contentType).toBe('image/webp');
      expect(result).toMatchObject({ width: 64, height: 36 });
    } else {
      expect(result).toMatchObject({ thumbnail: null, width: 854, height: 480 });
    }
  }, 30_000);

  it('music: prompt, duration, output_format; the audio with its measured duration', async () => {
    const adapter = adapterWith();
    if (!adapter.music) throw new Error('no music');
    const result = await adapter.music.compose(musicRequest(), { signal: signal() });
    expect(fake.creates()[0]?.json).toEqual({ input: { prompt: 'calm piano', duration: 3, output_format: 'wav' } });
    expect(result.file).toMatchObject({ contentType: 'audio/wav', extension: 'wav' });
    expect(result.durationSeconds).toBeCloseTo(3, 2);
  });
});

describe('polling', () => {
  it('backs off exponentially from pollInitialMs up to pollMaxMs', async () => {
    fake.plan({ pollsBeforeEnd: 6, end: { kind: 'succeeded' } });
    const started = Date.now();
    await image(adapterWith({ pollInitialMs: 40, pollMaxMs: 200 })).generate(imageRequest(), { signal: signal() });
    const times = [started, ...fake.polls().map((r) => r.at)];
    const gaps = times.slice(1).map((t, i) => t - (times[i] ?? 0));
    expect(gaps).toHaveLength(7);
    // Waits of 40, 80, 160, 200, 200…: timers never fire early; the cap keeps the last ones far below 40·2^6.
    [40, 80, 160, 200, 200, 200, 200].forEach((expected, i) => expect(gaps[i]).toBeGreaterThanOrEqual(expected - 5));
    expect(gaps[6]).toBeLessThan(1_000);
  });

  it('honours Retry-After on a 429 poll, and tolerates a 5xx poll', async () => {
    fake.plan({ pollsBeforeEnd: 1, end: { kind: 'succeeded' } });
    fake.nextPoll({ kind: 'rate_limit', retryAfter: '1' }, { kind: 'server_error', status: 502 });
    await image(adapterWith()).generate(imageRequest(), { signal: signal() });
    const polls = fake.polls();
    expect(polls.length).toBeGreaterThanOrEqual(3);
    expect((polls[1]?.at ?? 0) - (polls[0]?.at ?? 0)).toBeGreaterThanOrEqual(950);
  });

  it('honours a Retry-After sent with a processing prediction', async () => {
    fake.plan({ pollsBeforeEnd: 1, end: { kind: 'succeeded' }, retryAfter: '1' });
    await image(adapterWith()).generate(imageRequest(), { signal: signal() });
    const polls = fake.polls();
    expect(polls).toHaveLength(2);
    expect((polls[1]?.at ?? 0) - (polls[0]?.at ?? 0)).toBeGreaterThanOrEqual(950);
  });

  it('reports progress from the percentages in the logs', async () => {
    fake.plan({ pollsBeforeEnd: 3, end: { kind: 'succeeded' }, logLine: '{n}0%|███      | step' });
    const seen: number[] = [];
    await image(adapterWith()).generate(imageRequest(), { signal: signal(), onProgress: (p) => seen.push(p) });
    expect(seen).toEqual(expect.arrayContaining([10, 20, 30]));
  });

  it('on timeout cancels the prediction upstream and fails with timeout', async () => {
    fake.plan({ pollsBeforeEnd: Infinity, end: { kind: 'succeeded' } });
    const error = await caught(image(adapterWith()).generate(imageRequest(), { signal: signal(300) }));
    expect(error.kind).toBe('timeout');
    const [cancel] = fake.cancels();
    expect(cancel?.path).toBe(`/v1/predictions/${fake.latest().id}/cancel`);
    expect(cancel?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(fake.latest().status).toBe('canceled');
  });

  it('a cancelled job (its signal aborted) cancels the prediction too', async () => {
    fake.plan({ pollsBeforeEnd: Infinity, end: { kind: 'succeeded' } });
    const controller = new AbortController();
    const pending = caught(image(adapterWith()).generate(imageRequest(), { signal: controller.signal }));
    await until(() => fake.polls().length >= 1);
    controller.abort();
    expect((await pending).kind).toBe('timeout');
    expect(fake.cancels()).toHaveLength(1);
  });
});

describe('error mapping', () => {
  it('create 429 → rate_limited with Retry-After', async () => {
    fake.nextCreate({ kind: 'rate_limit', retryAfter: '7' });
    const error = await caught(image(adapterWith()).generate(imageRequest(), { signal: signal() }));
    expect(error).toMatchObject({ kind: 'rate_limited', retryAfterMs: 7_000 });
  });

  it('5xx and network errors → unavailable', async () => {
    fake.nextCreate({ kind: 'server_error', status: 503 });
    expect((await caught(image(adapterWith()).generate(imageRequest(), { signal: signal() }))).kind).toBe('unavailable');
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', () => resolve()));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const unreachable = createReplicateProvider({ baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: KEY });
    expect((await caught(image(unreachable).generate(imageRequest(), { signal: signal() }))).kind).toBe('unavailable');
  });

  it('401 → unavailable, saying the credentials were refused, without the key', async () => {
    const wrongKey = 'r8_wrong-key-abcdef';
    const error = await caught(image(adapterWith({ apiKey: wrongKey })).generate(imageRequest(), { signal: signal() }));
    expect(error.kind).toBe('unavailable');
    expect(error.message).toMatch(/credentials/);
    expect(error.message).not.toContain(wrongKey);
  });

  it('422 → bad_request with the provider detail, the key scrubbed even if echoed', async () => {
    fake.nextCreate({ kind: 'error', status: 422, title: 'Input validation failed', detail: '- input.duration: duration must be one of 5, 10' });
    const error = await caught(image(adapterWith()).generate(imageRequest(), { signal: signal() }));
    expect(error.kind).toBe('bad_request');
    expect(error.message).toContain('duration must be one of 5, 10');
    fake.echoKey = true;
    const echoed = await caught(image(adapterWith()).generate(imageRequest({ prompt: '' }), { signal: signal() }));
    expect(echoed.kind).toBe('bad_request');
    expect(echoed.message).toContain('prompt is required');
    expect(echoed.message).not.toContain(KEY);
  });

  it('a failed prediction refused under the content policy → refused with the provider message', async () => {
    const message = 'NSFW content detected. Try running it again, or try a different prompt.';
    fake.plan({ pollsBeforeEnd: 0, end: { kind: 'failed', error: message } });
    const error = await caught(image(adapterWith()).generate(imageRequest(), { signal: signal() }));
    expect(error).toMatchObject({ kind: 'refused', message });
    expect(fake.cancels()).toHaveLength(0);
  });

  it('other failures → bad_request (or unavailable when transient); canceled → unavailable', async () => {
    fake.plan(
      { pollsBeforeEnd: 0, end: { kind: 'failed', error: 'Invalid image: could not decode' } },
      { pollsBeforeEnd: 0, end: { kind: 'failed', error: 'CUDA out of memory' } },
      { pollsBeforeEnd: 1, end: { kind: 'canceled' } },
    );
    const adapter = adapterWith();
    const failed = await caught(image(adapter).generate(imageRequest(), { signal: signal() }));
    expect(failed).toMatchObject({ kind: 'bad_request', message: 'The replicate prediction failed: Invalid image: could not decode' });
    expect((await caught(image(adapter).generate(imageRequest(), { signal: signal() }))).kind).toBe('unavailable');
    expect((await caught(image(adapter).generate(imageRequest(), { signal: signal() }))).kind).toBe('unavailable');
  });
});

describe('webhooks', () => {
  it('asks for a completed-only webhook, and a signal wakes the poll before a long Retry-After', async () => {
    const signals = new PredictionSignals();
    const adapter = adapterWith({ webhook: { url: 'https://gensvc.example/api/v2/providers/replicate/webhook', signals } });
    fake.plan({ pollsBeforeEnd: Infinity, end: { kind: 'succeeded' }, retryAfter: '60' });
    const result = image(adapter).generate(imageRequest(), { signal: signal(20_000) });
    await until(() => fake.polls().length >= 1);
    expect(fake.creates()[0]?.json).toMatchObject({ webhook: 'https://gensvc.example/api/v2/providers/replicate/webhook', webhook_events_filter: ['completed'] });
    const id = fake.latest().id;
    await fake.finish(id);
    const woken = Date.now();
    await signals.notify(id);
    expect((await result).file.contentType).toBe('image/png');
    expect(Date.now() - woken).toBeLessThan(5_000);
    expect(fake.polls(id)).toHaveLength(2);
    await signals.close();
  });

  it('a signal for another prediction, or after unwatching, wakes nobody', async () => {
    const signals = new PredictionSignals();
    let calls = 0;
    const unwatch = await signals.watch('p1', () => (calls += 1));
    await signals.notify('p2');
    await signals.notify('p1');
    unwatch();
    await signals.notify('p1');
    expect(calls).toBe(1);
    await signals.close();
  });

  const withRedis = process.env.TEST_REDIS_URL ? it : it.skip;
  withRedis('carries a signal from one process to another over Redis pub/sub', async () => {
    const url = process.env.TEST_REDIS_URL ?? '';
    const prefix = `gensvc-test-signals-${Date.now()}`;
    const worker = new PredictionSignals({ connect: () => createRedis(url), prefix });
    const web = new PredictionSignals({ connect: () => createRedis(url), prefix });
    try {
      const woken = new Promise<void>((resolve) => {
        void worker.watch('pred-x', resolve);
      });
      await sleep(100);
      await web.notify('pred-x');
      await Promise.race([woken, sleep(5_000).then(() => Promise.reject(new Error('not woken')))]);
    } finally {
      await worker.close();
      await web.close();
    }
  });

  describe('signature verification', () => {
    const body = JSON.stringify({ id: 'pred1', status: 'succeeded' });
    const now = Date.now();
    const timestamp = Math.floor(now / 1000);
    const headers = (signature: string, ts = String(timestamp)) => ({ id: 'msg_1', timestamp: ts, signature });

    it('accepts a valid signature (also among several)', () => {
      const signature = signWebhook(SECRET, 'msg_1', timestamp, body);
      expect(verifyWebhook(SECRET, headers(signature), body, now)).toEqual({ ok: true });
      expect(verifyWebhook(SECRET, headers(`v1,AAAA ${signature}`), body, now)).toEqual({ ok: true });
    });

    it('rejects a wrong secret, a tampered body, an old or future timestamp, and missing headers', () => {
      const other = `whsec_${Buffer.from('another secret entirely, 32 byte').toString('base64')}`;
      expect(verifyWebhook(SECRET, headers(signWebhook(other, 'msg_1', timestamp, body)), body, now).ok).toBe(false);
      const signature = signWebhook(SECRET, 'msg_1', timestamp, body);
      expect(verifyWebhook(SECRET, headers(signature), body.replace('succeeded', 'failed'), now).ok).toBe(false);
      const old = timestamp - 6 * 60;
      expect(verifyWebhook(SECRET, headers(signWebhook(SECRET, 'msg_1', old, body), String(old)), body, now).ok).toBe(false);
      const future = timestamp + 6 * 60;
      expect(verifyWebhook(SECRET, headers(signWebhook(SECRET, 'msg_1', future, body), String(future)), body, now).ok).toBe(false);
      expect(verifyWebhook(SECRET, { id: 'msg_1', timestamp: String(timestamp), signature: undefined }, body, now).ok).toBe(false);
      expect(verifyWebhook(SECRET, { ...headers(signature), id: 'msg_2' }, body, now).ok).toBe(false);
    });
  });
});

describe('end to end through /generate', () => {
  let app: TestApp;
  const upstream = new FakeReplicate({ apiKey: 'r8_e2e-key-987654' });

  beforeAll(async () => {
    await upstream.start();
    app = await startTestApp(
      { REPLICATE_BASE_URL: upstream.baseUrl, REPLICATE_API_KEY: 'r8_e2e-key-987654', REPLICATE_WEBHOOK_SECRET: SECRET },
      { worker: true },
    );
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await upstream.close();
  });
  beforeEach(() => upstream.reset());

  function webhookUrl(): string {
    return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/api/v2/providers/replicate/webhook`;
  }

  async function setup(slug: string, body: Record<string, unknown>) {
    const user = await userOnPlan(app, 'elite');
    const auth = ['authorization', `Bearer ${user.accessToken}`] as const;
    const quote = await app.http().post(`/api/v2/models/${slug}/calculate-price`).send({ model: slug, ...body });
    expect(quote.status).toBe(200);
    const balance = async () => (await app.http().get('/api/v2/user/balance').set(...auth)).body.token_balance as number;
    const start = async () => {
      const res = await app.http().post('/api/v2/generate').set(...auth).send({ model: slug, ...body });
      expect(res.body.status).toBe('pending');
      return res.body.id as number;
    };
    const poll = async (id: number, ms = 20_000) => {
      const end = Date.now() + ms;
      for (;;) {
        const res = await app.http().get(`/api/v2/generate/${id}`).set(...auth);
        if (res.body.status !== 'pending') return res.body as Record<string, unknown>;
        if (Date.now() > end) throw new Error('still pending');
        await sleep(100);
      }
    };
    return { auth, price: quote.body.token_cost as number, before: await balance(), balance, start, poll };
  }

  it('offers the replicate models of the shipped catalog', async () => {
    const res = await app.http().get('/api/v2/models');
    const slugs = res.body.models.map((m: { slug: string }) => m.slug);
    expect(slugs).toEqual(expect.arrayContaining(['image-artistic', 'video-fast', 'video-versatile', 'music-gen']));
  });

  it('image-artistic: pending, then completed with the file, charged exactly its price', async () => {
    const { price, before, balance, start, poll } = await setup('image-artistic', { prompt: 'a lighthouse', aspect_ratio: '16:9' });
    const done = await poll(await start());
    expect(done).toMatchObject({ status: 'completed', tokens_spent: price });
    const [create] = upstream.creates();
    expect(create?.path).toBe('/v1/models/ideogram-ai/ideogram-v2/predictions');
    expect(create?.json).toMatchObject({
      input: { prompt: 'a lighthouse', aspect_ratio: '16:9' },
      webhook: `${app.container.config.publicBaseUrl}/api/v2/providers/replicate/webhook`,
      webhook_events_filter: ['completed'],
    });
    const file = await app.http().get(new URL(String(done.result_url)).pathname).buffer(true);
    expect(file.status).toBe(200);
    expect(String(file.headers['content-type'])).toMatch(/^image\//);
    expect(before - (await balance())).toBe(price);
    // The row keeps the prediction it ran, for a retry or a run after a crash to resume.
    const row = await app.container.db.repo(Generation).findOneByOrFail({ id: Number(String(done.id).replace(/^gen_/, '')) });
    expect(row.upstreamRef).toBe(`replicate:${upstream.latest().id}`);
  });

  it('video-fast completes with an MP4, charged its per-second price', async () => {
    const { price, before, balance, start, poll } = await setup('video-fast', { prompt: 'waves', duration: 5, resolution: '480p' });
    expect(price).toBe(15);
    const done = await poll(await start(), 30_000);
    expect(done).toMatchObject({ status: 'completed', tokens_spent: 15, result_metadata: expect.objectContaining({ duration: 5 }) });
    const file = await app.http().get(new URL(String(done.result_url)).pathname).buffer(true);
    expect(file.headers['content-type']).toBe('video/mp4');
    expect(before - (await balance())).toBe(price);
  }, 40_000);

  it('music-gen completes with the audio', async () => {
    const { price, before, balance, start, poll } = await setup('music-gen', { prompt: 'calm piano', duration: 5 });
    const done = await poll(await start());
    expect(done).toMatchObject({ status: 'completed', tokens_spent: price });
    expect(upstream.creates()[0]?.json).toMatchObject({ input: { prompt: 'calm piano', duration: 5 } });
    expect(before - (await balance())).toBe(price);
  });

  it('a failed prediction ends failed with 0 tokens and the balance restored', async () => {
    upstream.plan({ pollsBeforeEnd: 0, end: { kind: 'failed', error: 'Invalid prompt for this model' } });
    const { before, balance, start, poll } = await setup('image-artistic', { prompt: 'x' });
    const done = await poll(await start());
    expect(done).toMatchObject({ status: 'failed', tokens_spent: 0, error: 'The replicate prediction failed: Invalid prompt for this model' });
    expect(await balance()).toBe(before);
  });

  it('a policy refusal ends failed with the provider message, uncharged', async () => {
    upstream.plan({ pollsBeforeEnd: 0, end: { kind: 'failed', error: 'Prompt flagged by the safety checker' } });
    const { before, balance, start, poll } = await setup('image-artistic', { prompt: 'x' });
    const done = await poll(await start());
    expect(done).toMatchObject({ status: 'failed', tokens_spent: 0, error: 'Prompt flagged by the safety checker' });
    expect(upstream.creates()).toHaveLength(1);
    expect(await balance()).toBe(before);
  });

  it('a signed webhook finishes the job before the next (long) poll; a forged one is 401 and finishes nothing', async () => {
    // Every poll answers Retry-After: 60, so only the webhook can bring the result in time.
    upstream.plan({ pollsBeforeEnd: Infinity, end: { kind: 'succeeded' }, retryAfter: '60' });
    const { auth, price, before, balance, start, poll } = await setup('image-artistic', { prompt: 'a quiet harbour' });
    const id = await start();
    await until(() => upstream.polls().length >= 1, 15_000);
    const prediction = upstream.latest();

    const forged = await upstream.sendWebhook(webhookUrl(), prediction.id, `whsec_${Buffer.from('not our secret').toString('base64')}`);
    expect(forged.status).toBe(401);
    expect(JSON.parse(forged.body)).toMatchObject({ code: 'invalid_webhook_signature' });
    expect((await upstream.sendWebhook(webhookUrl(), prediction.id, SECRET, { tamper: true })).status).toBe(401);
    expect((await upstream.sendWebhook(webhookUrl(), prediction.id, SECRET, { timestampOffsetSeconds: -600 })).status).toBe(401);
    // A valid webhook for a prediction still running only makes us poll: the job stays pending.
    expect((await upstream.sendWebhook(webhookUrl(), prediction.id, SECRET)).status).toBe(204);
    await until(() => upstream.polls(prediction.id).length >= 2);
    await sleep(300);
    expect((await app.http().get(`/api/v2/generate/${id}`).set(...auth)).body.status).toBe('pending');
    expect(upstream.polls(prediction.id)).toHaveLength(2);

    await upstream.finish(prediction.id);
    const sent = Date.now();
    expect((await upstream.sendWebhook(webhookUrl(), prediction.id, SECRET)).status).toBe(204);
    const done = await poll(id, 10_000);
    expect(Date.now() - sent).toBeLessThan(10_000);
    expect(done).toMatchObject({ status: 'completed', tokens_spent: price });
    expect(upstream.polls(prediction.id)).toHaveLength(3);
    expect(before - (await balance())).toBe(price);
  }, 40_000);

  it('verifies the bytes as sent whatever their Content-Type, and wants a prediction id', async () => {
    const post = async (body: string, contentType: string) => {
      const timestamp = Math.floor(Date.now() / 1000);
      const res = await fetch(webhookUrl(), {
        method: 'POST',
        headers: { 'content-type': contentType, 'webhook-id': 'msg_x', 'webhook-timestamp': String(timestamp), 'webhook-signature': signWebhook(SECRET, 'msg_x', timestamp, body) },
        body,
      });
      return { status: res.status, body: (await res.json().catch(() => null)) as Record<string, unknown> | null };
    };
    // Spacing JSON.stringify would not reproduce: the signature is over the raw bytes.
    expect((await post('{ "id" : "pred-unknown",\n  "status": "succeeded" }', 'application/json')).status).toBe(204);
    expect((await post('{"id":"pred-unknown"}', 'text/plain')).status).toBe(204);
    expect(await post('{"status":"succeeded"}', 'application/json')).toMatchObject({ status: 422, body: { code: 'validation_failed' } });
    const unsigned = await fetch(webhookUrl(), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"id":"p"}' });
    expect(unsigned.status).toBe(401);
  });
});
