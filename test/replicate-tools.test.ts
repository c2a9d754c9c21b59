/**
 * The image tools of spec 4.1 on Replicate: for each tool the input we send is the shape its
 * public model takes (images as data: URIs), image outputs come back as PNG (or the asked format)
 * with their measured size, OCR answers text; then end to end through the app with the shipped
 * catalog, where a local tool that cannot serve (engine missing) or fails `unavailable` is run
 * by its replicate fallback and charged its price.
 */
import sharp from 'sharp';
import { loadCatalogFile } from '../shared/catalog';
import { loadConfig } from '../shared/config';
import { sniffImage } from '../shared/media/sniff';
import { createReplicateProvider } from '../shared/providers/replicate';
import { TOOL_MAPPINGS, toolOf } from '../shared/providers/replicate/tools';
import { CallOptions, ProviderAdapter, ProviderError, ToolRequest, ToolResult } from '../shared/providers/types';
import { startTestApp, TestApp } from './helpers/app';
import { FakeReplicate } from './helpers/fake-replicate';
import { FAKE_OCR_TEXT } from './helpers/fake-replicate-tools';
import { userOnPlan } from './helpers/users';

const KEY = 'r8_tools-secret-0123456789';
const fake = new FakeReplicate({ apiKey: KEY });

let photo: Buffer; // 40x30 PNG
let face: Buffer; // 20x20 PNG
let target: Buffer; // 50x36 JPEG
let mask: Buffer; // 40x30 PNG, white square

beforeAll(async () => {
  await fake.start();
  photo = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#468' } }).png().toBuffer();
  face = await sharp({ create: { width: 20, height: 20, channels: 3, background: '#c96' } }).png().toBuffer();
  target = await sharp({ create: { width: 50, height: 36, channels: 3, background: '#246' } }).jpeg().toBuffer();
  mask = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#000' } })
    .composite([{ input: { create: { width: 10, height: 10, channels: 3, background: '#fff' } }, left: 10, top: 10 }])
    .png()
    .toBuffer();
}, 30_000);
afterAll(() => fake.close());
beforeEach(() => fake.reset());

function adapter(): ProviderAdapter {
  return createReplicateProvider({ baseUrl: fake.baseUrl, apiKey: KEY, pollInitialMs: 20, pollMaxMs: 80 });
}

function call(): CallOptions {
  return { signal: AbortSignal.timeout(10_000) };
}

function uri(bytes: Buffer, type = 'image/png'): string {
  return `data:${type};base64,${bytes.toString('base64')}`;
}

function request(overrides: Partial<ToolRequest>): ToolRequest {
  return { upstreamModel: 'nightmareai/real-esrgan', tool: 'upscale-esrgan', prompt: null, image: photo, secondImage: null, params: {}, ...overrides };
}

async function run(overrides: Partial<ToolRequest>): Promise<{ result: ToolResult; path: string; input: Record<string, unknown> }> {
  const tool = adapter().tool;
  if (!tool) throw new Error('no tool capability');
  const result = await tool.run(request(overrides), call());
  const created = fake.creates()[0];
  return { result, path: created?.path ?? '', input: (created?.json?.input ?? {}) as Record<string, unknown> };
}

function expectPng(result: ToolResult, width: number, height: number): void {
  if (result.kind !== 'image') throw new Error(`expected an image, got ${result.kind}`);
  expect(result.file).toMatchObject({ contentType: 'image/png', extension: 'png' });
  expect(sniffImage(result.file.bytes)?.contentType).toBe('image/png');
  expect({ width: result.width, height: result.height }).toEqual({ width, height });
}

