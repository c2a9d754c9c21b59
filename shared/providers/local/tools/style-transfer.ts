/**
 * `style-transfer`: non-neural stroke-based rendering after Hertzmann, "Painterly Rendering with
 * Curved Brush Strokes of Multiple Sizes" (SIGGRAPH 1998). For each brush radius, largest first,
 * the source is blurred (σ = fs·R) into a reference image; a grid (step fg·R) is laid over the
 * canvas and wherever the mean colour error between canvas and reference in a cell exceeds the
 * threshold T a curved stroke starts at the cell's worst pixel, takes the reference colour there and
 * follows the isophotes (normal to the luminance gradient, low-pass filtered by fc) for minLen..maxLen
 * steps of R until the reference departs from the stroke colour; strokes of a layer are painted in
 * random order as anti-aliased thick curves with opacity a. Each style name is one parameter set
 * (as the paper's "Impressionist", "Colorist wash", "Pointillist" styles are) plus a palette applied
 * to the reference and a finishing pass:
 *
 * - `oil-painting`: Impressionist strokes (R 8/4/2, long curves, opaque), bristle texture across each
 *   stroke and impasto relief lit from the top left (a height field built from the strokes).
 * - `watercolor`: Colorist-wash strokes (R 10/6/3, half-transparent, colour-jittered) of lightened
 *   colours on white paper,
 *   pigment darkening at stroke edges (edge darkening, as Curtis et al. 1997 observe) and paper grain.
 * - `sketch`: thin, long graphite-grey strokes (hatching) of lightened tones on white paper plus XDoG ink contours (Winnemöller,
 *   "XDoG: an eXtended difference-of-Gaussians compendium", 2012) and paper grain.
 * - `cartoon`: large opaque strokes over a reference quantised to 8 colours (k-means in L*a*b*),
 *   giving flat cel areas, plus bold XDoG ink lines.
 * - `pop-art`: Pointillist dabs (no length) over a four-tone posterised pop palette, Ben-Day halftone
 *   dots in the mid tones and black XDoG outlines.
 *
 * Images are painted at up to 1024 px on the longest side (brush radii scale with the size) and a
 * larger input is brought back to its own size with Lanczos.
 */
import sharp from 'sharp';
import { seededRng } from '../../../random';
import type { Rng } from '../../../random';
import { throwIfAborted } from '../../abort';
import { ProviderError } from '../../types';
import type { CallOptions, ToolResult } from '../../types';
import { clampByte, decodeImage, encodePng, imageResult, isOpaque, yieldToEventLoop } from './common';
import { fractalNoise, gaussianBlur, gradients, labToRgbInto, rgbToLab } from './pixels';

/** A module-local binding: hot loops then skip a global lookup (an accessor under Jest's sandbox, ~50× slower). */
const Math = globalThis.Math;

export const STYLE_NAMES = ['sketch', 'watercolor', 'oil-painting', 'cartoon', 'pop-art'] as const;
export type StyleName = (typeof STYLE_NAMES)[number];

const MAX_WORK_SIDE = 1024;
/** Brush radii are given for a 512 px image and scale with the longest side. */
const REFERENCE_SIDE = 512;

type Palette = 'natural' | 'wash' | 'pencil' | 'quantize' | 'pop';

export interface StyleParameters {
  /** Brush radii R, largest first (px at 512 px). */
  brushes: number[];
  /** T: mean colour error (RGB Euclidean, 0–441) above which a grid cell is repainted. */
  threshold: number;
  /** fc: curvature filter (1 = follow the isophote at once, 0 = straight). */
  curvature: number;
  /** fs: reference blur σ as a fraction of R. */
  blurFactor: number;
  /** a: stroke opacity. */
  opacity: number;
  /** fg: grid step as a fraction of R. */
  gridFactor: number;
  minLength: number;
  maxLength: number;
  /** Drawn stroke radius as a fraction of R (thin pencil lines < 1). */
  widthFactor: number;
  /** Per-stroke colour jitter (fraction, per RGB channel). */
  jitter: number;
  palette: Palette;
  /** Start from white paper (true) or from nothing (every pixel must be painted). */
  paper: boolean;
  /** XDoG ink line strength, 0 = none. */
  ink: number;
  /** XDoG scale σ (px at 512 px). */
  inkSigma: number;
  bristle: number;
  impasto: number;
  edgeDarkening: number;
  paperGrain: number;
  halftone: boolean;
}

