/**
 * Small frame-level DSP for the local audio providers: a radix-2 FFT, power spectra, a mel filter
 * bank with MFCCs, spectral centroid/rolloff and an autocorrelation pitch estimate.
 */

// Math's functions as module constants: in hot loops a global lookup of `Math` is slow where the
// code runs in a vm context (a test runner's sandbox), a local binding is not.
const { ceil, cos, floor, log, log10, max, min, PI, sin, sqrt } = Math;

/** In-place iterative radix-2 complex FFT; `re.length` must be a power of two. */
export function fft(re: Float64Array, im: Float64Array): void {
  const n = re.length;
  for (let i = 1, j = 0; i < n; i++) {
    let bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      let t = re[i];
      re[i] = re[j];
      re[j] = t;
      t = im[i];
      im[i] = im[j];
      im[j] = t;
    }
  }
  for (let size = 2; size <= n; size <<= 1) {
    const half = size >> 1;
    const step = (-2 * PI) / size;
    for (let start = 0; start < n; start += size) {
      for (let k = 0; k < half; k++) {
        const angle = step * k;
        const wr = cos(angle);
        const wi = sin(angle);
        const a = start + k;
        const b = a + half;
        const tr = re[b] * wr - im[b] * wi;
        const ti = re[b] * wi + im[b] * wr;
        re[b] = re[a] - tr;
        im[b] = im[a] - ti;
        re[a] += tr;
        im[a] += ti;
      }
    }
  }
}

export function nextPowerOfTwo(n: number): number {
  let p = 1;
  while (p < n) p <<= 1;
  return p;
}

export function hannWindow(length: number): Float64Array {
  const w = new Float64Array(length);
  for (let i = 0; i < length; i++) w[i] = 0.5 - 0.5 * cos((2 * PI * i) / (length - 1));
  return w;
}

/**
 * The power spectrum (bins 0..fftSize/2) of `samples[start, start + window.length)`, windowed,
 * zero-padded to `fftSize`. Samples past the end count as silence.
 */
export function powerSpectrum(samples: Float32Array, start: number, window: Float64Array, fftSize: number): Float64Array {
  const re = new Float64Array(fftSize);
  const im = new Float64Array(fftSize);
  for (let i = 0; i < window.length; i++) {
    const at = start + i;
    re[i] = at < samples.length ? samples[at] * window[i] : 0;
  }
  fft(re, im);
  const bins = fftSize / 2 + 1;
  const power = new Float64Array(bins);
  for (let k = 0; k < bins; k++) power[k] = re[k] * re[k] + im[k] * im[k];
  return power;
}

function hzToMel(hz: number): number {
  return 2595 * log10(1 + hz / 700);
}

function melToHz(mel: number): number {
  return 700 * (10 ** (mel / 2595) - 1);
}

/** Triangular mel filters over the bins of an fftSize-point spectrum. */
export function melFilterBank(filters: number, fftSize: number, sampleRate: number, lowHz: number, highHz: number): Float64Array[] {
  const bins = fftSize / 2 + 1;
  const low = hzToMel(lowHz);
  const high = hzToMel(min(highHz, sampleRate / 2));
  const edges: number[] = [];
  for (let i = 0; i < filters + 2; i++) edges.push((melToHz(low + ((high - low) * i) / (filters + 1)) * fftSize) / sampleRate);
  const bank: Float64Array[] = [];
  for (let f = 0; f < filters; f++) {
    const row = new Float64Array(bins);
    const [a, b, c] = [edges[f], edges[f + 1], edges[f + 2]];
    for (let k = 0; k < bins; k++) {
      if (k > a && k <= b) row[k] = (k - a) / (b - a);
      else if (k > b && k < c) row[k] = (c - k) / (c - b);
    }
    bank.push(row);
  }
  return bank;
}

