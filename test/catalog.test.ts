/**
 * The shipped model catalog (product/catalog.json) against the spec: every category and model
 * family, their sizes and voices, the price ranges of 4.1 as the one price function computes them,
 * plan gating, aliases of old slugs, hiding of models whose provider cannot serve, and the
 * loader's refusals. A pure unit test: no app, no stores.
 */
import path from 'node:path';
import {
  Catalog,
  CATEGORIES,
  CatalogModel,
  Category,
  ParamSpec,
  loadCatalogFile,
  parseCatalog,
  priceOf,
  priceRange,
  basePrice,
} from '../shared/catalog';
import { normalizeParams, paramSpecs } from '../shared/generation/params';
import { loadPlans } from '../shared/plans';

const root = path.join(__dirname, '..');
const models = loadCatalogFile(path.join(root, 'product/catalog.json'));
const plans = loadPlans(path.join(root, 'product/plans.json'));
const catalog = new Catalog(models, plans, () => true);

function model(slug: string): CatalogModel {
  const found = catalog.find(slug);
  if (!found) throw new Error(`catalog has no model ${slug}`);
  return found;
}

function enumValues(m: CatalogModel, param: string): string[] {
  const spec = paramSpecs(m)[param];
  if (!spec || spec.type !== 'enum') throw new Error(`${m.slug}.${param} is not an enum`);
  return spec.values;
}

function integerValues(m: CatalogModel, param: string): number[] | undefined {
  const spec = paramSpecs(m)[param];
  if (!spec || spec.type !== 'integer') throw new Error(`${m.slug}.${param} is not an integer param`);
  return spec.values;
}

const SPEC = {
  imagePromptFollowing: 'image-prompt-following',
  imagePhotoreal: 'image-photoreal',
  imageArtistic: 'image-artistic',
  imageOpenLarge: 'image-open-large',
  tts: ['tts-zh-en', 'tts-standard', 'tts-hd', 'tts-mini', 'tts-voice-fast', 'tts-voice-multilingual'],
  stt: { fast: 'stt-fast', accurate: 'stt-accurate', diarize: 'stt-diarize' },
  tools: { 'upscale-esrgan': 1, 'face-swap': 1, 'remove-bg': 1, 'style-transfer': 1, colorize: 1, inpaint: 3, ocr: 1 } as Record<string, number>,
};

const SIX_VOICES = ['alloy', 'echo', 'fable', 'onyx', 'nova', 'shimmer'];

describe('shipped catalog: shape', () => {
  it('loads, and has every category', () => {
    const categories = new Set(models.map((m) => m.category));
    for (const category of CATEGORIES) expect(categories).toContain(category);
  });

  it('uses neutral slugs and names (no brand names), min_plan free or basic, and a description for every model', () => {
    const brands = /openai|gpt|dall|flux|stable|sdxl|ideogram|midjourney|kling|luma|wan|vidu|eleven|deepgram|whisper|minimax|musicgen|meta|google|veo|replicate|nova|tesseract|flite|espeak/i;
    for (const m of models) {
      expect(`${m.slug} ${m.name}`).not.toMatch(brands);
      for (const alias of m.aliases) expect(alias).not.toMatch(brands);
      expect(['free', 'basic']).toContain(m.minPlan);
      expect(m.descriptionEn.length).toBeGreaterThan(20);
    }
  });

  it('declares every priced param with finite choices, keys multipliers by declared values, and its defaults are valid params', () => {
    for (const m of models) {
      for (const term of m.price.per_unit ?? []) {
        const spec = m.params[term.param] as ParamSpec;
        expect(spec).toBeDefined();
        expect(spec.type === 'integer' && (spec.values !== undefined || (spec.min !== undefined && spec.max !== undefined))).toBe(true);
      }
      for (const factor of m.price.multipliers ?? []) {
        const values = enumValues(m, factor.param);
        for (const key of Object.keys(factor.values)) expect(values).toContain(key);
      }
      // Every default passes the model's own validation, and the listed token_cost is the default price.
      const normalized = normalizeParams(m, {}, {});
      expect(priceOf(m, normalized)).toBe(basePrice(m));
      expect(catalog.listing(m).tokenCost).toBe(basePrice(m));
      const range = priceRange(m);
      expect(range.min).toBeGreaterThan(0);
      expect(range.min).toBeLessThanOrEqual(basePrice(m));
      expect(basePrice(m)).toBeLessThanOrEqual(range.max);
    }
  });

  it('marks asynchronous models with an eta and synchronous ones with none; video and music are asynchronous', () => {
    for (const m of models) {
      if (m.sync) expect(m.etaSeconds).toBeNull();
      else expect(m.etaSeconds).toBeGreaterThan(0);
      if (m.category === 'video' || m.category === 'music') {
        expect(m.sync).toBe(false);
        expect(m.timeoutSeconds).toBeGreaterThanOrEqual(300);
      }
      if (['text', 'tts', 'stt', 'tool'].includes(m.category)) expect(m.sync).toBe(true);
    }
  });

  it('names its providers: openai, replicate, elevenlabs, deepgram, local, llama (the operator\'s GGUF model)', () => {
    expect(new Set(models.map((m) => m.provider))).toEqual(new Set(['openai', 'replicate', 'elevenlabs', 'deepgram', 'local', 'llama']));
  });
});