const BASE: StyleParameters = {
  brushes: [8, 4, 2],
  threshold: 50,
  curvature: 1,
  blurFactor: 0.5,
  opacity: 1,
  gridFactor: 1,
  minLength: 4,
  maxLength: 16,
  widthFactor: 1,
  jitter: 0,
  palette: 'natural',
  paper: false,
  ink: 0,
  inkSigma: 1.2,
  bristle: 0,
  impasto: 0,
  edgeDarkening: 0,
  paperGrain: 0,
  halftone: false,
};

/** One parameter set per style name (see the header). */
export const STYLE_PARAMETERS: Readonly<Record<StyleName, StyleParameters>> = {
  'oil-painting': { ...BASE, brushes: [8, 4, 2], threshold: 40, minLength: 4, maxLength: 16, bristle: 0.22, impasto: 0.55 },
  watercolor: {
    ...BASE,
    brushes: [10, 6, 3],
    threshold: 45,
    opacity: 0.5,
    jitter: 0.25,
    palette: 'wash',
    minLength: 3,
    maxLength: 10,
    paper: true,
    edgeDarkening: 0.9,
    paperGrain: 0.07,
    blurFactor: 0.8,
  },
  sketch: {
    ...BASE,
    brushes: [6, 3],
    threshold: 40,
    opacity: 0.5,
    widthFactor: 0.3,
    gridFactor: 1,
    minLength: 6,
    maxLength: 16,
    curvature: 0.6,
    palette: 'pencil',
    paper: true,
    ink: 0.9,
    inkSigma: 1.0,
    paperGrain: 0.05,
  },
  cartoon: { ...BASE, brushes: [8, 4], threshold: 35, minLength: 2, maxLength: 12, palette: 'quantize', ink: 1, inkSigma: 1.6 },
  'pop-art': {
    ...BASE,
    brushes: [4, 2],
    threshold: 30,
    minLength: 0,
    maxLength: 0,
    gridFactor: 0.5,
    palette: 'pop',
    ink: 1,
    inkSigma: 1.4,
    halftone: true,
  },
};

export function parseStyle(value: unknown): StyleName {
  if (value === undefined || value === null || value === '') return 'sketch';
  const name = typeof value === 'string' ? value.trim().toLowerCase().replace(/[_\s]+/g, '-') : '';
  const match = STYLE_NAMES.find((style) => style === name || style.replace('-', '') === name.replace('-', ''));
  if (!match) throw new ProviderError('bad_request', `Unknown style "${String(value)}"; styles: ${STYLE_NAMES.join(', ')}`);
  return match;
}

/** Interleaved float RGB planes. */
interface Rgb {
  r: Float32Array;
  g: Float32Array;
  b: Float32Array;
  width: number;
  height: number;
}

function splitRgb(data: Uint8Array, width: number, height: number, channels: number): Rgb {
  const n = width * height;
  const r = new Float32Array(n);
  const g = new Float32Array(n);
  const b = new Float32Array(n);
  for (let i = 0, j = 0; i < n; i++, j += channels) {
    r[i] = data[j];
    g[i] = data[j + 1];
    b[i] = data[j + 2];
  }
  return { r, g, b, width, height };
}

function lumaOf(img: Rgb): Float32Array {
  const out = new Float32Array(img.r.length);
  for (let i = 0; i < out.length; i++) out[i] = 0.299 * img.r[i] + 0.587 * img.g[i] + 0.114 * img.b[i];
  return out;
}

// ---------------------------------------------------------------------------------------------
// Palettes applied to the source before painting
// ---------------------------------------------------------------------------------------------

/** Transparent washes: pigment over white paper never reaches the photo's deepest darks. */
function toWash(img: Rgb): Rgb {
  const lift = (v: number) => 255 - 0.8 * (255 - v);
  return { r: img.r.map(lift), g: img.g.map(lift), b: img.b.map(lift), width: img.width, height: img.height };
}

