/**
 * @jest-environment ./test/fixtures/tools/main-realm-environment.js
 */
/**
 * The built-in offline image tools (shared/providers/local/tools): unit tests, no app. Inputs are
 * drawn with sharp + SVG here; the face-swap test uses two of the sample photos that ship in
 * `@vladmandic/face-api`'s demo/ folder, cropped to one face each.
 */
import path from 'node:path';
import sharp from 'sharp';
import { cloneSeamless, convexHull, delaunay, warpPiecewiseAffine } from '../shared/providers/local/tools/face-geometry';
import type { Point } from '../shared/providers/local/tools/face-geometry';
import {
  checkUpscaleInput,
  faceDescriptor,
  LocalToolProvider,
  localToolEngines,
  STYLE_NAMES,
  UPSCALE_MAX_INPUT_PIXELS,
} from '../shared/providers/local/tools';
import { correlation, gaussianBlur, rgbToLab } from '../shared/providers/local/tools/pixels';
import { ProviderError } from '../shared/providers/types';
import type { ToolRequest, ToolResult } from '../shared/providers/types';

jest.setTimeout(60_000);

/** A module-local binding: Jest's sandbox serves the global Math through an accessor, slow in pixel loops. */
const Math = globalThis.Math;

const provider = new LocalToolProvider();

afterAll(async () => {
  await provider.close();
});

function request(tool: string, image: Buffer, extra: Partial<ToolRequest> = {}): ToolRequest {
  return { upstreamModel: tool, tool, prompt: null, image, secondImage: null, params: {}, ...extra };
}

async function run(tool: string, image: Buffer, extra: Partial<ToolRequest> = {}): Promise<ToolResult> {
  return provider.run(request(tool, image, extra), { signal: new AbortController().signal });
}

async function runImage(tool: string, image: Buffer, extra: Partial<ToolRequest> = {}) {
  const result = await run(tool, image, extra);
  if (result.kind !== 'image') throw new Error(`${tool} returned ${result.kind}`);
  expect(result.file.contentType).toBe('image/png');
  expect(result.file.extension).toBe('png');
  const { data, info } = await sharp(result.file.bytes).raw().toBuffer({ resolveWithObject: true });
  expect([info.width, info.height]).toEqual([result.width, result.height]);
  return { result, data, width: info.width, height: info.height, channels: info.channels };
}

async function expectBadRequest(promise: Promise<unknown>, message: RegExp): Promise<void> {
  const error: unknown = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProviderError);
  expect((error as ProviderError).kind).toBe('bad_request');
  expect((error as ProviderError).message).toMatch(message);
}