describe('text', () => {
  it('has at least four streaming upstream chat models, one free, one vision-capable, each with its context size', () => {
    const chats = models.filter((m) => m.category === 'text' && m.provider !== 'local' && m.provider !== 'llama');
    expect(chats.length).toBeGreaterThanOrEqual(4);
    for (const m of chats) {
      expect(m.sync).toBe(true);
      expect(m.supportsStreaming).toBe(true);
      expect(m.config.max_context).toEqual(expect.any(Number));
      expect(priceRange(m)).toEqual({ min: basePrice(m), max: basePrice(m) });
    }
    expect(chats.some((m) => m.minPlan === 'free')).toBe(true);
    expect(chats.some((m) => m.minPlan === 'basic')).toBe(true);
    expect(chats.filter((m) => m.config.supports_vision === true).length).toBeGreaterThanOrEqual(1);
    const contexts = chats.map((m) => m.config.max_context as number);
    expect(Math.max(...contexts)).toBeGreaterThanOrEqual(1_000_000);
  });
});

describe('image families (spec 4.1)', () => {
  it('prompt-following: its three sizes, quality standard/hd, style vivid/natural; non-square 2x, hd 2x, both 4x', () => {
    const m = model(SPEC.imagePromptFollowing);
    expect(enumValues(m, 'size')).toEqual(['1024x1024', '1024x1792', '1792x1024']);
    expect(m.config.sizes).toEqual(['1024x1024', '1024x1792', '1792x1024']);
    expect(enumValues(m, 'quality')).toEqual(['standard', 'hd']);
    expect(enumValues(m, 'style')).toEqual(['vivid', 'natural']);
    const base = m.price.base;
    expect(basePrice(m)).toBe(base);
    expect(priceOf(m, { size: '1024x1024', quality: 'standard' })).toBe(base);
    expect(priceOf(m, { size: '1792x1024', quality: 'standard' })).toBe(2 * base);
    expect(priceOf(m, { size: '1024x1792', quality: 'standard' })).toBe(2 * base);
    expect(priceOf(m, { size: '1024x1024', quality: 'hd' })).toBe(2 * base);
    expect(priceOf(m, { size: '1792x1024', quality: 'hd' })).toBe(4 * base);
    expect(priceRange(m)).toEqual({ min: base, max: 4 * base });
    expect(m.sync).toBe(true);
  });

  it('photoreal: its five sizes; non-square costs more, up to twice the square price; hd costs more', () => {
    const m = model(SPEC.imagePhotoreal);
    const sizes = ['1024x1024', '768x1344', '1344x768', '1024x1536', '1536x1024'];
    expect(enumValues(m, 'size')).toEqual(sizes);
    expect(m.config.sizes).toEqual(sizes);
    const square = priceOf(m, { size: '1024x1024', quality: 'standard' });
    expect(square).toBe(basePrice(m));
    const nonSquare = sizes.slice(1).map((size) => priceOf(m, { size, quality: 'standard' }));
    for (const price of nonSquare) {
      expect(price).toBeGreaterThan(square);
      expect(price).toBeLessThanOrEqual(2 * square);
    }
    expect(Math.max(...nonSquare)).toBe(2 * square);
    expect(priceOf(m, { size: '1024x1024', quality: 'hd' })).toBeGreaterThan(square);
  });

  it('artistic-style: its five aspect ratios, answers pending with an eta, one price for every ratio and quality', () => {
    const m = model(SPEC.imageArtistic);
    const ratios = ['1:1', '2:3', '3:2', '9:16', '16:9'];
    expect(enumValues(m, 'aspect_ratio')).toEqual(ratios);
    expect(m.sync).toBe(false);
    expect(m.etaSeconds).toBeGreaterThan(0);
    const prices = ratios.flatMap((aspect_ratio) => ['standard', 'hd'].map((quality) => priceOf(m, { aspect_ratio, quality })));
    expect(new Set(prices)).toEqual(new Set([basePrice(m)]));
  });

  it('open-weights large: its three sizes, negative prompts, one price for every size and quality', () => {
    const m = model(SPEC.imageOpenLarge);
    const sizes = ['1024x1024', '768x1344', '1344x768'];
    expect(enumValues(m, 'size')).toEqual(sizes);
    expect(m.config.sizes).toEqual(sizes);
    expect(m.config.supports_negative_prompt).toBe(true);
    const prices = sizes.flatMap((size) => ['standard', 'hd'].map((quality) => priceOf(m, { size, quality })));
    expect(new Set(prices)).toEqual(new Set([basePrice(m)]));
  });

  it('only two upstream families price size, and only the same two price quality; every image model offers webp/png/jpeg, default webp', () => {
    const upstream = models.filter((m) => m.category === 'image' && m.provider !== 'local');
    const prices = (param: string) =>
      upstream.filter((m) => (m.price.multipliers ?? []).some((f) => f.param === param)).map((m) => m.slug).sort();
    expect(prices('size')).toEqual([SPEC.imagePhotoreal, SPEC.imagePromptFollowing].sort());
    expect(prices('quality')).toEqual([SPEC.imagePhotoreal, SPEC.imagePromptFollowing].sort());
    for (const m of models.filter((x) => x.category === 'image')) {
      expect(paramSpecs(m).format).toEqual({ type: 'enum', values: ['webp', 'png', 'jpeg'], default: 'webp' });
    }
  });

  it('an old slug resolves to its renamed model (spec 9.2)', () => {
    expect(catalog.find('image-realistic')?.slug).toBe(SPEC.imagePhotoreal);
    expect(catalog.find('image-open-xl')?.slug).toBe(SPEC.imageOpenLarge);
  });
});