/** Grey graphite tones, lighter than the photo (a drawing leaves much of the paper white). */
function toPencil(img: Rgb): Rgb {
  const y = lumaOf(img);
  for (let i = 0; i < y.length; i++) y[i] = 255 - 0.6 * (255 - y[i]);
  return { r: y, g: Float32Array.from(y), b: Float32Array.from(y), width: img.width, height: img.height };
}

/** k-means (k colours) in L*a*b* on a subsample, then every pixel takes its centre's colour. */
function quantize(img: Rgb, k: number, rng: Rng): Rgb {
  const n = img.r.length;
  const bytes = new Uint8Array(n * 3);
  for (let i = 0; i < n; i++) {
    bytes[i * 3] = clampByte(img.r[i]);
    bytes[i * 3 + 1] = clampByte(img.g[i]);
    bytes[i * 3 + 2] = clampByte(img.b[i]);
  }
  const lab = rgbToLab(bytes, img.width, img.height, 3);
  const sampleCount = Math.min(n, 6000);
  const sample: number[] = [];
  for (let s = 0; s < sampleCount; s++) sample.push(Math.floor(rng() * n));
  // k-means++ seeding
  const centres: [number, number, number][] = [];
  const first = sample[0];
  centres.push([lab.L[first], lab.a[first], lab.b[first]]);
  const nearest = (i: number): { index: number; distance: number } => {
    let index = 0;
    let distance = Infinity;
    for (let c = 0; c < centres.length; c++) {
      const d = (lab.L[i] - centres[c][0]) ** 2 + (lab.a[i] - centres[c][1]) ** 2 + (lab.b[i] - centres[c][2]) ** 2;
      if (d < distance) {
        distance = d;
        index = c;
      }
    }
    return { index, distance };
  };
  while (centres.length < k) {
    const weights = sample.map((i) => nearest(i).distance);
    const total = weights.reduce((a, b) => a + b, 0);
    if (total === 0) break;
    let target = rng() * total;
    let pick = sample[sample.length - 1];
    for (let s = 0; s < sample.length; s++) {
      target -= weights[s];
      if (target <= 0) {
        pick = sample[s];
        break;
      }
    }
    centres.push([lab.L[pick], lab.a[pick], lab.b[pick]]);
  }
  for (let iteration = 0; iteration < 12; iteration++) {
    const sums = centres.map(() => [0, 0, 0, 0]);
    for (const i of sample) {
      const { index } = nearest(i);
      sums[index][0] += lab.L[i];
      sums[index][1] += lab.a[i];
      sums[index][2] += lab.b[i];
      sums[index][3]++;
    }
    sums.forEach((sum, c) => {
      if (sum[3] > 0) centres[c] = [sum[0] / sum[3], sum[1] / sum[3], sum[2] / sum[3]];
    });
  }
  const colours = centres.map(([L, a, b]) => {
    const rgb = new Uint8Array(3);
    // Cartoon colours are a little brighter and more saturated than the average they stand for.
    labToRgbInto(Math.min(100, L * 1.04 + 2), a * 1.25, b * 1.25, rgb, 0);
    return rgb;
  });
  const out: Rgb = { r: new Float32Array(n), g: new Float32Array(n), b: new Float32Array(n), width: img.width, height: img.height };
  for (let i = 0; i < n; i++) {
    const c = colours[nearest(i).index];
    out.r[i] = c[0];
    out.g[i] = c[1];
    out.b[i] = c[2];
  }
  return out;
}

/** Four luminance quartiles mapped to a bold pop palette (navy, red, yellow, pale cyan). */
const POP_COLOURS: readonly [number, number, number][] = [
  [24, 22, 74],
  [226, 32, 92],
  [255, 214, 0],
  [150, 232, 255],
];

function popPalette(img: Rgb): { image: Rgb; level: Uint8Array } {
  const y = gaussianBlur(lumaOf(img), img.width, img.height, 1);
  const sorted = Float32Array.from(y).sort();
  const q = [0.25, 0.5, 0.75].map((f) => sorted[Math.floor(f * (sorted.length - 1))]);
  const n = y.length;
  const out: Rgb = { r: new Float32Array(n), g: new Float32Array(n), b: new Float32Array(n), width: img.width, height: img.height };
  const level = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const l = y[i] < q[0] ? 0 : y[i] < q[1] ? 1 : y[i] < q[2] ? 2 : 3;
    level[i] = l;
    out.r[i] = POP_COLOURS[l][0];
    out.g[i] = POP_COLOURS[l][1];
    out.b[i] = POP_COLOURS[l][2];
  }
  return { image: out, level };
}

