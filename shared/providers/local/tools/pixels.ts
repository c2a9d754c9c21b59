/**
 * Pixel maths shared by the classic tools: sRGB ↔ CIE L*a*b* (D65), separable Gaussian blur,
 * neighbourhood mean/standard deviation from integral images, gradients and value noise (drawn from
 * a seeded RNG of shared/random.ts). Plain typed arrays, no dependencies.
 */
import type { Rng } from '../../../random';

/** A module-local binding: hot loops then skip a global lookup (an accessor under Jest's sandbox, ~50× slower). */
const Math = globalThis.Math;

const SRGB_TO_LINEAR = new Float32Array(256);
for (let i = 0; i < 256; i++) {
  const c = i / 255;
  SRGB_TO_LINEAR[i] = c <= 0.04045 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
}

const XN = 0.95047;
const YN = 1.0;
const ZN = 1.08883;
const EPS = 216 / 24389;
const KAPPA = 24389 / 27;

function fLab(t: number): number {
  return t > EPS ? Math.cbrt(t) : (KAPPA * t + 16) / 116;
}

function fLabInverse(t: number): number {
  const t3 = t * t * t;
  return t3 > EPS ? t3 : (116 * t - 16) / KAPPA;
}

function linearToSrgbByte(c: number): number {
  const v = c <= 0.0031308 ? 12.92 * c : 1.055 * Math.pow(c, 1 / 2.4) - 0.055;
  const b = Math.round(v * 255);
  return b < 0 ? 0 : b > 255 ? 255 : b;
}

export interface LabImage {
  L: Float32Array;
  a: Float32Array;
  b: Float32Array;
  width: number;
  height: number;
}

/** Interleaved 8-bit RGB(A) → L*a*b* planes (alpha ignored). */
export function rgbToLab(data: Uint8Array, width: number, height: number, channels: number): LabImage {
  const n = width * height;
  const L = new Float32Array(n);
  const A = new Float32Array(n);
  const B = new Float32Array(n);
  for (let i = 0, j = 0; i < n; i++, j += channels) {
    const r = SRGB_TO_LINEAR[data[j]];
    const g = SRGB_TO_LINEAR[data[j + 1]];
    const bl = SRGB_TO_LINEAR[data[j + 2]];
    const x = (0.4124564 * r + 0.3575761 * g + 0.1804375 * bl) / XN;
    const y = (0.2126729 * r + 0.7151522 * g + 0.072175 * bl) / YN;
    const z = (0.0193339 * r + 0.119192 * g + 0.9503041 * bl) / ZN;
    const fx = fLab(x);
    const fy = fLab(y);
    const fz = fLab(z);
    L[i] = 116 * fy - 16;
    A[i] = 500 * (fx - fy);
    B[i] = 200 * (fy - fz);
  }
  return { L, a: A, b: B, width, height };
}

/** One L*a*b* colour → 8-bit sRGB (clipped), written at `out[offset..offset+2]`. */
export function labToRgbInto(L: number, a: number, b: number, out: Uint8Array, offset: number): void {
  const fy = (L + 16) / 116;
  const fx = fy + a / 500;
  const fz = fy - b / 200;
  const x = fLabInverse(fx) * XN;
  const y = (L > KAPPA * EPS ? fy * fy * fy : L / KAPPA) * YN;
  const z = fLabInverse(fz) * ZN;
  const r = 3.2404542 * x - 1.5371385 * y - 0.4985314 * z;
  const g = -0.969266 * x + 1.8760108 * y + 0.041556 * z;
  const bl = 0.0556434 * x - 0.2040259 * y + 1.0572252 * z;
  out[offset] = linearToSrgbByte(r);
  out[offset + 1] = linearToSrgbByte(g);
  out[offset + 2] = linearToSrgbByte(bl);
}

/** L*a*b* planes → interleaved 8-bit RGB. */
export function labToRgb(lab: LabImage): Buffer {
  const n = lab.width * lab.height;
  const out = Buffer.alloc(n * 3);
  for (let i = 0; i < n; i++) labToRgbInto(lab.L[i], lab.a[i], lab.b[i], out, i * 3);
  return out;
}

/** Rec. 601 luma of interleaved RGB(A) bytes, 0–255. */
export function luma(data: Uint8Array, width: number, height: number, channels: number): Float32Array {
  const n = width * height;
  const out = new Float32Array(n);
  for (let i = 0, j = 0; i < n; i++, j += channels) out[i] = 0.299 * data[j] + 0.587 * data[j + 1] + 0.114 * data[j + 2];
  return out;
}

function gaussianKernel(sigma: number): Float32Array {
  const radius = Math.max(1, Math.ceil(sigma * 3));
  const kernel = new Float32Array(2 * radius + 1);
  let sum = 0;
  for (let i = -radius; i <= radius; i++) {
    const v = Math.exp(-(i * i) / (2 * sigma * sigma));
    kernel[i + radius] = v;
    sum += v;
  }
  for (let i = 0; i < kernel.length; i++) kernel[i] /= sum;
  return kernel;
}