describe('video families (spec 4.1)', () => {
  const ranges: Array<[string, number, number]> = [
    ['video-fast', 15, 93],
    ['video-versatile', 26, 94],
    ['video-character', 88, 88],
    ['video-cinematic', 42, 180],
  ];

  it.each(ranges)('%s costs %i to %i tokens', (slug, min, max) => {
    const m = model(slug);
    expect(priceRange(m)).toEqual({ min, max });
    expect(catalog.listing(m)).toMatchObject({ minTokenCost: min, maxTokenCost: max });
  });

  it('the versatile family has a pro variant that costs more', () => {
    const pro = priceRange(model('video-versatile-pro'));
    const standard = priceRange(model('video-versatile'));
    expect(pro.min).toBeGreaterThan(standard.min);
    expect(pro.max).toBeGreaterThan(standard.max);
  });

  it('the artistic family is a 480p and a 720p slug that together span 50 to 320 tokens', () => {
    const low = model('video-artistic-480p');
    const high = model('video-artistic-720p');
    expect(enumValues(low, 'resolution')).toEqual(['480p']);
    expect(enumValues(high, 'resolution')).toEqual(['720p']);
    const lowRange = priceRange(low);
    const highRange = priceRange(high);
    expect(Math.min(lowRange.min, highRange.min)).toBe(50);
    expect(Math.max(lowRange.max, highRange.max)).toBe(320);
    expect(highRange.min).toBeGreaterThan(lowRange.min);
  });

  it('the character-consistency family is 5 seconds at one resolution only', () => {
    const m = model('video-character');
    expect(integerValues(m, 'duration')).toEqual([5]);
    expect(enumValues(m, 'resolution')).toHaveLength(1);
  });

  it('every upstream video model is asynchronous, lasts 5 or 10 seconds, in 16:9, 9:16 or 1:1, and charges more for longer clips', () => {
    const videos = models.filter((m) => m.category === 'video');
    expect(videos.filter((m) => m.provider === 'replicate')).toHaveLength(7);
    for (const m of videos) {
      expect(m.sync).toBe(false);
      expect(enumValues(m, 'aspect_ratio')).toEqual(['16:9', '9:16', '1:1']);
      const durations = integerValues(m, 'duration');
      if (m.slug === 'video-character') continue;
      expect(durations).toEqual([5, 10]);
      const resolution = enumValues(m, 'resolution')[0];
      expect(priceOf(m, { duration: 10, resolution })).toBeGreaterThan(priceOf(m, { duration: 5, resolution }));
    }
  });
});

