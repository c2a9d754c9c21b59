/**
 * POST /v1/images/generations driven by the official `openai` client against the real app over
 * the fake provider: both response formats, size/quality/style/output_format onto the model's
 * params, a queued model answered synchronously (and a 504 past its timeout, the generation left
 * to finish), every error class, billing, history, Idempotency-Key, content policy, limits and
 * webhooks as for the same work through /api/v2.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import OpenAI, { toFile } from 'openai';
import sharp from 'sharp';
import { Generation } from '../shared/db/entities';
import { startTestApp, TestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { registerUser } from './helpers/users';
import { moneyOf, waitFor, lastGeneration, ledgerRowsOf, openAIClient, rejectionOf, vipClient } from './helpers/v1-clients';

const fake = new FakeProvider('fake');
/** Where the webhook deliveries of these users go: a loopback receiver the app may post to. */
const received: string[] = [];
const receiver = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    received.push(body);
    res.end('ok');
  });
});
let app: TestApp | undefined;
const t = {
  get app(): TestApp {
    if (!app) throw new Error('test app not started');
    return app;
  },
};
const receiverUrl = (): string => `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

beforeAll(async () => {
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()));
  app = await startTestApp(
    {
      CATALOG_PATH: path.join(__dirname, 'fixtures/v1-media-catalog.json'),
      CONTENT_POLICY_BLOCKLIST: 'forbidden',
      PUBLIC_BASE_URL: 'http://media.example.test',
      URL_FETCH_ALLOW: new URL(receiverUrl()).host,
    },
    { providers: [fake.adapter()], worker: true },
  );
});
afterAll(async () => {
  await app?.close();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});
beforeEach(() => fake.reset());

type ImageCall = { width: number; height: number; quality: string; style: string | null; format: string; aspectRatio: string | null };
const lastImageCall = (): ImageCall => fake.calls.filter((c) => c.capability === 'image').at(-1)?.request as ImageCall;

describe('images.generate', () => {
  it('answers a URL under PUBLIC_BASE_URL, charged, in history and in the ledger like the same request through /api/v2', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    const { data: images, response } = await openai.images
      .generate({ model: 'fake-image', prompt: 'a lighthouse at night', size: '1792x1024', quality: 'hd', style: 'natural', response_format: 'url' })
      .withResponse();
    expect(images).toMatchObject({ created: expect.any(Number), data: [{ url: expect.stringMatching(/^http:\/\/media\.example\.test\/files\/results\//) }], output_format: 'png', size: '1792x1024' });
    expect(response.headers.get('x-ratelimit-limit-hour')).toBe('100');
    expect(lastImageCall()).toMatchObject({ width: 1792, height: 1024, quality: 'hd', style: 'natural', format: 'png' });

    const row = await lastGeneration(t.app, user.id);
    expect(row).toMatchObject({ modelSlug: 'fake-image', status: 'completed', tokensSpent: 16, prompt: 'a lighthouse at night' });
    expect(images.data?.[0]?.url).toBe(`http://media.example.test/files/${row.resultKey}`);
    // The URL serves the image (here through the app itself: the public base is a name for it).
    const file = await t.app.http().get(new URL(images.data?.[0]?.url ?? '').pathname);
    expect(file.status).toBe(200);
    expect(file.headers['content-type']).toBe('image/png');
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total - 16, held: 0 });
    expect(await ledgerRowsOf(t.app, row.id)).toHaveLength(1);
    const history = await t.app.http().get('/api/v2/user/history').set('authorization', `Bearer ${user.accessToken}`);
    expect(history.body.items[0]).toMatchObject({ id: row.id, model_slug: 'fake-image', status: 'completed', tokens_spent: 16 });

    // The same work through /api/v2 costs the same.
    const direct = await t.app.http().post('/api/v2/generate').set('authorization', `Bearer ${user.accessToken}`).send({ model: 'fake-image', prompt: 'a lighthouse at night', size: '1792x1024', quality: 'hd', style: 'natural' });
    expect(direct.body).toMatchObject({ status: 'completed', tokens_spent: 16 });
  });

  it('answers the bytes as b64_json, in the asked output_format', async () => {
    const { user, openai } = await vipClient(t.app);
    const images = await openai.images.generate({ model: 'fake-image', prompt: 'a fern', response_format: 'b64_json', output_format: 'webp' });
    const bytes = Buffer.from(images.data?.[0]?.b64_json ?? '', 'base64');
    expect(images.data?.[0]?.url).toBeUndefined();
    const row = await lastGeneration(t.app, user.id);
    expect(bytes.equals(await t.app.container.storage.readAll(row.resultKey ?? ''))).toBe(true);
    expect((await sharp(bytes).metadata()).format).toBe('png');
    // The model was asked for webp (the fake answers PNG whatever it is asked; the local engine test checks real webp).
    expect(lastImageCall()).toMatchObject({ format: 'webp', width: 1024, height: 1024, quality: 'standard', style: null });
  });

  it('waits for a queued model and answers with its image; a size maps onto the model\'s aspect ratio', async () => {
    const { user, openai } = await vipClient(t.app);
    const started = Date.now();
    const images = await openai.images.generate({ model: 'fake-art', prompt: 'dunes', size: '1792x1024', response_format: 'url' });
    expect(images.data?.[0]?.url).toMatch(/\/files\/results\//);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(lastImageCall()).toMatchObject({ aspectRatio: '16:9' });
    expect(await lastGeneration(t.app, user.id)).toMatchObject({ modelSlug: 'fake-art', status: 'completed', tokensSpent: 6 });
  });

  it('answers 504 when a queued model is not done within its timeout, and leaves the generation to finish', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    // Two transient failures: the job retries after 2 s and 4 s more, past fake-art's 2 s timeout.
    fake.next({ kind: 'unavailable' }, { kind: 'unavailable' });
    const error = await rejectionOf(openai.images.generate({ model: 'fake-art', prompt: 'slow dunes' }));
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect(error).toMatchObject({ status: 504, code: 'upstream_timeout', type: 'server_error' });
    const row = await lastGeneration(t.app, user.id);
    expect((error as Error).message).toContain(`gen_${row.id}`);
    expect(row.status).toBe('pending');
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total, held: 6 });
    // It goes on: completed and charged once, in history.
    const ended = await waitFor(async () => {
      const now = await t.app.container.db.repo(Generation).findOneByOrFail({ id: row.id });
      return now.status !== 'pending' && now;
    }, 20_000);
    expect(ended).toMatchObject({ status: 'completed', tokensSpent: 6 });
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total - 6, held: 0 });
  }, 30_000);

  it('replays a request with the same Idempotency-Key and charges once', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    const body = { model: 'fake-image', prompt: 'once only' };
    const first = await openai.images.generate(body, { headers: { 'Idempotency-Key': 'img-1' } });
    const second = await openai.images.generate(body, { headers: { 'Idempotency-Key': 'img-1' } });
    expect(second.data?.[0]?.url).toBe(first.data?.[0]?.url);
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total - 4, held: 0 });
    const reused = await rejectionOf(openai.images.generate({ ...body, prompt: 'another' }, { headers: { 'Idempotency-Key': 'img-1' } }));
    expect(reused).toMatchObject({ status: 400, param: 'Idempotency-Key' });
  });

  it('delivers the generation.completed webhook of a /v1 image', async () => {
    const { user, openai } = await vipClient(t.app);
    const hook = await t.app.http().post('/api/v2/webhooks').set('authorization', `Bearer ${user.accessToken}`).send({ url: `${receiverUrl()}/hook`, events: ['generation.completed'] });
    expect(hook.status).toBe(201);
    await openai.images.generate({ model: 'fake-image', prompt: 'a kite' });
    const row = await lastGeneration(t.app, user.id);
    const delivery = await waitFor(async () => received.find((b) => b.includes(`"generation_id":${row.id}`)));
    expect(JSON.parse(delivery)).toMatchObject({ event: 'generation.completed', status: 'completed', model_slug: 'fake-image', tokens_spent: 4 });
  });
});