/** DCT-II of the log filter-bank energies: `count` cepstral coefficients (c0 first). */
export function mfccFromPower(power: Float64Array, bank: Float64Array[], count: number): Float64Array {
  const logs = new Float64Array(bank.length);
  for (let f = 0; f < bank.length; f++) {
    let sum = 0;
    const row = bank[f];
    for (let k = 0; k < row.length; k++) if (row[k] !== 0) sum += row[k] * power[k];
    logs[f] = log(sum + 1e-10);
  }
  const out = new Float64Array(count);
  const n = bank.length;
  for (let c = 0; c < count; c++) {
    let sum = 0;
    for (let f = 0; f < n; f++) sum += logs[f] * cos((PI * c * (f + 0.5)) / n);
    out[c] = sum * sqrt(2 / n);
  }
  return out;
}

/** Spectral centroid (Hz) and the frequency below which `rolloff` of the power lies. */
export function spectralShape(power: Float64Array, fftSize: number, sampleRate: number, rolloff = 0.85): { centroid: number; rolloff: number } {
  let total = 0;
  let weighted = 0;
  for (let k = 1; k < power.length; k++) {
    total += power[k];
    weighted += power[k] * ((k * sampleRate) / fftSize);
  }
  if (total <= 0) return { centroid: 0, rolloff: 0 };
  let cumulative = 0;
  let k = 1;
  for (; k < power.length; k++) {
    cumulative += power[k];
    if (cumulative >= rolloff * total) break;
  }
  return { centroid: weighted / total, rolloff: (k * sampleRate) / fftSize };
}

/**
 * The fundamental frequency of `samples[start, start + length)` by normalized autocorrelation
 * between `minHz` and `maxHz`, or null when the frame is not clearly periodic (unvoiced).
 */
export function pitchAutocorrelation(
  samples: Float32Array,
  start: number,
  length: number,
  sampleRate: number,
  minHz = 60,
  maxHz = 400,
  threshold = 0.45,
): number | null {
  const end = min(samples.length, start + length);
  const n = end - start;
  const minLag = floor(sampleRate / maxHz);
  const maxLag = min(ceil(sampleRate / minHz), n - 1);
  if (n <= 0 || maxLag <= minLag + 2) return null;
  let mean = 0;
  for (let i = start; i < end; i++) mean += samples[i];
  mean /= n;
  const x = new Float64Array(n);
  for (let i = 0; i < n; i++) x[i] = samples[start + i] - mean;
  let energy = 0;
  for (let i = 0; i < n; i++) energy += x[i] * x[i];
  if (energy <= 1e-8) return null;
  // Prefix sums of squares give each lag's two energies in O(1).
  const squares = new Float64Array(n + 1);
  for (let i = 0; i < n; i++) squares[i + 1] = squares[i] + x[i] * x[i];
  const corr = new Float64Array(maxLag + 2);
  for (let lag = minLag - 1; lag <= maxLag + 1 && lag < n; lag++) {
    let sum = 0;
    for (let i = 0; i + lag < n; i++) sum += x[i] * x[i + lag];
    const e1 = squares[n - lag];
    const e2 = squares[n] - squares[lag];
    corr[lag] = e1 > 0 && e2 > 0 ? sum / sqrt(e1 * e2) : 0;
  }
  let best = -1;
  let bestLag = -1;
  for (let lag = minLag; lag <= maxLag; lag++) {
    if (corr[lag] > best && corr[lag] >= corr[lag - 1] && corr[lag] >= corr[lag + 1]) {
      best = corr[lag];
      bestLag = lag;
    }
  }
  if (bestLag < 0 || best < threshold) return null;
  // Prefer the shortest lag whose peak is nearly as strong (avoids octave-down errors).
  for (let lag = minLag; lag < bestLag; lag++) {
    if (corr[lag] >= 0.9 * best && corr[lag] >= corr[lag - 1] && corr[lag] >= corr[lag + 1]) {
      bestLag = lag;
      break;
    }
  }
  const a = corr[bestLag - 1];
  const b = corr[bestLag];
  const c = corr[bestLag + 1];
  const denom = a - 2 * b + c;
  const offset = denom !== 0 ? (0.5 * (a - c)) / denom : 0;
  return sampleRate / (bestLag + max(-0.5, min(0.5, offset)));
}