function svg(width: number, height: number, body: string, background = 'white'): Buffer {
  return Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="100%" height="100%" fill="${background}"/>${body}</svg>`,
  );
}

async function png(source: Buffer): Promise<Buffer> {
  return sharp(source).png().toBuffer();
}

async function rawRgb(bytes: Buffer): Promise<{ data: Buffer; width: number; height: number }> {
  const { data, info } = await sharp(bytes).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

function lumaPlane(data: Uint8Array, width: number, height: number, channels: number): Float32Array {
  const out = new Float32Array(width * height);
  for (let i = 0; i < out.length; i++) out[i] = 0.299 * data[i * channels] + 0.587 * data[i * channels + 1] + 0.114 * data[i * channels + 2];
  return out;
}

/** Mean gradient magnitude and variance of the Laplacian of the luma: both grow with sharpness. */
function sharpness(data: Uint8Array, width: number, height: number, channels: number): { gradient: number; laplacian: number } {
  const y = lumaPlane(data, width, height, channels);
  let gradient = 0;
  let sum = 0;
  let sum2 = 0;
  let n = 0;
  for (let r = 1; r < height - 1; r++) {
    for (let c = 1; c < width - 1; c++) {
      const k = r * width + c;
      gradient += Math.hypot(y[k + 1] - y[k - 1], y[k + width] - y[k - width]) / 2;
      const lap = 4 * y[k] - y[k - 1] - y[k + 1] - y[k - width] - y[k + width];
      sum += lap;
      sum2 += lap * lap;
      n++;
    }
  }
  return { gradient: gradient / n, laplacian: sum2 / n - (sum / n) ** 2 };
}

/** Gradient magnitude of the blurred luma (structure at a coarse scale). */
function edgeMap(data: Uint8Array, width: number, height: number, channels: number, sigma = 2): Float32Array {
  const y = gaussianBlur(lumaPlane(data, width, height, channels), width, height, sigma);
  const out = new Float32Array(width * height);
  for (let r = 1; r < height - 1; r++) {
    for (let c = 1; c < width - 1; c++) {
      const k = r * width + c;
      out[k] = Math.hypot(y[k + 1] - y[k - 1], y[k + width] - y[k - width]);
    }
  }
  return out;
}

function meanAbsDiff(a: Uint8Array, b: Uint8Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += Math.abs(a[i] - b[i]);
  return s / a.length;
}

describe('localToolEngines', () => {
  it('reports every tool as runnable here', () => {
    expect(localToolEngines()).toEqual({
      'upscale-esrgan': true,
      'remove-bg': true,
      ocr: true,
      inpaint: true,
      'face-swap': true,
      colorize: true,
      'style-transfer': true,
    });
  });

  it('refuses an unknown tool', async () => {
    await expectBadRequest(run('sharpen', await png(svg(16, 16, ''))), /Unknown local tool/);
  });
});

describe('ocr', () => {
  const textImage = () =>
    png(svg(520, 140, '<text x="24" y="88" font-family="DejaVu Sans, sans-serif" font-size="46" font-weight="bold" fill="#111">HELLO GENSVC 42</text>'));

  it('reads printed text, with one warm worker', async () => {
    const image = await textImage();
    const first = await run('ocr', image);
    expect(first.kind).toBe('text');
    if (first.kind !== 'text') return;
    expect(first.text.toUpperCase()).toContain('HELLO GENSVC 42');
    const started = Date.now();
    const second = await run('ocr', await png(svg(400, 120, '<text x="20" y="75" font-family="DejaVu Serif" font-size="40" fill="black">Offline 2024</text>')));
    expect(Date.now() - started).toBeLessThan(5000);
    expect(second.kind === 'text' && second.text.toLowerCase()).toContain('offline 2024');
  });
});

describe('remove-bg', () => {
  it('returns a PNG whose alpha is clear on the background and opaque on the subject', async () => {
    // Wider than the 1024 px the mask is computed at, and not square.
    const input = await png(svg(1100, 700, '<circle cx="550" cy="350" r="170" fill="#e69138"/>', '#6fa8dc'));
    const { data, width, height, channels } = await runImage('remove-bg', input);
    expect([width, height, channels]).toEqual([1100, 700, 4]);
    const alpha = (x: number, y: number) => data[(y * width + x) * 4 + 3];
    for (const [x, y] of [
      [5, 5],
      [1094, 5],
      [5, 694],
      [1094, 694],
      [300, 350],
      [800, 350],
    ]) {
      expect(alpha(x, y)).toBeLessThan(16);
    }
    for (const [x, y] of [
      [550, 350],
      [470, 380],
      [630, 320],
    ]) {
      expect(alpha(x, y)).toBeGreaterThan(240);
    }
    // Colours of the subject are kept.
    const centre = (350 * width + 550) * 4;
    expect(data[centre]).toBeGreaterThan(200);
    expect(data[centre + 2]).toBeLessThan(100);
  });
});

describe('upscale-esrgan', () => {
  const scene = svg(
    256,
    256,
    '<text x="8" y="60" font-family="DejaVu Sans" font-size="30" fill="black">Sharp edges</text>' +
      '<text x="8" y="120" font-family="DejaVu Serif" font-size="34" fill="#224">over 1234</text>' +
      '<rect x="20" y="150" width="90" height="80" fill="#c33"/><circle cx="180" cy="190" r="45" fill="#3a3"/>',
  );

  for (const scale of [2, 4] as const) {
    it(`×${scale} multiplies the size and is sharper than a Lanczos resize`, async () => {
      const side = 256 / scale;
      const input = await sharp(scene).resize(side, side, { kernel: 'lanczos3' }).removeAlpha().png().toBuffer();
      const { data, width, height, channels } = await runImage('upscale-esrgan', input, { params: { scale } });
      expect([width, height]).toEqual([side * scale, side * scale]);
      const lanczos = await sharp(input).resize(width, height, { kernel: 'lanczos3' }).raw().toBuffer();
      const ours = sharpness(data, width, height, channels);
      const plain = sharpness(lanczos, width, height, 3);
      expect(ours.gradient).toBeGreaterThan(plain.gradient * 1.03);
      expect(ours.laplacian).toBeGreaterThan(plain.laplacian * 1.2);
    });
  }

  it('keeps transparency (alpha enlarged alongside)', async () => {
    const input = await png(svg(64, 64, '<circle cx="32" cy="32" r="20" fill="#2a6"/>', 'none'));
    const { data, width, height, channels } = await runImage('upscale-esrgan', input, { params: { scale: '4' } });
    expect([width, height, channels]).toEqual([256, 256, 4]);
    expect(data[(4 * 256 + 4) * 4 + 3]).toBe(0);
    expect(data[(128 * 256 + 128) * 4 + 3]).toBe(255);
    expect(data[(128 * 256 + 128) * 4 + 1]).toBeGreaterThan(120);
  });

  it('refuses inputs above the pixel cap of the scale, naming the limit', async () => {
    expect(UPSCALE_MAX_INPUT_PIXELS).toEqual({ 2: 384 * 384, 4: 256 * 256 });
    expect(checkUpscaleInput(384, 384, 2)).toBeNull();
    expect(checkUpscaleInput(512, 288, 2)).toBeNull();
    expect(checkUpscaleInput(256, 256, 4)).toBeNull();
    expect(checkUpscaleInput(400, 400, 2)).toMatch(/at most 147456 \(384×384\)/);
    expect(checkUpscaleInput(300, 300, 4)).toMatch(/65536 \(256×256\)/);
    expect(checkUpscaleInput(10, 10, 3)).toMatch(/scale must be 2 or 4/);
    const big = await png(svg(300, 300, ''));
    await expectBadRequest(run('upscale-esrgan', big, { params: { scale: 4 } }), /at most 65536 \(256×256\)/);
    await expectBadRequest(run('upscale-esrgan', big, { params: { scale: 3 } }), /scale must be 2 or 4/);
  });
});

describe('inpaint', () => {
  const background = '<rect width="100%" height="100%" fill="url(#g)"/><defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="#7aa"/><stop offset="1" stop-color="#cb9"/></linearGradient></defs>';

  it('fills the masked region from its surroundings', async () => {
    const blob = '<circle cx="128" cy="128" r="36" fill="#d11"/>';
    const withBlob = await rawRgb(await png(svg(256, 256, background + blob)));
    const clean = await rawRgb(await png(svg(256, 256, background)));
    const input = await sharp(withBlob.data, { raw: { width: 256, height: 256, channels: 3 } }).png().toBuffer();
    // A mask of another size (it is resized to the image) with a slightly larger disc.
    const mask = await png(svg(128, 128, '<circle cx="64" cy="64" r="21" fill="white"/>', 'black'));
    const { data, width, channels } = await runImage('inpaint', input, { secondImage: mask });
    const inside: number[] = [];
    for (let y = 100; y < 156; y++) for (let x = 100; x < 156; x++) if (Math.hypot(x - 128, y - 128) < 34) inside.push(y * width + x);
    const diff = (a: Uint8Array, ca: number, b: Uint8Array) =>
      inside.reduce((s, p) => s + Math.abs(a[p * ca] - b[p * 3]) + Math.abs(a[p * ca + 1] - b[p * 3 + 1]) + Math.abs(a[p * ca + 2] - b[p * 3 + 2]), 0) /
      (inside.length * 3);
    const toBackground = diff(data, channels, clean.data);
    const toBlob = diff(data, channels, withBlob.data);
    expect(toBackground).toBeLessThan(12);
    expect(toBlob).toBeGreaterThan(toBackground * 5);
  });

  it('needs a mask', async () => {
    await expectBadRequest(run('inpaint', await png(svg(32, 32, ''))), /mask/);
  });
});

describe('face-swap', () => {
  const demo = path.join(path.dirname(require.resolve('@vladmandic/face-api/package.json')), 'demo');

  /** A square crop around one face of a demo photo (boxes found by face-api's own detector). */
  function faceCrop(file: string, box: [number, number, number, number]): Promise<Buffer> {
    const [x, y, w, h] = box;
    const side = Math.round(Math.max(w, h) * 1.7);
    return sharp(path.join(demo, file))
      .extract({ left: Math.round(x + w / 2 - side / 2), top: Math.round(y + h / 2 - side / 2), width: side, height: side })
      .resize(320, 320)
      .png()
      .toBuffer();
  }

  const distance = (a: Float32Array, b: Float32Array) => Math.sqrt(a.reduce((s, v, i) => s + (v - b[i]) ** 2, 0));

  it('moves the target face towards the source identity (face-api descriptors)', async () => {
    const source = await faceCrop('sample1.jpg', [414, 355, 177, 240]);
    const target = await faceCrop('sample6.jpg', [1180, 305, 188, 280]);
    const { result } = await runImage('face-swap', source, { secondImage: target });
    expect([result.width, result.height]).toEqual([320, 320]);
    if (result.kind !== 'image') return;
    const [ds, dt, dr] = await Promise.all([faceDescriptor(source), faceDescriptor(target), faceDescriptor(result.file.bytes)]);
    expect(ds && dt && dr).toBeTruthy();
    if (!ds || !dt || !dr) return;
    const before = distance(ds, dt);
    const after = distance(ds, dr);
    expect(after).toBeLessThan(before - 0.1);
    // Still a face in the target's frame: the background outside the face is untouched.
    const out = await rawRgb(result.file.bytes);
    const orig = await rawRgb(target);
    expect(meanAbsDiff(out.data.subarray(0, 320 * 30 * 3), orig.data.subarray(0, 320 * 30 * 3))).toBeLessThan(1);
  });

  it('says which image has no face', async () => {
    const face = await faceCrop('sample1.jpg', [414, 355, 177, 240]);
    const blank = await png(svg(240, 240, '<rect x="40" y="40" width="160" height="120" fill="#8ab"/>', '#eee'));
    await expectBadRequest(run('face-swap', blank, { secondImage: face }), /^No face found in the source image$/);
    await expectBadRequest(run('face-swap', face, { secondImage: blank }), /^No face found in the target image$/);
    await expectBadRequest(run('face-swap', face), /target image/);
  });

  it('warps piecewise-affinely: a global affine map is reproduced exactly', () => {
    const width = 64;
    const height = 64;
    const source = new Uint8Array(width * height * 3);
    for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) source.set([x * 4, y * 4, (x * y) % 256], (y * width + x) * 3);
    const destination: Point[] = [];
    for (let y = 8; y <= 56; y += 12) for (let x = 8; x <= 56; x += 12) destination.push([x + ((y / 12) % 2) * 3, y]);
    const affine = (p: Point): Point => [0.8 * p[0] + 0.1 * p[1] + 5, -0.05 * p[0] + 0.9 * p[1] + 3];
    const sourcePoints = destination.map(affine);
    const triangles = delaunay(destination);
    // The triangles use every point and tile the convex hull exactly (no gaps, no overlaps).
    const area = (a: Point, b: Point, c: Point) => Math.abs((b[0] - a[0]) * (c[1] - a[1]) - (c[0] - a[0]) * (b[1] - a[1])) / 2;
    const hull = convexHull(destination);
    let hullArea = 0;
    for (let i = 1; i < hull.length - 1; i++) hullArea += area(hull[0], hull[i], hull[i + 1]);
    const tiled = triangles.reduce((sum, [i, j, k]) => sum + area(destination[i], destination[j], destination[k]), 0);
    expect(tiled).toBeCloseTo(hullArea, 6);
    expect(new Set(triangles.flat()).size).toBe(destination.length);
    const { data, covered } = warpPiecewiseAffine({ data: source, width, height }, sourcePoints, destination, width, height, triangles);
    let checked = 0;
    for (let y = 10; y < 54; y++) {
      for (let x = 12; x < 54; x++) {
        const p = y * width + x;
        if (!covered[p]) continue;
        const [sx, sy] = affine([x, y]);
        // The source is linear in x and y on the first two channels.
        expect(data[p * 3]).toBeCloseTo(sx * 4, 3);
        expect(data[p * 3 + 1]).toBeCloseTo(sy * 4, 3);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(1200);
  });

  it('clones seamlessly: a constant colour offset of the patch is cancelled, detail is kept', () => {
    const width = 80;
    const height = 80;
    const target = new Uint8Array(width * height * 3);
    for (let i = 0; i < width * height; i++) target.set([100 + (i % 7), 120, 90 + ((i / width) | 0) % 5], i * 3);
    const polygon: Point[] = [
      [20, 15],
      [60, 18],
      [66, 50],
      [40, 66],
      [14, 48],
    ];
    // Patch = target + 40 (a colour cast) + a detail: a dark dot in the middle.
    const patch = new Float32Array(width * height * 3);
    for (let i = 0; i < patch.length; i++) patch[i] = target[i] + 40;
    for (let y = 38; y < 42; y++) for (let x = 38; x < 42; x++) patch.set([20, 20, 20], (y * width + x) * 3);
    const result = Uint8Array.from(target);
    cloneSeamless(result, width, height, patch, polygon, 3);
    // Away from the dot the result is the target again (the cast is gone)…
    for (const [x, y] of [
      [25, 25],
      [55, 30],
      [35, 55],
      [60, 45],
    ]) {
      const p = (y * width + x) * 3;
      for (let c = 0; c < 3; c++) expect(Math.abs(result[p + c] - target[p + c])).toBeLessThanOrEqual(2);
    }
    // …and the dot is there, 40 darker than the patch's dot (the membrane's −40).
    const dot = (40 * width + 40) * 3;
    expect(result[dot]).toBe(0);
    expect(result[dot + 1]).toBe(0);
    // Outside the polygon nothing changed.
    expect(meanAbsDiff(result.subarray(0, width * 10 * 3), target.subarray(0, width * 10 * 3))).toBe(0);
  });
});

describe('colorize', () => {
  it('gives a greyscale photo colour with the same luminance structure', async () => {
    const grey = await sharp(path.join(path.dirname(require.resolve('@vladmandic/face-api/package.json')), 'demo', 'sample2.jpg'))
      .resize(384)
      .greyscale()
      .png()
      .toBuffer();
    const { data, width, height, channels } = await runImage('colorize', grey);
    const input = await rawRgb(grey);
    expect([width, height]).toEqual([input.width, input.height]);
    const labOut = rgbToLab(data, width, height, channels);
    const labIn = rgbToLab(input.data, width, height, 3);
    let chroma = 0;
    let inputChroma = 0;
    for (let i = 0; i < width * height; i++) {
      chroma += Math.hypot(labOut.a[i], labOut.b[i]);
      inputChroma += Math.hypot(labIn.a[i], labIn.b[i]);
    }
    expect(inputChroma / (width * height)).toBeLessThan(1);
    expect(chroma / (width * height)).toBeGreaterThan(8);
    expect(correlation(labOut.L, labIn.L)).toBeGreaterThan(0.98);
  });
});

describe('style-transfer', () => {
  const scene = svg(
    256,
    256,
    '<rect x="0" y="170" width="256" height="86" fill="#5a8f3c"/><circle cx="190" cy="70" r="36" fill="#f4c430"/>' +
      '<polygon points="30,170 90,80 150,170" fill="#7b5b3a"/><rect x="150" y="120" width="70" height="50" fill="#b22"/>' +
      '<text x="12" y="236" font-family="DejaVu Sans" font-size="28" font-weight="bold" fill="#fff">STYLE</text>',
    '#8ec5ff',
  );

  it('renders each style differently, keeping the structure', async () => {
    const input = await rawRgb(await png(scene));
    const edgesIn = edgeMap(input.data, 256, 256, 3);
    const outputs: Buffer[] = [];
    for (const style of STYLE_NAMES) {
      const { data, width, height, channels } = await runImage('style-transfer', await png(scene), { params: { style } });
      expect([width, height, channels]).toEqual([256, 256, 3]);
      expect(meanAbsDiff(data, input.data)).toBeGreaterThan(8);
      expect(correlation(edgeMap(data, 256, 256, 3), edgesIn)).toBeGreaterThan(0.4);
      outputs.push(data);
    }
    for (let i = 0; i < outputs.length; i++) for (let j = i + 1; j < outputs.length; j++) expect(meanAbsDiff(outputs[i], outputs[j])).toBeGreaterThan(5);
  });

  it('refuses an unknown style', async () => {
    await expectBadRequest(run('style-transfer', await png(scene), { params: { style: 'cubism' } }), /Unknown style "cubism"/);
  });
});
