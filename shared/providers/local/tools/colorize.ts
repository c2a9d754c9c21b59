/**
 * `colorize`: Welsh, Ashikhmin & Mueller, "Transferring Color to Greyscale Images" (SIGGRAPH 2002),
 * global version. Colour comes from a reference colour image: both images go to L*a*b*; the
 * reference's luminance is remapped linearly to the target's mean and deviation; about two hundred
 * jittered samples of the reference are kept with their luminance and the standard deviation of
 * luminance in their 5×5 neighbourhood; every target pixel takes the a*b* chroma of the sample whose
 * (luminance, neighbourhood deviation) is nearest (weighted 50/50, as in the paper), and keeps its
 * own luminance. The chroma planes are then smoothed a little (a Gaussian) to remove speckle.
 *
 * The default reference is a palette image generated here (deterministically): patches of sky,
 * cloud, light, mid and dark skin, foliage, grass, earth/wood, hair, stone and shadow, each
 * with the luminance range and texture (smooth or rough) typical of that material in photos — so
 * smooth light areas turn sky-blue or skin-toned, rough mid-tones green, rough darks brown. A
 * caller may pass its own reference as the second image. Results are plausible, not true, colours.
 */
import { seededRng } from '../../../random';
import { throwIfAborted } from '../../abort';
import type { CallOptions, ToolResult } from '../../types';
import { decodeImage, encodePng, imageResult, isOpaque } from './common';
import { fractalNoise, gaussianBlur, labToRgbInto, localStats, rgbToLab } from './pixels';
import type { LabImage } from './pixels';

/** A module-local binding: hot loops then skip a global lookup (an accessor under Jest's sandbox, ~50× slower). */
const Math = globalThis.Math;

interface ColorSample {
  L: number;
  std: number;
  a: number;
  b: number;
}

interface Swatch {
  name: string;
  /** Luminance range (L*), spread over the patch by a smooth gradient plus texture. */
  lMin: number;
  lMax: number;
  /** Texture amplitude in L* units and its grain (px); 0 = smooth. */
  texture: number;
  grain: number;
  a: number;
  b: number;
}

/** The materials of the generated reference palette image. */
export const REFERENCE_SWATCHES: readonly Swatch[] = [
  { name: 'sky', lMin: 78, lMax: 94, texture: 0.6, grain: 24, a: -5, b: -24 },
  { name: 'cloud', lMin: 93, lMax: 100, texture: 0.8, grain: 16, a: -1, b: -2 },
  { name: 'skin-light', lMin: 60, lMax: 82, texture: 1.5, grain: 12, a: 12, b: 18 },
  { name: 'skin-mid', lMin: 42, lMax: 62, texture: 1.5, grain: 12, a: 16, b: 23 },
  { name: 'skin-dark', lMin: 24, lMax: 44, texture: 1.5, grain: 12, a: 14, b: 19 },
  { name: 'foliage', lMin: 20, lMax: 55, texture: 12, grain: 3, a: -20, b: 28 },
  { name: 'grass', lMin: 45, lMax: 72, texture: 8, grain: 2, a: -18, b: 36 },
  { name: 'earth', lMin: 22, lMax: 46, texture: 6, grain: 4, a: 10, b: 22 },
  { name: 'hair', lMin: 6, lMax: 24, texture: 5, grain: 2, a: 6, b: 12 },
  { name: 'stone', lMin: 50, lMax: 78, texture: 4, grain: 5, a: 2, b: 8 },
  { name: 'shadow', lMin: 0, lMax: 12, texture: 0.8, grain: 16, a: 1, b: -3 },
];

const PATCH = 48;
const STAT_RADIUS = 2; // 5×5 neighbourhoods, as in the paper
const SAMPLES_PER_SIDE = 15; // 225 jittered samples from a user reference
const STD_WEIGHT = 2; // L* and deviation weighted 50/50 once deviation is put on a comparable scale
const L_BINS = 201; // 0.5 L* steps
const STD_BINS = 81; // 0.5 steps up to 40
const STD_STEP = 0.5;

/** Renders the reference palette image (L*a*b* planes): one PATCH×PATCH patch per swatch, in a row. */
export function generateReferencePalette(): LabImage {
  const width = PATCH * REFERENCE_SWATCHES.length;
  const height = PATCH;
  const L = new Float32Array(width * height);
  const A = new Float32Array(width * height);
  const B = new Float32Array(width * height);
  const rng = seededRng(20020701);
  REFERENCE_SWATCHES.forEach((swatch, index) => {
    const texture = fractalNoise(PATCH, PATCH, Math.max(1, swatch.grain), 3, rng);
    const hue = fractalNoise(PATCH, PATCH, 16, 2, rng);
    for (let y = 0; y < PATCH; y++) {
      for (let x = 0; x < PATCH; x++) {
        const p = y * PATCH + x;
        const gradient = (x + y) / (2 * (PATCH - 1));
        const base = swatch.lMin + (swatch.lMax - swatch.lMin) * gradient;
        const lum = Math.min(100, Math.max(0, base + (texture[p] - 0.5) * 2 * swatch.texture * 1.6));
        const q = y * width + index * PATCH + x;
        L[q] = lum;
        const chromaJitter = 0.85 + 0.3 * hue[p];
        A[q] = swatch.a * chromaJitter;
        B[q] = swatch.b * chromaJitter;
      }
    }
  });
  return { L, a: A, b: B, width, height };
}