// ---------------------------------------------------------------------------------------------
// Hertzmann's painting loop
// ---------------------------------------------------------------------------------------------

interface Canvas extends Rgb {
  painted: Uint8Array;
  /** Impasto height field. */
  relief: Float32Array;
}

interface Stroke {
  points: number[];
  r: number;
  g: number;
  b: number;
  seed: number;
}

function makeStroke(
  x0: number,
  y0: number,
  radius: number,
  ref: Rgb,
  canvas: Canvas,
  grad: { gx: Float32Array; gy: Float32Array },
  params: StyleParameters,
  colour: [number, number, number],
): number[] {
  const { width, height } = ref;
  const points = [x0, y0];
  let x = x0;
  let y = y0;
  let lastDx = 0;
  let lastDy = 0;
  for (let i = 1; i <= params.maxLength; i++) {
    const xi = Math.min(width - 1, Math.max(0, Math.round(x)));
    const yi = Math.min(height - 1, Math.max(0, Math.round(y)));
    const p = yi * width + xi;
    if (i > params.minLength) {
      const refToCanvas = canvas.painted[p]
        ? Math.hypot(ref.r[p] - canvas.r[p], ref.g[p] - canvas.g[p], ref.b[p] - canvas.b[p])
        : Infinity;
      const refToStroke = Math.hypot(ref.r[p] - colour[0], ref.g[p] - colour[1], ref.b[p] - colour[2]);
      if (refToCanvas < refToStroke) break;
    }
    const gx = grad.gx[p];
    const gy = grad.gy[p];
    const magnitude = Math.hypot(gx, gy);
    if (magnitude < 1e-3) break;
    let dx = -gy / magnitude;
    let dy = gx / magnitude;
    if (lastDx * dx + lastDy * dy < 0) {
      dx = -dx;
      dy = -dy;
    }
    dx = params.curvature * dx + (1 - params.curvature) * lastDx;
    dy = params.curvature * dy + (1 - params.curvature) * lastDy;
    const norm = Math.hypot(dx, dy);
    if (norm < 1e-6) break;
    dx /= norm;
    dy /= norm;
    x += radius * dx;
    y += radius * dy;
    if (x < 0 || y < 0 || x > width - 1 || y > height - 1) break;
    lastDx = dx;
    lastDy = dy;
    points.push(x, y);
  }
  return points;
}

/** Per-stroke coverage scratch, reused across strokes. */
interface Scratch {
  coverage: Float32Array;
  bristle: Float32Array;
  touched: Int32Array;
  count: number;
}