describe('errors, as the client library raises them', () => {
  it('refuses bad fields with 400 naming the parameter, before any provider call or charge', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ model: 'fake-image', prompt: 'x', n: 2 }, 'n'],
      [{ model: 'fake-image', prompt: 'x', size: '512x512' }, 'size'],
      [{ model: 'fake-art', prompt: 'x', size: '1000x300' }, 'size'],
      [{ model: 'fake-image-pro', prompt: 'x', size: '1792x1024' }, 'size'],
      [{ model: 'fake-image', prompt: 'x', quality: 'ultra' }, 'quality'],
      [{ model: 'fake-image', prompt: 'x', style: 'noir' }, 'style'],
      [{ model: 'fake-art', prompt: 'x', style: 'vivid' }, 'style'],
      [{ model: 'fake-image', prompt: 'x', response_format: 'gif' }, 'response_format'],
      [{ model: 'fake-image', prompt: 'x', output_format: 'gif' }, 'output_format'],
      [{ model: 'fake-image', prompt: 'x', stream: true }, 'stream'],
      [{ model: 'fake-image', prompt: '   ' }, 'prompt'],
      [{ model: 'fake-image' }, 'prompt'],
      [{ prompt: 'x' }, 'model'],
      [{ model: 'fake-text', prompt: 'x' }, 'model'],
    ];
    for (const [body, param] of cases) {
      const error = await rejectionOf(openai.images.generate(body as unknown as OpenAI.ImageGenerateParamsNonStreaming));
      expect({ body, error }).toMatchObject({ body, error: { status: 400, type: 'invalid_request_error', param } });
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    }
    expect(fake.calls).toEqual([]);
    expect(await t.app.container.db.repo(Generation).countBy({ userId: user.id })).toBe(0);
    expect(await moneyOf(t.app, user.id)).toEqual(before);
  });

  it('401 for a bad key on every media endpoint', async () => {
    const openai = openAIClient(t.app, `gsk_${'x'.repeat(44)}`);
    const file = await toFile(Buffer.from('RIFF'), 'a.wav');
    // Made one at a time: a call's promise rejects as soon as it is made.
    const calls: Array<() => Promise<unknown>> = [
      () => openai.images.generate({ model: 'fake-image', prompt: 'x' }),
      () => openai.audio.speech.create({ model: 'fake-tts', input: 'x', voice: 'alloy' }),
      () => openai.audio.transcriptions.create({ model: 'fake-stt', file }),
      () => openai.videos.create({ model: 'fake-video', prompt: 'x' }),
      () => openai.videos.retrieve('video_1'),
      () => openai.videos.list(),
    ];
    for (const call of calls) {
      const error = await rejectionOf(call());
      expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
      expect(error).toMatchObject({ code: 'invalid_api_key', type: 'authentication_error' });
    }
  });

  it('a synchronous model that does not answer within its timeout is 504, uncharged', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    fake.next({ kind: 'hang' });
    const error = await rejectionOf(openai.images.generate({ model: 'fake-image', prompt: 'x' }));
    expect(error).toMatchObject({ status: 504, code: 'upstream_timeout' });
    expect(await lastGeneration(t.app, user.id)).toMatchObject({ status: 'failed', tokensSpent: 0 });
    expect(await moneyOf(t.app, user.id)).toEqual(before);
  });

  it('404 for an unknown model, 403 above the plan, insufficient_quota for an empty balance, 429 past the plan limit', async () => {
    const free = await registerUser(t.app);
    const openai = openAIClient(t.app, free.accessToken);
    const unknown = await rejectionOf(openai.images.generate({ model: 'dall-e-9', prompt: 'x' }));
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    expect(unknown).toMatchObject({ code: 'model_not_found' });
    expect(await rejectionOf(openai.images.generate({ model: 'fake-image-pro', prompt: 'x' }))).toBeInstanceOf(OpenAI.PermissionDeniedError);
    const broke = await rejectionOf(openai.images.generate({ model: 'fake-image-costly', prompt: 'x' }));
    expect(broke).toBeInstanceOf(OpenAI.RateLimitError);
    expect(broke).toMatchObject({ status: 429, code: 'insufficient_quota', type: 'insufficient_quota' });
    expect(fake.calls).toEqual([]);
    // A free plan makes 5 an hour.
    for (let i = 0; i < 5; i++) await openai.images.generate({ model: 'fake-image', prompt: `picture ${i}` });
    const limited = await rejectionOf(openai.images.generate({ model: 'fake-image', prompt: 'one more' }));
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect(limited).toMatchObject({ code: 'rate_limit_exceeded' });
    expect((limited as InstanceType<typeof OpenAI.RateLimitError>).headers?.get('x-ratelimit-remaining-hour')).toBe('0');
  });

  it('the content policy and a provider refusal are 400 content_policy_violation, an outage 502, all uncharged and in history', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    const policy = await rejectionOf(openai.images.generate({ model: 'fake-image', prompt: 'something forbidden' }));
    expect(policy).toMatchObject({ status: 400, code: 'content_policy_violation' });
    expect(fake.calls).toEqual([]);
    fake.next({ kind: 'refuse', message: 'Your request was rejected by the safety system' });
    const refused = await rejectionOf(openai.images.generate({ model: 'fake-image', prompt: 'x' }));
    expect(refused).toMatchObject({ status: 400, code: 'content_policy_violation', message: expect.stringContaining('safety system') });
    fake.next({ kind: 'unavailable' }, { kind: 'unavailable' });
    const down = await rejectionOf(openai.images.generate({ model: 'fake-image', prompt: 'x' }));
    expect(down).toBeInstanceOf(OpenAI.InternalServerError);
    expect(down).toMatchObject({ status: 502, code: 'upstream_unavailable' });
    expect(await moneyOf(t.app, user.id)).toEqual(before);
    const rows = await t.app.container.db.repo(Generation).find({ where: { userId: user.id }, order: { id: 'ASC' } });
    expect(rows.map((r) => [r.status, r.tokensSpent])).toEqual([
      ['failed', 0],
      ['failed', 0],
      ['failed', 0],
    ]);
  });
});