describe('speech synthesis (spec 4.1)', () => {
  it('has the six spec slugs, synchronous, with their voices', () => {
    for (const slug of SPEC.tts) {
      const m = model(slug);
      expect(m.category).toBe('tts');
      expect(m.sync).toBe(true);
      expect(m.config.max_text_length).toEqual(expect.any(Number));
      expect([4096, 5000]).toContain(m.config.max_text_length);
    }
    const free = model('tts-zh-en');
    expect(free.minPlan).toBe('free');
    expect(enumValues(free, 'voice_id')).toEqual(expect.arrayContaining(['male-qn-qingse', 'male-qn-jingying', 'female-shaonv', 'female-yujie']));
    expect(enumValues(free, 'voice_id').length).toBeGreaterThan(4);
    for (const slug of ['tts-standard', 'tts-hd', 'tts-mini']) {
      expect(enumValues(model(slug), 'voice_id')).toEqual(SIX_VOICES);
      expect(model(slug).config.max_text_length).toBe(4096);
    }
    for (const slug of ['tts-voice-fast', 'tts-voice-multilingual']) {
      const m = model(slug);
      expect(m.provider).toBe('elevenlabs');
      // Any voice id of that provider is allowed, so the param is a string with a default.
      expect(m.params.voice_id).toMatchObject({ type: 'string', default: 'rachel' });
      expect(m.config.voices).toEqual(['rachel', 'adam', 'bella', 'josh']);
      expect(m.config.default_voice).toBe('rachel');
    }
  });

  it('the built-in speech offers the local Flite voices and an eSpeak Russian voice', () => {
    const m = model('local-tts');
    expect(m.provider).toBe('local');
    expect(m.minPlan).toBe('free');
    expect(enumValues(m, 'voice_id')).toEqual(['kal', 'kal16', 'awb', 'rms', 'slt', 'ru']);
  });
});

describe('speech-to-text', () => {
  it('has three spec models at 2 tokens each: the fast one free, the others basic; only one can diarize', () => {
    const { fast, accurate, diarize } = SPEC.stt;
    for (const slug of [fast, accurate, diarize]) {
      const m = model(slug);
      expect(m.sync).toBe(true);
      expect(priceRange(m)).toEqual({ min: 2, max: 2 });
      expect(basePrice(m)).toBe(2);
    }
    expect(model(fast).minPlan).toBe('free');
    expect(model(accurate).minPlan).toBe('basic');
    expect(model(diarize).minPlan).toBe('basic');
    expect(model(diarize).provider).toBe('deepgram');
    // Of the spec's three upstream models only the diarization one labels speakers (the built-in one does too).
    const diarizing = models.filter((m) => m.category === 'stt' && m.provider !== 'local' && m.config.supports_diarization === true).map((m) => m.slug);
    expect(diarizing).toEqual([diarize]);
  });

  it('the built-in one is English only and refuses another language', () => {
    const m = model('local-stt');
    expect(m.config.languages).toEqual(['en']);
    expect(() => normalizeParams(m, { audio_url: 'https://example.com/a.wav', language: 'ru' }, {})).toThrow();
    expect(normalizeParams(m, { audio_url: 'https://example.com/a.wav', language: 'en' }, {})).toMatchObject({ language: 'en' });
  });
});