function paintStroke(canvas: Canvas, stroke: Stroke, radius: number, params: StyleParameters, scratch: Scratch): void {
  const { width, height } = canvas;
  const { coverage, bristle } = scratch;
  scratch.count = 0;
  const pts = stroke.points;
  const pattern = new Float32Array(9);
  const patternRng = seededRng(stroke.seed);
  for (let i = 0; i < pattern.length; i++) pattern[i] = patternRng() * 2 - 1;
  const step = Math.max(0.5, radius * 0.5);
  const segments = Math.max(1, pts.length / 2 - 1);
  for (let s = 0; s < segments; s++) {
    const ax = pts[s * 2];
    const ay = pts[s * 2 + 1];
    const bx = pts.length > 2 ? pts[s * 2 + 2] : ax;
    const by = pts.length > 2 ? pts[s * 2 + 3] : ay;
    const length = Math.hypot(bx - ax, by - ay);
    const nx = length > 0 ? -(by - ay) / length : 0;
    const ny = length > 0 ? (bx - ax) / length : 1;
    const stamps = Math.max(1, Math.ceil(length / step));
    for (let t = 0; t <= stamps; t++) {
      const cx = ax + ((bx - ax) * t) / stamps;
      const cy = ay + ((by - ay) * t) / stamps;
      const x0 = Math.max(0, Math.floor(cx - radius - 1));
      const x1 = Math.min(width - 1, Math.ceil(cx + radius + 1));
      const y0 = Math.max(0, Math.floor(cy - radius - 1));
      const y1 = Math.min(height - 1, Math.ceil(cy + radius + 1));
      for (let y = y0; y <= y1; y++) {
        for (let x = x0; x <= x1; x++) {
          const d = Math.hypot(x - cx, y - cy);
          const c = Math.min(1, Math.max(0, radius + 0.5 - d));
          if (c <= 0) continue;
          const p = y * width + x;
          if (coverage[p] === 0) {
            if (scratch.count === scratch.touched.length) {
              const grown = new Int32Array(scratch.touched.length * 2);
              grown.set(scratch.touched);
              scratch.touched = grown;
            }
            scratch.touched[scratch.count++] = p;
          }
          if (c > coverage[p]) {
            coverage[p] = c;
            if (params.bristle > 0) {
              const across = ((x - cx) * nx + (y - cy) * ny) / Math.max(radius, 0.5);
              const slot = Math.min(pattern.length - 1, Math.max(0, Math.floor(((across + 1) / 2) * pattern.length)));
              bristle[p] = pattern[slot];
            }
          }
        }
      }
    }
  }
  for (let k = 0; k < scratch.count; k++) {
    const p = scratch.touched[k];
    const alpha = coverage[p] * params.opacity;
    const shade = 1 + params.bristle * bristle[p];
    if (canvas.painted[p]) {
      canvas.r[p] += (stroke.r * shade - canvas.r[p]) * alpha;
      canvas.g[p] += (stroke.g * shade - canvas.g[p]) * alpha;
      canvas.b[p] += (stroke.b * shade - canvas.b[p]) * alpha;
    } else {
      canvas.r[p] = stroke.r * shade;
      canvas.g[p] = stroke.g * shade;
      canvas.b[p] = stroke.b * shade;
      canvas.painted[p] = 1;
    }
    if (params.impasto > 0) {
      const h = coverage[p] * (0.6 + 0.4 * (bristle[p] * 0.5 + 0.5));
      canvas.relief[p] += (h - canvas.relief[p]) * alpha;
    }
    coverage[p] = 0;
    bristle[p] = 0;
  }
}