describe('the tool capability', () => {
  it('is offered next to image, video and music', () => {
    expect(adapter().tool).toBeDefined();
  });

  it('upscale: {image, scale} to nightmareai/real-esrgan; a PNG of the scaled size', async () => {
    const { result, path, input } = await run({ params: { scale: 4 } });
    expect(path).toBe('/v1/models/nightmareai/real-esrgan/predictions');
    expect(input).toEqual({ image: uri(photo), scale: 4 });
    expectPng(result, 160, 120);
  });

  it('face-swap: input_image is the target (whose face is replaced), swap_image the source face', async () => {
    const { result, path, input } = await run({ upstreamModel: 'cdingram/face-swap', tool: 'face-swap', image: face, secondImage: target });
    expect(path).toBe('/v1/models/cdingram/face-swap/predictions');
    expect(input).toEqual({ input_image: uri(target, 'image/jpeg'), swap_image: uri(face) });
    // The model answers a JPEG of the target's size: delivered as PNG.
    expectPng(result, 50, 36);
  });

  it('face-swap without a target is bad_request before any prediction', async () => {
    await expect(run({ upstreamModel: 'cdingram/face-swap', tool: 'face-swap', image: face })).rejects.toMatchObject({ kind: 'bad_request' });
    expect(fake.creates()).toHaveLength(0);
  });

  it('remove-bg: {image} to 851-labs/background-remover (or lucataco/remove-bg); a PNG', async () => {
    const first = await run({ upstreamModel: '851-labs/background-remover', tool: 'remove-bg' });
    expect(first.input).toEqual({ image: uri(photo) });
    expectPng(first.result, 40, 30);
    fake.reset();
    const second = await run({ upstreamModel: 'lucataco/remove-bg', tool: 'remove-bg' });
    expect(second.path).toBe('/v1/models/lucataco/remove-bg/predictions');
    expect(second.input).toEqual({ image: uri(photo) });
  });

  it('style-transfer: structure_image and a prompt naming the style (the user prompt wins); a WebP list read as PNG', async () => {
    const styled = await run({ upstreamModel: 'fofr/style-transfer', tool: 'style-transfer', params: { style: 'oil-painting' } });
    expect(styled.path).toBe('/v1/models/fofr/style-transfer/predictions');
    expect(styled.input).toEqual({ structure_image: uri(photo), prompt: 'oil painting style' });
    expectPng(styled.result, 40, 30);
    fake.reset();
    const prompted = await run({ upstreamModel: 'fofr/style-transfer', tool: 'style-transfer', prompt: 'ukiyo-e woodblock print', params: { style: 'sketch' } });
    expect(prompted.input.prompt).toBe('ukiyo-e woodblock print');
  });

  it('colorize: {input_image, model_name} to arielreplicate/deoldify_image; a PNG', async () => {
    const { result, path, input } = await run({ upstreamModel: 'arielreplicate/deoldify_image', tool: 'colorize' });
    expect(path).toBe('/v1/models/arielreplicate/deoldify_image/predictions');
    expect(input).toEqual({ input_image: uri(photo), model_name: 'Artistic' });
    expectPng(result, 40, 30);
  });

  it('inpaint: {image, mask, prompt} to stability-ai/stable-diffusion-inpainting; a PNG', async () => {
    const { result, path, input } = await run({
      upstreamModel: 'stability-ai/stable-diffusion-inpainting',
      tool: 'inpaint',
      prompt: 'a calm sea',
      secondImage: mask,
    });
    expect(path).toBe('/v1/models/stability-ai/stable-diffusion-inpainting/predictions');
    expect(input).toEqual({ image: uri(photo), mask: uri(mask), prompt: 'a calm sea' });
    expectPng(result, 40, 30);
  });

  it('ocr: {image} to abiruyt/text-extract-ocr; the string output is the text (no download)', async () => {
    const { result, path, input } = await run({ upstreamModel: 'abiruyt/text-extract-ocr', tool: 'ocr' });
    expect(path).toBe('/v1/models/abiruyt/text-extract-ocr/predictions');
    expect(input).toEqual({ image: uri(photo) });
    expect(result).toEqual({ kind: 'text', text: FAKE_OCR_TEXT.trim() });
    expect(fake.cdnRequests).toHaveLength(0);
  });

  it('delivers the format named in params instead of PNG', async () => {
    const { result } = await run({ params: { scale: 2, format: 'webp' } });
    if (result.kind !== 'image') throw new Error('not an image');
    expect(result.file).toMatchObject({ contentType: 'image/webp', extension: 'webp' });
    expect(sniffImage(result.file.bytes)?.contentType).toBe('image/webp');
    expect([result.width, result.height]).toEqual([80, 60]);
  });

  it('tells the tool from the model id when the request names the upstream model instead (a catalog fallback)', async () => {
    expect(toolOf({ tool: 'nightmareai/real-esrgan', upstreamModel: 'nightmareai/real-esrgan' })).toBe('upscale-esrgan');
    expect(toolOf({ tool: 'cdingram/face-swap', upstreamModel: 'cdingram/face-swap:0123abcd' })).toBe('face-swap');
    expect(toolOf({ tool: 'lucataco/remove-bg', upstreamModel: 'lucataco/remove-bg' })).toBe('remove-bg');
    expect(toolOf({ tool: 'someone/sdxl-inpainting', upstreamModel: 'someone/sdxl-inpainting' })).toBe('inpaint');
    for (const [tool, mapping] of Object.entries(TOOL_MAPPINGS)) expect(toolOf({ tool: mapping.model, upstreamModel: mapping.model })).toBe(tool);
    const { input } = await run({ tool: 'abiruyt/text-extract-ocr', upstreamModel: 'abiruyt/text-extract-ocr' });
    expect(input).toEqual({ image: uri(photo) });
  });

  it('refuses a model it cannot map to a tool, without a prediction', async () => {
    await expect(run({ tool: 'someone/mystery', upstreamModel: 'someone/mystery' })).rejects.toMatchObject({ kind: 'bad_request' });
    expect(fake.creates()).toHaveLength(0);
  });

  it('uses the prediction error mapping (a failed tool prediction is bad_request with its message)', async () => {
    fake.plan({ pollsBeforeEnd: 0, end: { kind: 'failed', error: 'No face detected in input_image' } });
    const failure = run({ upstreamModel: 'cdingram/face-swap', tool: 'face-swap', image: face, secondImage: target });
    await expect(failure).rejects.toBeInstanceOf(ProviderError);
    await expect(failure).rejects.toMatchObject({ kind: 'bad_request', message: expect.stringContaining('No face detected') });
  });
});

