/**
 * The built-in local providers (shared/providers/local): pure unit tests, no app. Text is a Markov
 * chain over the shipped corpus; images are procedural art drawn with sharp; videos are a slow
 * zoom encoded by ffmpeg (the system one, else @ffmpeg-installer's), checked with ffprobe when there
 * is one, else by parsing `ffmpeg -i` and decoding the file.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { videoDimensions } from '../shared/media/video-size';
import { createLocalProvider, localEngines } from '../shared/providers/local';
import { LocalImageProvider } from '../shared/providers/local/image';
import { countWords, LocalTextProvider } from '../shared/providers/local/text';
import { LocalVideoProvider } from '../shared/providers/local/video';
import { ProviderError } from '../shared/providers/types';
import type { ChatMessage, ImageRequest, TextChunk, TextRequest, VideoRequest } from '../shared/providers/types';

function options(signal: AbortSignal = new AbortController().signal) {
  return { signal };
}

describe('createLocalProvider / localEngines', () => {
  it('is the "local" adapter with text, image and video', () => {
    const adapter = createLocalProvider();
    expect(adapter.name).toBe('local');
    expect(adapter.text).toBeDefined();
    expect(adapter.image).toBeDefined();
    expect(adapter.video).toBeDefined();
  });

  it('finds an ffmpeg (system or @ffmpeg-installer) that runs', () => {
    const { ffmpeg } = localEngines();
    expect(ffmpeg).not.toBeNull();
    expect(spawnSync(ffmpeg ?? 'ffmpeg', ['-version']).status).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------
// Text
// ---------------------------------------------------------------------------------------------

describe('LocalTextProvider', () => {
  const text = new LocalTextProvider();

  function request(prompt: string, extra: Partial<TextRequest> = {}): TextRequest {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'You are a helpful assistant.' },
      { role: 'user', content: prompt },
    ];
    return { upstreamModel: 'local-markov', messages, temperature: 0.7, maxTokens: null, maxContext: null, ...extra };
  }

  async function collect(stream: AsyncIterable<TextChunk>): Promise<TextChunk[]> {
    const chunks: TextChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    return chunks;
  }

  it('is deterministic for the same messages and temperature', async () => {
    const a = await text.complete(request('Tell me about baking bread on a winter evening'), options());
    const b = await text.complete(request('Tell me about baking bread on a winter evening'), options());
    expect(a).toEqual(b);
    expect(a.content.length).toBeGreaterThan(0);
  });

  it('differs for different prompts and for different temperatures', async () => {
    const bread = await text.complete(request('Tell me about baking bread'), options());
    const sea = await text.complete(request('What is the sea like in a storm?'), options());
    expect(sea.content).not.toBe(bread.content);
    const cold = await text.complete(request('Tell me about baking bread', { temperature: 0.2 }), options());
    const hot = await text.complete(request('Tell me about baking bread', { temperature: 1.6 }), options());
    expect(hot.content).not.toBe(cold.content);
  });

  it('starts from the prompt: the reply uses the prompt words it knows', async () => {
    for (const word of ['bicycle', 'library', 'snow']) {
      const { content } = await text.complete(request(`Say something about the ${word}`), options());
      expect(content.toLowerCase()).toContain(word);
    }
  });

  it('writes whole sentences of about 60-120 words by default, counting words as tokens', async () => {
    for (const prompt of ['hello', 'How do I keep my garden healthy in summer?', 'trains and maps', 'zzzz qqqq']) {
      const req = request(prompt);
      const { content, usage } = await text.complete(req, options());
      const words = countWords(content);
      expect(words).toBeGreaterThanOrEqual(30);
      expect(words).toBeLessThanOrEqual(120);
      expect(content).toMatch(/^[A-Z]/);
      expect(content).toMatch(/[.!?]$/);
      expect(usage.completion_tokens).toBe(words);
      expect(usage.prompt_tokens).toBe(countWords('You are a helpful assistant.') + countWords(prompt));
      expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
    }
  });

  it('respects maxTokens as a cap on words', async () => {
    for (const maxTokens of [1, 4, 12, 25, 50]) {
      const { content, usage } = await text.complete(request('Tell me about rain on the roof', { maxTokens }), options());
      expect(countWords(content)).toBeLessThanOrEqual(maxTokens);
      expect(countWords(content)).toBeGreaterThan(0);
      expect(usage.completion_tokens).toBe(countWords(content));
      expect(content).toMatch(/[.!?]$/);
    }
  });

  it('reads text parts of multi-part messages', async () => {
    const req: TextRequest = {
      ...request(''),
      messages: [{ role: 'user', content: [{ type: 'text', text: 'the moon and the stars' }, { type: 'image_url', image_url: { url: 'https://example.invalid/x.png' } }] }],
    };
    const { content, usage } = await text.complete(req, options());
    expect(content.toLowerCase()).toMatch(/moon|star/);
    expect(usage.prompt_tokens).toBe(5);
  });

  it('streams the same content as complete, in word deltas, usage last', async () => {
    const req = request('Tell me about the market on Saturday', { maxTokens: 80 });
    const full = await text.complete(req, options());
    const chunks = await collect(text.stream(req, options()));
    const deltas = chunks.filter((c): c is { delta: string } => 'delta' in c).map((c) => c.delta);
    expect(deltas.join('')).toBe(full.content);
    expect(deltas.length).toBe(countWords(full.content));
    for (const delta of deltas.slice(1)) expect(delta).toMatch(/^ \S+$/);
    expect(chunks[chunks.length - 1]).toEqual({ usage: full.usage });
  });

  it('stops streaming promptly when the signal aborts', async () => {
    const controller = new AbortController();
    const received: string[] = [];
    const run = async () => {
      for await (const chunk of text.stream(request('Tell me about music'), options(controller.signal))) {
        if ('delta' in chunk) received.push(chunk.delta);
        if (received.length === 3) controller.abort();
      }
    };
    await expect(run()).rejects.toMatchObject({ name: 'AbortError' });
    expect(received).toHaveLength(3);
  });

  it('rejects at once when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(text.complete(request('hi'), options(controller.signal))).rejects.toMatchObject({ name: 'AbortError' });
  });
});

// ---------------------------------------------------------------------------------------------
// Image
// ---------------------------------------------------------------------------------------------

describe('LocalImageProvider', () => {
  const images = new LocalImageProvider();

  function request(extra: Partial<ImageRequest> = {}): ImageRequest {
    return {
      upstreamModel: 'local-procedural',
      prompt: 'a quiet lake at sunset with mountains and pine trees',
      negativePrompt: null,
      width: 320,
      height: 200,
      aspectRatio: null,
      format: 'webp',
      quality: 'standard',
      style: null,
      seed: 1234,
      inputImage: null,
      ...extra,
    };
  }

  it.each([
    ['webp', 'image/webp', 'webp'],
    ['png', 'image/png', 'png'],
    ['jpeg', 'image/jpeg', 'jpg'],
  ] as const)('draws exactly width×height as %s', async (format, contentType, extension) => {
    for (const [width, height] of [
      [320, 200],
      [200, 333],
      [257, 257],
    ]) {
      const result = await images.generate(request({ format, width, height }), options());
      expect(result.file.contentType).toBe(contentType);
      expect(result.file.extension).toBe(extension);
      expect(result).toMatchObject({ width, height, seed: 1234 });
      const meta = await sharp(result.file.bytes).metadata();
      expect(meta.format).toBe(format);
      expect(meta.width).toBe(width);
      expect(meta.height).toBe(height);
    }
  });

  it('gives the same bytes for the same prompt and seed, other bytes for another seed or prompt', async () => {
    const a = await images.generate(request(), options());
    const b = await images.generate(request(), options());
    const otherSeed = await images.generate(request({ seed: 1235 }), options());
    const otherPrompt = await images.generate(request({ prompt: 'a city skyline at night' }), options());
    expect(a.file.bytes.equals(b.file.bytes)).toBe(true);
    expect(a.file.bytes.equals(otherSeed.file.bytes)).toBe(false);
    expect(a.file.bytes.equals(otherPrompt.file.bytes)).toBe(false);
  });

  it('is a picture, not a flat colour', async () => {
    for (const prompt of ['a quiet lake at sunset', 'x', 'abstract purple shapes', '']) {
      const { file } = await images.generate(request({ prompt, format: 'png' }), options());
      const stats = await sharp(file.bytes).stats();
      const meanStdev = stats.channels.slice(0, 3).reduce((sum, channel) => sum + channel.stdev, 0) / 3;
      expect(meanStdev).toBeGreaterThan(12);
    }
  });

  it('blends the art over the input image (image-to-image)', async () => {
    const red = await sharp({ create: { width: 100, height: 60, channels: 3, background: { r: 230, g: 20, b: 20 } } }).png().toBuffer();
    const blue = await sharp({ create: { width: 100, height: 60, channels: 3, background: { r: 20, g: 20, b: 230 } } }).png().toBuffer();
    const onRed = await images.generate(request({ inputImage: red, format: 'png', width: 256, height: 256 }), options());
    const onBlue = await images.generate(request({ inputImage: blue, format: 'png', width: 256, height: 256 }), options());
    const meta = await sharp(onRed.file.bytes).metadata();
    expect([meta.width, meta.height]).toEqual([256, 256]);
    const redStats = await sharp(onRed.file.bytes).stats();
    const blueStats = await sharp(onBlue.file.bytes).stats();
    expect(redStats.channels[0].mean - redStats.channels[2].mean).toBeGreaterThan(blueStats.channels[0].mean - blueStats.channels[2].mean + 40);
    expect((redStats.channels[0].stdev + redStats.channels[1].stdev) / 2).toBeGreaterThan(5);
  });

  it('refuses bad sizes and unreadable input images as bad_request', async () => {
    await expect(images.generate(request({ width: 0 }), options())).rejects.toMatchObject({ kind: 'bad_request' });
    await expect(images.generate(request({ height: 100000 }), options())).rejects.toBeInstanceOf(ProviderError);
    await expect(images.generate(request({ inputImage: Buffer.from('not an image') }), options())).rejects.toMatchObject({ kind: 'bad_request' });
  });
});

// ---------------------------------------------------------------------------------------------
// Video
// ---------------------------------------------------------------------------------------------

interface Probe {
  codec: string;
  pixFmt: string;
  width: number;
  height: number;
  duration: number;
  frames: number;
}

function ffmpegPath(): string {
  const found = localEngines().ffmpeg;
  if (!found) throw new Error('no ffmpeg');
  return found;
}

function ffprobePath(): string | null {
  const beside = path.join(path.dirname(ffmpegPath()), 'ffprobe');
  for (const candidate of ['ffprobe', beside]) {
    const run = spawnSync(candidate, ['-version'], { stdio: 'ignore' });
    if (!run.error && run.status === 0) return candidate;
  }
  return null;
}

/** ffprobe when there is one; else `ffmpeg -i` stderr for the stream line and duration. Frames by decoding. */
function probe(file: string): Probe {
  const ffprobe = ffprobePath();
  const decoded = spawnSync(ffmpegPath(), ['-hide_banner', '-nostdin', '-i', file, '-map', '0:v:0', '-f', 'null', '-'], { encoding: 'utf8' });
  expect(decoded.status).toBe(0);
  const frameMatches = [...decoded.stderr.matchAll(/frame=\s*(\d+)/g)];
  const frames = Number(frameMatches[frameMatches.length - 1][1]);
  if (ffprobe) {
    const out = spawnSync(
      ffprobe,
      ['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'stream=codec_name,pix_fmt,width,height:format=duration', '-of', 'json', file],
      { encoding: 'utf8' },
    );
    const parsed = JSON.parse(out.stdout) as { streams: Array<{ codec_name: string; pix_fmt: string; width: number; height: number }>; format: { duration: string } };
    const stream = parsed.streams[0];
    return { codec: stream.codec_name, pixFmt: stream.pix_fmt, width: stream.width, height: stream.height, duration: Number(parsed.format.duration), frames };
  }
  const info = spawnSync(ffmpegPath(), ['-hide_banner', '-nostdin', '-i', file], { encoding: 'utf8' }).stderr;
  const duration = /Duration: (\d+):(\d+):(\d+(?:\.\d+)?)/.exec(info);
  const stream = /Stream #\S+.*?: Video: (\w+)[^,]*, (\w+)(?:\([^)]*\))?, (\d+)x(\d+)/.exec(info);
  if (!duration || !stream) throw new Error(`cannot parse ffmpeg -i output:\n${info}`);
  return {
    codec: stream[1],
    pixFmt: stream[2],
    width: Number(stream[3]),
    height: Number(stream[4]),
    duration: Number(duration[1]) * 3600 + Number(duration[2]) * 60 + Number(duration[3]),
    frames,
  };
}

/** The MP4's top-level box types, in order (faststart puts moov before mdat). */
function topLevelBoxes(bytes: Buffer): string[] {
  const boxes: string[] = [];
  let offset = 0;
  while (offset + 8 <= bytes.length) {
    let size = bytes.readUInt32BE(offset);
    const type = bytes.toString('latin1', offset + 4, offset + 8);
    if (size === 1) size = Number(bytes.readBigUInt64BE(offset + 8));
    if (size === 0) size = bytes.length - offset;
    boxes.push(type);
    if (size < 8) break;
    offset += size;
  }
  return boxes;
}

function videoRequest(extra: Partial<VideoRequest> = {}): VideoRequest {
  return {
    upstreamModel: 'local-zoom',
    prompt: 'a harbor town at dawn with boats on the water',
    negativePrompt: null,
    durationSeconds: 5,
    aspectRatio: '16:9',
    resolution: '480p',
    seed: 7,
    startImage: null,
    ...extra,
  };
}

function tempVideoDirs(): Set<string> {
  return new Set(fs.readdirSync(os.tmpdir()).filter((name) => name.startsWith('gensvc-video-')));
}

describe('LocalVideoProvider', () => {
  const video = new LocalVideoProvider();
  let workDir: string;

  beforeAll(() => {
    workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'local-providers-test-'));
  });
  afterAll(() => {
    fs.rmSync(workDir, { recursive: true, force: true });
  });

  it('sizes 16:9, 9:16 and 1:1 by the short side (480p, 720p; 720p by default)', () => {
    expect(videoDimensions('16:9', '480p')).toEqual({ width: 854, height: 480 });
    expect(videoDimensions('9:16', '480p')).toEqual({ width: 480, height: 854 });
    expect(videoDimensions('1:1', '480p')).toEqual({ width: 480, height: 480 });
    expect(videoDimensions('16:9', '720p')).toEqual({ width: 1280, height: 720 });
    expect(videoDimensions('9:16', '')).toEqual({ width: 720, height: 1280 });
    expect(() => videoDimensions('16:9', '123p')).toThrow(ProviderError);
    expect(() => videoDimensions('wide', '720p')).toThrow(ProviderError);
  });

  it.each([
    ['16:9', 854, 480, false],
    ['9:16', 480, 854, false],
    ['1:1', 480, 480, true],
  ] as const)('encodes %s at 480p: H.264 yuv420p, 5 s, faststart, with a JPEG thumbnail', async (aspectRatio, width, height, withStartImage) => {
    const startImage = withStartImage
      ? (await new LocalImageProvider().generate(
          { upstreamModel: 'x', prompt: 'flowers in a garden', negativePrompt: null, width: 640, height: 400, aspectRatio: null, format: 'jpeg', quality: 'standard', style: null, seed: 3, inputImage: null },
          options(),
        )).file.bytes
      : null;
    const progress: number[] = [];
    const result = await video.generate(videoRequest({ aspectRatio, startImage }), { signal: new AbortController().signal, onProgress: (p) => progress.push(p) });

    expect(result.file).toMatchObject({ contentType: 'video/mp4', extension: 'mp4' });
    expect(result).toMatchObject({ width, height, durationSeconds: 5 });
    const file = path.join(workDir, `out-${aspectRatio.replace(':', 'x')}.mp4`);
    fs.writeFileSync(file, result.file.bytes);
    const probed = probe(file);
    expect(probed.codec).toBe('h264');
    expect(probed.pixFmt).toBe('yuv420p');
    expect([probed.width, probed.height]).toEqual([width, height]);
    expect(Math.abs(probed.duration - 5)).toBeLessThanOrEqual(0.2);
    expect(probed.frames).toBe(125);
    const boxes = topLevelBoxes(result.file.bytes);
    expect(boxes.indexOf('moov')).toBeGreaterThanOrEqual(0);
    expect(boxes.indexOf('moov')).toBeLessThan(boxes.indexOf('mdat'));

    expect(result.thumbnail).not.toBeNull();
    expect(result.thumbnail).toMatchObject({ contentType: 'image/jpeg', extension: 'jpg' });
    const thumb = await sharp(result.thumbnail?.bytes).metadata();
    expect(thumb.format).toBe('jpeg');
    expect([thumb.width, thumb.height]).toEqual([width, height]);

    expect(progress[progress.length - 1]).toBe(100);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
  });

  it('moves: the last frame differs from the first', async () => {
    const result = await video.generate(videoRequest({ durationSeconds: 2, aspectRatio: '1:1', seed: 99 }), options());
    const file = path.join(workDir, 'motion.mp4');
    fs.writeFileSync(file, result.file.bytes);
    const frame = (at: string) => {
      const out = spawnSync(ffmpegPath(), ['-hide_banner', '-nostdin', '-loglevel', 'error', '-ss', at, '-i', file, '-frames:v', '1', '-f', 'rawvideo', '-pix_fmt', 'gray', '-'], {
        maxBuffer: 16 * 1024 * 1024,
      });
      return out.stdout;
    };
    const first = frame('0');
    const last = frame('1.9');
    expect(first.length).toBe(480 * 480);
    expect(last.length).toBe(480 * 480);
    let diff = 0;
    for (let i = 0; i < first.length; i++) diff += Math.abs(first[i] - last[i]);
    expect(diff / first.length).toBeGreaterThan(2);
  });

  it('refuses bad durations and sizes as bad_request', async () => {
    await expect(video.generate(videoRequest({ durationSeconds: 0 }), options())).rejects.toMatchObject({ kind: 'bad_request' });
    await expect(video.generate(videoRequest({ durationSeconds: 600 }), options())).rejects.toMatchObject({ kind: 'bad_request' });
    await expect(video.generate(videoRequest({ resolution: '4k' }), options())).rejects.toMatchObject({ kind: 'bad_request' });
    await expect(video.generate(videoRequest({ startImage: Buffer.from('nope') }), options())).rejects.toMatchObject({ kind: 'bad_request' });
  });

  it('abort kills a running encode and cleans up its temp dir', async () => {
    const before = tempVideoDirs();
    const controller = new AbortController();
    let abortedAt = 0;
    const run = video.generate(videoRequest({ durationSeconds: 40, resolution: '720p' }), {
      signal: controller.signal,
      onProgress: (percent) => {
        // Past 10% ffmpeg is running and has encoded frames: abort then.
        if (percent > 10 && abortedAt === 0) {
          abortedAt = Date.now();
          controller.abort();
        }
      },
    });
    // While ffmpeg runs, find its temp dir and process.
    let dir: string | undefined;
    const spotted = (async () => {
      while (!dir && abortedAt === 0) {
        dir = [...tempVideoDirs()].find((name) => !before.has(name));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    await expect(run).rejects.toMatchObject({ name: 'AbortError' });
    await spotted;
    const settledIn = Date.now() - abortedAt;
    console.log(`local video abort: settled ${settledIn} ms after abort`);
    expect(abortedAt).toBeGreaterThan(0);
    expect(settledIn).toBeLessThan(2000);
    expect(dir).toBeDefined();
    expect(fs.existsSync(path.join(os.tmpdir(), dir ?? 'missing'))).toBe(false);
    // No ffmpeg is left writing into that dir (Linux: every process's command line).
    const commandLines = fs
      .readdirSync('/proc')
      .filter((entry) => /^\d+$/.test(entry))
      .map((pid) => {
        try {
          return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        } catch {
          return '';
        }
      });
    expect(commandLines.filter((line) => line.includes(dir ?? 'missing'))).toEqual([]);
  });
});