async function paintLayer(canvas: Canvas, ref: Rgb, radius: number, params: StyleParameters, rng: Rng, signal: AbortSignal): Promise<void> {
  const { width, height } = ref;
  const n = width * height;
  const difference = new Float32Array(n);
  for (let p = 0; p < n; p++) {
    difference[p] = canvas.painted[p] ? Math.hypot(ref.r[p] - canvas.r[p], ref.g[p] - canvas.g[p], ref.b[p] - canvas.b[p]) : 1e6;
  }
  const grad = gradients(gaussianBlur(lumaOf(ref), width, height, Math.max(1, radius / 2)), width, height);
  const grid = Math.max(1, Math.round(params.gridFactor * radius));
  const strokes: Stroke[] = [];
  for (let gy = 0; gy < height; gy += grid) {
    for (let gx = 0; gx < width; gx += grid) {
      let sum = 0;
      let count = 0;
      let worst = -1;
      let worstP = gy * width + gx;
      const yEnd = Math.min(height, gy + grid);
      const xEnd = Math.min(width, gx + grid);
      for (let y = gy; y < yEnd; y++) {
        for (let x = gx; x < xEnd; x++) {
          const d = difference[y * width + x];
          sum += d;
          count++;
          if (d > worst) {
            worst = d;
            worstP = y * width + x;
          }
        }
      }
      if (sum / count <= params.threshold) continue;
      const x0 = worstP % width;
      const y0 = Math.floor(worstP / width);
      const jitter = (v: number) => (params.jitter > 0 ? v * (1 + params.jitter * (rng() - 0.5)) : v);
      const colour: [number, number, number] = [jitter(ref.r[worstP]), jitter(ref.g[worstP]), jitter(ref.b[worstP])];
      const points = makeStroke(x0, y0, radius, ref, canvas, grad, params, colour);
      strokes.push({ points, r: colour[0], g: colour[1], b: colour[2], seed: Math.floor(rng() * 2 ** 31) });
    }
  }
  // Random order, as in the paper.
  for (let i = strokes.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [strokes[i], strokes[j]] = [strokes[j], strokes[i]];
  }
  const scratch: Scratch = { coverage: new Float32Array(n), bristle: new Float32Array(n), touched: new Int32Array(4096), count: 0 };
  const drawRadius = Math.max(0.6, radius * params.widthFactor);
  for (let i = 0; i < strokes.length; i++) {
    paintStroke(canvas, strokes[i], drawRadius, params, scratch);
    if (i % 4000 === 3999) {
      throwIfAborted(signal);
      await yieldToEventLoop();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Finishing passes
// ---------------------------------------------------------------------------------------------

/** XDoG line map in [0, 1] (1 = ink) from the luminance of the source. */
function xdogLines(lum: Float32Array, width: number, height: number, sigma: number): Float32Array {
  const k = 1.6;
  const tau = 0.985;
  const epsilon = -1.5;
  const phi = 0.6;
  const g1 = gaussianBlur(lum, width, height, sigma);
  const g2 = gaussianBlur(lum, width, height, sigma * k);
  const out = new Float32Array(lum.length);
  for (let i = 0; i < lum.length; i++) {
    const d = g1[i] - tau * g2[i];
    out[i] = d >= epsilon ? 0 : Math.min(1, 1 - (1 + Math.tanh(phi * (d - epsilon))));
  }
  return out;
}

function finish(canvas: Canvas, source: Rgb, params: StyleParameters, scale: number, levels: Uint8Array | null, rng: Rng): void {
  const { width, height } = canvas;
  const n = width * height;
  if (params.impasto > 0) {
    const h = gaussianBlur(canvas.relief, width, height, 0.8);
    const d = Math.max(1, Math.round(scale));
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const p = y * width + x;
        const a = h[Math.max(0, y - d) * width + Math.max(0, x - d)];
        const b = h[Math.min(height - 1, y + d) * width + Math.min(width - 1, x + d)];
        const light = 1 + params.impasto * (a - b);
        canvas.r[p] *= light;
        canvas.g[p] *= light;
        canvas.b[p] *= light;
      }
    }
  }
  if (params.edgeDarkening > 0) {
    const lum = lumaOf(canvas);
    const soft = gaussianBlur(lum, width, height, 1.5 * scale);
    for (let p = 0; p < n; p++) {
      // Pigment pools where a wash is darker than its neighbourhood (its edges).
      const pool = Math.max(0, soft[p] - lum[p]);
      const f = Math.max(0.6, 1 - (params.edgeDarkening * pool) / 255);
      canvas.r[p] *= f;
      canvas.g[p] *= f;
      canvas.b[p] *= f;
    }
  }
  if (params.halftone && levels) {
    const cell = Math.max(4, Math.round(6 * scale));
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const p = y * width + x;
        if (levels[p] !== 1 && levels[p] !== 2) continue;
        // Ben-Day dots on a 45° lattice: white dots on the red tone, red dots on the yellow one.
        const u = (x + y) / Math.SQRT2 / cell;
        const v = (x - y) / Math.SQRT2 / cell;
        const du = u - Math.round(u);
        const dv = v - Math.round(v);
        if (Math.hypot(du, dv) < 0.3) {
          const dot = levels[p] === 1 ? [255, 240, 245] : POP_COLOURS[1];
          canvas.r[p] = dot[0];
          canvas.g[p] = dot[1];
          canvas.b[p] = dot[2];
        }
      }
    }
  }
  if (params.ink > 0) {
    const lines = xdogLines(lumaOf(source), width, height, params.inkSigma * scale);
    for (let p = 0; p < n; p++) {
      const f = 1 - params.ink * lines[p];
      canvas.r[p] *= f;
      canvas.g[p] *= f;
      canvas.b[p] *= f;
    }
  }
  if (params.paperGrain > 0) {
    const grain = fractalNoise(width, height, Math.max(2, 3 * scale), 3, rng);
    for (let p = 0; p < n; p++) {
      const f = 1 - params.paperGrain * grain[p];
      canvas.r[p] *= f;
      canvas.g[p] *= f;
      canvas.b[p] *= f;
    }
  }
}