function meanStd(values: Float32Array): { mean: number; std: number } {
  let s = 0;
  for (let i = 0; i < values.length; i++) s += values[i];
  const mean = s / values.length;
  let v = 0;
  for (let i = 0; i < values.length; i++) v += (values[i] - mean) ** 2;
  return { mean, std: Math.sqrt(v / values.length) };
}

/** Luminance remapping (paper §2): the reference's L* gets the target's mean and deviation. */
function remapLuminance(reference: LabImage, target: { mean: number; std: number }): Float32Array {
  const ref = meanStd(reference.L);
  const ratio = ref.std > 1e-3 ? target.std / ref.std : 1;
  const out = new Float32Array(reference.L.length);
  for (let i = 0; i < out.length; i++) out[i] = Math.min(100, Math.max(0, ratio * (reference.L[i] - ref.mean) + target.mean));
  return out;
}

/** Jittered-grid samples of a reference: per generated swatch patch (interior only), or over a user image. */
function sampleReference(reference: LabImage, remappedL: Float32Array, patches: number | null): ColorSample[] {
  const { width, height } = reference;
  const { std } = localStats(remappedL, width, height, STAT_RADIUS);
  const rng = seededRng(1234567);
  const samples: ColorSample[] = [];
  const take = (x: number, y: number) => {
    const i = y * width + x;
    samples.push({ L: remappedL[i], std: std[i], a: reference.a[i], b: reference.b[i] });
  };
  if (patches !== null) {
    const per = 5; // 25 samples per swatch
    const margin = STAT_RADIUS + 1;
    const span = (PATCH - 2 * margin) / per;
    for (let p = 0; p < patches; p++) {
      for (let gy = 0; gy < per; gy++) {
        for (let gx = 0; gx < per; gx++) {
          const x = p * PATCH + margin + Math.floor((gx + rng()) * span);
          const y = margin + Math.floor((gy + rng()) * span);
          take(Math.min(width - 1, x), Math.min(height - 1, y));
        }
      }
    }
  } else {
    const cellW = width / SAMPLES_PER_SIDE;
    const cellH = height / SAMPLES_PER_SIDE;
    for (let gy = 0; gy < SAMPLES_PER_SIDE; gy++) {
      for (let gx = 0; gx < SAMPLES_PER_SIDE; gx++) {
        take(Math.min(width - 1, Math.floor((gx + rng()) * cellW)), Math.min(height - 1, Math.floor((gy + rng()) * cellH)));
      }
    }
  }
  return samples;
}

/**
 * Best-match table over quantised (L*, deviation): the paper's per-pixel nearest-sample search,
 * precomputed so each pixel is one lookup whatever the image size.
 */
function matchTable(samples: ColorSample[]): { a: Float32Array; b: Float32Array } {
  const a = new Float32Array(L_BINS * STD_BINS);
  const b = new Float32Array(L_BINS * STD_BINS);
  for (let li = 0; li < L_BINS; li++) {
    const L = li * 0.5;
    for (let si = 0; si < STD_BINS; si++) {
      const s = si * STD_STEP;
      let best = 0;
      let bestDistance = Infinity;
      for (let k = 0; k < samples.length; k++) {
        const dl = samples[k].L - L;
        const ds = (samples[k].std - s) * STD_WEIGHT;
        const distance = 0.5 * dl * dl + 0.5 * ds * ds;
        if (distance < bestDistance) {
          bestDistance = distance;
          best = k;
        }
      }
      a[li * STD_BINS + si] = samples[best].a;
      b[li * STD_BINS + si] = samples[best].b;
    }
  }
  return { a, b };
}

let defaultReference: LabImage | null = null;

export async function runColorize(image: Buffer, reference: Buffer | null, options: CallOptions): Promise<ToolResult> {
  const rgba = await decodeImage(image, 'image', 4);
  const { width, height } = rgba;
  const target = rgbToLab(rgba.data, width, height, 4);
  throwIfAborted(options.signal);

  let ref: LabImage;
  let patches: number | null;
  if (reference) {
    const decoded = await decodeImage(reference, 'reference image', 3);
    ref = rgbToLab(decoded.data, decoded.width, decoded.height, 3);
    patches = null;
  } else {
    defaultReference ??= generateReferencePalette();
    ref = defaultReference;
    patches = REFERENCE_SWATCHES.length;
  }
  const remapped = remapLuminance(ref, meanStd(target.L));
  const table = matchTable(sampleReference(ref, remapped, patches));
  options.onProgress?.(30);

  const { std } = localStats(target.L, width, height, STAT_RADIUS);
  const n = width * height;
  let chromaA: Float32Array = new Float32Array(n);
  let chromaB: Float32Array = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const li = Math.min(L_BINS - 1, Math.max(0, Math.round(target.L[i] * 2)));
    const si = Math.min(STD_BINS - 1, Math.round(std[i] / STD_STEP));
    chromaA[i] = table.a[li * STD_BINS + si];
    chromaB[i] = table.b[li * STD_BINS + si];
  }
  throwIfAborted(options.signal);
  const sigma = Math.max(1.5, Math.max(width, height) / 300);
  chromaA = gaussianBlur(chromaA, width, height, sigma);
  chromaB = gaussianBlur(chromaB, width, height, sigma);
  options.onProgress?.(80);

  const opaque = isOpaque(rgba.data);
  const channels = opaque ? 3 : 4;
  const out = Buffer.alloc(n * channels);
  for (let i = 0; i < n; i++) {
    labToRgbInto(target.L[i], chromaA[i], chromaB[i], out, i * channels);
    if (channels === 4) out[i * 4 + 3] = rgba.data[i * 4 + 3];
  }
  const file = await encodePng({ data: out, width, height, channels });
  return imageResult(file, width, height);
}