/** Separable Gaussian blur of one plane (edges clamped). */
export function gaussianBlur(src: Float32Array, width: number, height: number, sigma: number): Float32Array {
  if (sigma <= 0.05) return Float32Array.from(src);
  const kernel = gaussianKernel(sigma);
  const radius = (kernel.length - 1) / 2;
  const tmp = new Float32Array(src.length);
  const out = new Float32Array(src.length);
  for (let y = 0; y < height; y++) {
    const row = y * width;
    for (let x = 0; x < width; x++) {
      let acc = 0;
      for (let k = -radius; k <= radius; k++) {
        let xx = x + k;
        if (xx < 0) xx = 0;
        else if (xx >= width) xx = width - 1;
        acc += src[row + xx] * kernel[k + radius];
      }
      tmp[row + x] = acc;
    }
  }
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let acc = 0;
      for (let k = -radius; k <= radius; k++) {
        let yy = y + k;
        if (yy < 0) yy = 0;
        else if (yy >= height) yy = height - 1;
        acc += tmp[yy * width + x] * kernel[k + radius];
      }
      out[y * width + x] = acc;
    }
  }
  return out;
}

/** Mean and standard deviation over the (2r+1)² neighbourhood of every pixel (clipped at the borders). */
export function localStats(src: Float32Array, width: number, height: number, radius: number): { mean: Float32Array; std: Float32Array } {
  const w1 = width + 1;
  const sum = new Float64Array(w1 * (height + 1));
  const sq = new Float64Array(w1 * (height + 1));
  for (let y = 0; y < height; y++) {
    let rowSum = 0;
    let rowSq = 0;
    for (let x = 0; x < width; x++) {
      const v = src[y * width + x];
      rowSum += v;
      rowSq += v * v;
      sum[(y + 1) * w1 + x + 1] = sum[y * w1 + x + 1] + rowSum;
      sq[(y + 1) * w1 + x + 1] = sq[y * w1 + x + 1] + rowSq;
    }
  }
  const mean = new Float32Array(width * height);
  const std = new Float32Array(width * height);
  for (let y = 0; y < height; y++) {
    const y0 = Math.max(0, y - radius);
    const y1 = Math.min(height, y + radius + 1);
    for (let x = 0; x < width; x++) {
      const x0 = Math.max(0, x - radius);
      const x1 = Math.min(width, x + radius + 1);
      const count = (y1 - y0) * (x1 - x0);
      const s = sum[y1 * w1 + x1] - sum[y0 * w1 + x1] - sum[y1 * w1 + x0] + sum[y0 * w1 + x0];
      const s2 = sq[y1 * w1 + x1] - sq[y0 * w1 + x1] - sq[y1 * w1 + x0] + sq[y0 * w1 + x0];
      const m = s / count;
      mean[y * width + x] = m;
      std[y * width + x] = Math.sqrt(Math.max(0, s2 / count - m * m));
    }
  }
  return { mean, std };
}

/** Central-difference gradients of one plane. */
export function gradients(src: Float32Array, width: number, height: number): { gx: Float32Array; gy: Float32Array } {
  const gx = new Float32Array(src.length);
  const gy = new Float32Array(src.length);
  for (let y = 0; y < height; y++) {
    const up = (y > 0 ? y - 1 : y) * width;
    const down = (y < height - 1 ? y + 1 : y) * width;
    for (let x = 0; x < width; x++) {
      const left = x > 0 ? x - 1 : x;
      const right = x < width - 1 ? x + 1 : x;
      gx[y * width + x] = (src[y * width + right] - src[y * width + left]) / 2;
      gy[y * width + x] = (src[down + x] - src[up + x]) / 2;
    }
  }
  return { gx, gy };
}

/** Smooth value noise in [0, 1): bilinear interpolation of a random lattice with `cell` px spacing. */
export function valueNoise(width: number, height: number, cell: number, rng: Rng): Float32Array {
  const gw = Math.ceil(width / cell) + 2;
  const gh = Math.ceil(height / cell) + 2;
  const lattice = new Float32Array(gw * gh);
  for (let i = 0; i < lattice.length; i++) lattice[i] = rng();
  const out = new Float32Array(width * height);
  for (let y = 0; y < height; y++) {
    const gy = y / cell;
    const y0 = Math.floor(gy);
    let ty = gy - y0;
    ty = ty * ty * (3 - 2 * ty);
    for (let x = 0; x < width; x++) {
      const gx = x / cell;
      const x0 = Math.floor(gx);
      let tx = gx - x0;
      tx = tx * tx * (3 - 2 * tx);
      const a = lattice[y0 * gw + x0];
      const b = lattice[y0 * gw + x0 + 1];
      const c = lattice[(y0 + 1) * gw + x0];
      const d = lattice[(y0 + 1) * gw + x0 + 1];
      out[y * width + x] = (a * (1 - tx) + b * tx) * (1 - ty) + (c * (1 - tx) + d * tx) * ty;
    }
  }
  return out;
}

/** Several octaves of value noise, normalised to [0, 1]. */
export function fractalNoise(width: number, height: number, baseCell: number, octaves: number, rng: Rng): Float32Array {
  const out = new Float32Array(width * height);
  let amplitude = 1;
  let total = 0;
  let cell = baseCell;
  for (let o = 0; o < octaves; o++) {
    const layer = valueNoise(width, height, Math.max(1, cell), rng);
    for (let i = 0; i < out.length; i++) out[i] += layer[i] * amplitude;
    total += amplitude;
    amplitude *= 0.5;
    cell /= 2;
  }
  for (let i = 0; i < out.length; i++) out[i] /= total;
  return out;
}

/** Pearson correlation of two equally long series. */
export function correlation(x: ArrayLike<number>, y: ArrayLike<number>): number {
  const n = x.length;
  let sx = 0;
  let sy = 0;
  for (let i = 0; i < n; i++) {
    sx += x[i];
    sy += y[i];
  }
  const mx = sx / n;
  const my = sy / n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    const dx = x[i] - mx;
    const dy = y[i] - my;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  return sxx === 0 || syy === 0 ? 0 : sxy / Math.sqrt(sxx * syy);
}