/** Paints `data` (interleaved RGB(A)) in a style; returns interleaved RGB. */
export async function paint(
  data: Uint8Array,
  width: number,
  height: number,
  channels: number,
  style: StyleName,
  signal: AbortSignal,
  onProgress?: (percent: number) => void,
): Promise<Buffer> {
  const params = STYLE_PARAMETERS[style];
  const scale = Math.max(width, height) / REFERENCE_SIDE;
  const rng = seededRng(0x5eed + STYLE_NAMES.indexOf(style));
  const original = splitRgb(data, width, height, channels);
  let source = original;
  let levels: Uint8Array | null = null;
  if (params.palette === 'pencil') source = toPencil(original);
  else if (params.palette === 'wash') source = toWash(original);
  else if (params.palette === 'quantize') source = quantize(original, 8, rng);
  else if (params.palette === 'pop') {
    const pop = popPalette(original);
    source = pop.image;
    levels = pop.level;
  }
  const n = width * height;
  const canvas: Canvas = {
    r: new Float32Array(n).fill(params.paper ? 252 : 0),
    g: new Float32Array(n).fill(params.paper ? 250 : 0),
    b: new Float32Array(n).fill(params.paper ? 244 : 0),
    painted: new Uint8Array(n).fill(params.paper ? 1 : 0),
    relief: new Float32Array(n),
    width,
    height,
  };
  const radii = params.brushes.map((r) => Math.max(1, r * Math.max(0.5, scale)));
  for (let layer = 0; layer < radii.length; layer++) {
    throwIfAborted(signal);
    const radius = radii[layer];
    const sigma = params.blurFactor * radius;
    const ref: Rgb = {
      r: gaussianBlur(source.r, width, height, sigma),
      g: gaussianBlur(source.g, width, height, sigma),
      b: gaussianBlur(source.b, width, height, sigma),
      width,
      height,
    };
    await paintLayer(canvas, ref, radius, params, rng, signal);
    onProgress?.(10 + Math.round(((layer + 1) / radii.length) * 75));
    await yieldToEventLoop();
  }
  // Pixels no stroke reached (rare: flat borders) take the coarsest reference.
  for (let p = 0; p < n; p++) {
    if (!canvas.painted[p]) {
      canvas.r[p] = source.r[p];
      canvas.g[p] = source.g[p];
      canvas.b[p] = source.b[p];
    }
  }
  finish(canvas, original, params, Math.max(0.5, scale), levels, rng);
  const out = Buffer.alloc(n * 3);
  for (let p = 0; p < n; p++) {
    out[p * 3] = clampByte(canvas.r[p]);
    out[p * 3 + 1] = clampByte(canvas.g[p]);
    out[p * 3 + 2] = clampByte(canvas.b[p]);
  }
  return out;
}

export async function runStyleTransfer(image: Buffer, params: Record<string, unknown>, options: CallOptions): Promise<ToolResult> {
  const style = parseStyle(params.style);
  const decoded = await decodeImage(image, 'image', 4);
  throwIfAborted(options.signal);
  const { width, height } = decoded;
  const factor = Math.min(1, MAX_WORK_SIDE / Math.max(width, height));
  let work = decoded;
  if (factor < 1) {
    const w = Math.max(1, Math.round(width * factor));
    const h = Math.max(1, Math.round(height * factor));
    const data = await sharp(decoded.data, { raw: { width, height, channels: 4 } }).resize(w, h, { kernel: 'lanczos3', fit: 'fill' }).raw().toBuffer();
    work = { data, width: w, height: h, channels: 4 };
  }
  let painted = await paint(work.data, work.width, work.height, 4, style, options.signal, options.onProgress);
  if (factor < 1) {
    painted = await sharp(painted, { raw: { width: work.width, height: work.height, channels: 3 } })
      .resize(width, height, { kernel: 'lanczos3', fit: 'fill' })
      .raw()
      .toBuffer();
  }
  throwIfAborted(options.signal);
  if (isOpaque(decoded.data)) return imageResult(await encodePng({ data: painted, width, height, channels: 3 }), width, height);
  const rgba = Buffer.alloc(width * height * 4);
  for (let i = 0; i < width * height; i++) {
    rgba[i * 4] = painted[i * 3];
    rgba[i * 4 + 1] = painted[i * 3 + 1];
    rgba[i * 4 + 2] = painted[i * 3 + 2];
    rgba[i * 4 + 3] = decoded.data[i * 4 + 3];
  }
  return imageResult(await encodePng({ data: rgba, width, height, channels: 4 }), width, height);
}