describe('tools (spec 4.1 tool table)', () => {
  it('has the seven tools at their table cost, local, synchronous, free', () => {
    for (const [slug, cost] of Object.entries(SPEC.tools)) {
      const m = model(slug);
      expect(m.category).toBe('tool');
      expect(m.provider).toBe('local');
      expect(m.upstreamModel).toBe(slug);
      expect(m.sync).toBe(true);
      expect(m.minPlan).toBe('free');
      expect(priceRange(m)).toEqual({ min: cost, max: cost });
    }
    expect(models.filter((m) => m.category === 'tool').map((m) => m.slug).sort()).toEqual(Object.keys(SPEC.tools).sort());
  });

  it('resolves the listed aliases upscale and text-ocr', () => {
    expect(catalog.find('upscale')?.slug).toBe('upscale-esrgan');
    expect(catalog.find('text-ocr')?.slug).toBe('ocr');
  });

  it('declares the per-tool params of decisions.md', () => {
    expect(model('upscale-esrgan').params.scale).toEqual({ type: 'integer', values: [2, 4], default: 2 });
    expect(model('face-swap').params.target_image_url).toEqual({ type: 'url' });
    expect(model('inpaint').params.mask_url).toEqual({ type: 'url' });
    expect(enumValues(model('style-transfer'), 'style').length).toBeGreaterThan(1);
  });
});

describe('music', () => {
  it('has an upstream music model, asynchronous, 5 to 240 s (default 30) priced per second, mp3 or wav', () => {
    const upstream = models.filter((m) => m.category === 'music' && m.provider === 'replicate');
    expect(upstream.length).toBeGreaterThanOrEqual(1);
    for (const m of upstream) {
      expect(m.sync).toBe(false);
      expect(m.params.duration).toMatchObject({ type: 'integer', min: 5, max: 240, default: 30 });
      expect(enumValues(m, 'format')).toEqual(['mp3', 'wav']);
      expect(priceOf(m, { duration: 240 })).toBeGreaterThan(priceOf(m, { duration: 30 }));
    }
    expect(priceOf(model('music-gen'), { duration: 30 })).toBe(6);
  });
});

describe('built-in local models', () => {
  it('are honest demos or classic algorithms, and the demos cover text, image and video', () => {
    for (const slug of ['demo-text', 'demo-image', 'demo-video', 'local-tts', 'local-stt', 'local-music']) {
      const m = model(slug);
      expect(m.provider).toBe('local');
      expect(m.kind).not.toBeNull();
      // Each says what it really is: a demo, a classic algorithm, or a real (offline) engine.
      expect(m.descriptionEn).toMatch(/demo|classic|real offline|network/i);
    }
    expect(model('demo-text')).toMatchObject({ category: 'text', sync: true, supportsStreaming: true, minPlan: 'free' });
    expect(basePrice(model('demo-text'))).toBe(1);
    const image = model('demo-image');
    expect(image).toMatchObject({ category: 'image', sync: true, minPlan: 'free' });
    expect(enumValues(image, 'size')).toEqual(['512x512', '1024x1024', '1024x1792', '1792x1024']);
    expect(priceRange(image)).toEqual({ min: 1, max: 2 });
    const video = model('demo-video');
    expect(video).toMatchObject({ category: 'video', sync: false });
    expect(integerValues(video, 'duration')).toEqual([5, 10]);
    expect(enumValues(video, 'resolution')).toEqual(['480p', '720p']);
    expect(model('local-music')).toMatchObject({ category: 'music', sync: false, minPlan: 'basic' });
  });
});