describe('the shipped catalog', () => {
  it('gives each of the seven local tools a replicate fallback whose model the adapter maps to that tool', () => {
    const tools = loadCatalogFile(loadConfig({}).productFiles.catalog).filter((m) => m.category === 'tool');
    expect(tools.map((m) => m.slug).sort()).toEqual(Object.keys(TOOL_MAPPINGS).sort());
    for (const m of tools) {
      expect(m.provider).toBe('local');
      expect(m.fallbacks).toEqual([{ provider: 'replicate', upstreamModel: TOOL_MAPPINGS[m.slug as keyof typeof TOOL_MAPPINGS].model }]);
      const fallback = m.fallbacks[0]?.upstreamModel ?? '';
      expect(toolOf({ tool: fallback, upstreamModel: fallback })).toBe(m.slug);
    }
  });
});

/** Stands in for the built-in local provider: its tools' engines are missing (or fail `unavailable`). */
class BrokenLocalTools {
  serving = false;
  readonly calls: ToolRequest[] = [];

  adapter(): ProviderAdapter {
    return {
      name: 'local',
      serves: () => this.serving,
      tool: {
        run: async (req: ToolRequest): Promise<ToolResult> => {
          this.calls.push(req);
          throw this.serving ? new ProviderError('unavailable', 'the local engine crashed') : new ProviderError('bad_request', 'the local engine is missing');
        },
      },
    };
  }
}

describe('end to end: the shipped catalog runs the tools on replicate when the local engine cannot', () => {
  const upstream = new FakeReplicate({ apiKey: 'r8_tools-e2e-key-55' });
  const local = new BrokenLocalTools();
  let app: TestApp;

  beforeAll(async () => {
    await upstream.start();
    app = await startTestApp({ REPLICATE_BASE_URL: upstream.baseUrl, REPLICATE_API_KEY: 'r8_tools-e2e-key-55' }, { providers: [local.adapter()] });
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await upstream.close();
  });
  beforeEach(() => {
    upstream.reset();
    local.calls.length = 0;
    local.serving = false;
  });

  async function user() {
    const u = await userOnPlan(app, 'free');
    const auth = ['authorization', `Bearer ${u.accessToken}`] as const;
    const balance = async () => (await app.http().get('/api/v2/user/balance').set(...auth)).body.token_balance as number;
    return { auth, balance, before: await balance() };
  }

  it('has no provider webhook endpoint without REPLICATE_WEBHOOK_SECRET (503), whatever is posted', async () => {
    const res = await app.http().post('/api/v2/providers/replicate/webhook').set('content-type', 'application/json').send('{"id":"p1"}');
    expect(res.status).toBe(503);
    expect(res.body.detail).toMatch(/REPLICATE_WEBHOOK_SECRET/);
  });

  it('offers all seven tools through their replicate fallbacks', async () => {
    const res = await app.http().get('/api/v2/models');
    const slugs = res.body.models.map((m: { slug: string }) => m.slug);
    expect(slugs).toEqual(expect.arrayContaining(['upscale-esrgan', 'face-swap', 'remove-bg', 'style-transfer', 'colorize', 'inpaint', 'ocr']));
  });

  it('does not hold a replicate upscale to the local upscaler\'s input size cap', async () => {
    const { auth } = await user();
    const large = await sharp({ create: { width: 600, height: 500, channels: 3, background: '#357' } }).png().toBuffer();
    const res = await app.http().post('/api/v2/generate').set(...auth).send({ model: 'upscale', image_url: uri(large), scale: 2 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'completed', result_metadata: { width: 1200, height: 1000 } });
  });

  it('POST /generate upscale: skips the local tool that cannot serve, completes on replicate, charged its price', async () => {
    const { auth, balance, before } = await user();
    const res = await app.http().post('/api/v2/generate').set(...auth).send({ model: 'upscale', image_url: uri(photo), scale: 2 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'completed', model_slug: 'upscale-esrgan', tokens_spent: 1, result_metadata: { width: 80, height: 60 } });
    expect(local.calls).toHaveLength(0);
    expect(upstream.creates().map((r) => r.path)).toEqual(['/v1/models/nightmareai/real-esrgan/predictions']);
    expect(upstream.creates()[0]?.json?.input).toEqual({ image: uri(photo), scale: 2 });
    const file = await app.http().get(new URL(res.body.result_url as string).pathname).buffer(true);
    expect(sniffImage(file.body as Buffer)?.contentType).toBe('image/png');
    expect(before - (await balance())).toBe(1);
  });

  it('a local tool failing unavailable falls through to replicate', async () => {
    local.serving = true;
    const { auth, balance, before } = await user();
    const res = await app.http().post('/api/v2/generate').set(...auth).send({ model: 'colorize', image_url: uri(photo) });
    expect(res.body).toMatchObject({ status: 'completed', tokens_spent: 1 });
    expect(local.calls).toHaveLength(1);
    expect(upstream.creates()[0]?.path).toBe('/v1/models/arielreplicate/deoldify_image/predictions');
    expect(before - (await balance())).toBe(1);
  });

  it('multipart /tools face-swap sends the target as input_image and the source face as swap_image', async () => {
    const { auth, balance, before } = await user();
    const res = await app.http().post('/api/v2/tools').set(...auth).field('model', 'face-swap').attach('source_image', face, 's.png').attach('target_image', target, 't.jpg');
    expect(res.body).toMatchObject({ status: 'completed', tokens_spent: 1, result_metadata: { width: 50, height: 36 } });
    expect(upstream.creates()[0]?.json?.input).toEqual({ input_image: uri(target, 'image/jpeg'), swap_image: uri(face) });
    expect(before - (await balance())).toBe(1);
  });

  it('OCR answers the recognized text in result_text; inpaint is charged its 3 tokens', async () => {
    const { auth, balance, before } = await user();
    const ocr = await app.http().post('/api/v2/tools').set(...auth).field('model', 'ocr').attach('source_image', photo, 'text.png');
    expect(ocr.body).toMatchObject({ status: 'completed', result_text: FAKE_OCR_TEXT.trim(), tokens_spent: 1 });
    const inpaint = await app.http().post('/api/v2/inpaint').set(...auth).field('prompt', 'an empty beach').attach('image', photo, 'i.png').attach('mask', mask, 'm.png');
    expect(inpaint.body).toMatchObject({ status: 'completed', tokens_spent: 3 });
    expect(upstream.creates()[1]?.json?.input).toEqual({ image: uri(photo), mask: uri(mask), prompt: 'an empty beach' });
    expect(before - (await balance())).toBe(4);
    expect(local.calls).toHaveLength(0);
  });
});