describe('Catalog: plans and providers', () => {
  it('lists only free models at free, and every model at basic', () => {
    const free = catalog.list({ availableAt: 'free' });
    expect(free.length).toBeGreaterThan(0);
    for (const { model: m } of free) expect(m.minPlan).toBe('free');
    const slugs = free.map((l) => l.model.slug);
    expect(slugs).not.toContain('chat-large');
    expect(slugs).not.toContain('video-fast');
    expect(slugs).toContain('chat-fast');
    expect(catalog.list({ availableAt: 'basic' })).toHaveLength(models.length);
    expect(catalog.list({ availableAt: 'elite' })).toHaveLength(models.length);
  });

  it('hides a model whose provider cannot serve it, unless a fallback can', () => {
    const noReplicate = new Catalog(models, plans, (provider) => provider !== 'replicate');
    expect(noReplicate.find('video-fast')).toBeUndefined();
    expect(noReplicate.list({ category: 'video' }).map((l) => l.model.slug)).toEqual(['demo-video']);
    expect(noReplicate.find('image-artistic')).toBeUndefined();
    expect(noReplicate.find('chat-fast')).toBeDefined();

    const withFallback: CatalogModel = { ...model('video-fast'), fallbacks: [{ provider: 'local', upstreamModel: 'demo-video' }] };
    const rescued = new Catalog([withFallback], plans, (provider) => provider !== 'replicate');
    expect(rescued.find('video-fast')).toBe(withFallback);

    // The shipped fallbacks: photoreal and open-weights images are served by replicate when the OpenAI-compatible upstream is not configured.
    const noOpenai = new Catalog(models, plans, (provider) => provider !== 'openai');
    expect(noOpenai.find('image-photoreal')).toBeDefined();
    expect(noOpenai.find('image-realistic')).toBeDefined();
    expect(noOpenai.find('image-prompt-following')).toBeUndefined();
  });

  it('hides the built-in speech, transcription and music until the local provider can serve those categories', () => {
    const localServes = new Set<Category>(['text', 'image', 'video', 'tool']);
    const only = new Catalog(models, plans, (provider, category) => provider === 'local' && localServes.has(category));
    expect(only.find('demo-text')).toBeDefined();
    expect(only.find('upscale')).toBeDefined();
    expect(only.find('local-tts')).toBeUndefined();
    expect(only.find('local-stt')).toBeUndefined();
    expect(only.find('local-music')).toBeUndefined();
    expect(new Set(only.list().map((l) => l.model.category))).toEqual(localServes);
  });
});

describe('parseCatalog refusals', () => {
  const valid = {
    slug: 'x-model', name: 'X', category: 'text', provider: 'local', upstream_model: 'x', sync: true, price: { base: 1 },
  };

  it('accepts a minimal model and fills defaults', () => {
    const [m] = parseCatalog({ models: [valid] }, 'mini.json');
    expect(m).toMatchObject({ slug: 'x-model', minPlan: 'free', aliases: [], fallbacks: [], kind: null, timeoutSeconds: 60 });
  });

  it('refuses a slug or alias declared twice (when the catalog is built from it)', () => {
    const twice = parseCatalog({ models: [valid, { ...valid, name: 'Y' }] }, 'dup.json');
    expect(() => new Catalog(twice, plans, () => true)).toThrow('catalog: slug or alias "x-model" is declared twice');
    const aliasClash = parseCatalog({ models: [valid, { ...valid, slug: 'y-model', aliases: ['x-model'] }] }, 'dup.json');
    expect(() => new Catalog(aliasClash, plans, () => true)).toThrow('catalog: slug or alias "x-model" is declared twice');
    // The shipped catalog has no clash: every slug and alias is unique.
    const keys = models.flatMap((m) => [m.slug, ...m.aliases]);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('refuses an unknown category, naming the file and the field', () => {
    expect(() => parseCatalog({ models: [{ ...valid, category: 'hologram' }] }, 'bad.json')).toThrow(
      /^Catalog bad\.json is invalid: models\.0\.category: .*"text".*"tool"/,
    );
  });

  it('refuses a price that names an undeclared param', () => {
    const priced = { ...valid, category: 'video', price: { base: 0, per_unit: [{ param: 'duration', rate: 3 }] } };
    expect(() => parseCatalog({ models: [priced] }, 'bad.json')).toThrow('Catalog bad.json: x-model prices by undeclared param "duration"');
    const multiplied = {
      ...valid,
      params: { size: { type: 'enum', values: ['a'] } },
      price: { base: 1, multipliers: [{ param: 'quality', values: { hd: 2 } }] },
    };
    expect(() => parseCatalog({ models: [multiplied] }, 'bad.json')).toThrow('x-model prices by undeclared param "quality"');
  });
});
