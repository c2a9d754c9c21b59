/**
 * A tempo estimate from audio alone: a spectral-flux onset envelope (10 ms hops), its
 * autocorrelation over the lags of 50–200 BPM, and the strongest lag (with its double, weighted
 * gently towards 100 BPM; halved while the half lag is nearly as periodic) refined by parabolic interpolation.
 */
import { hannWindow, powerSpectrum } from './spectrum';

// Math's functions as module constants: in hot loops a global lookup of `Math` is slow where the
// code runs in a vm context (a test runner's sandbox), a local binding is not.
const { ceil, exp, floor, log1p, log2, max, min, round, sqrt } = Math;

/** The onset-strength envelope: half-wave rectified log-magnitude flux, one value per hop. */
export function onsetEnvelope(samples: Float32Array, sampleRate: number, hopSeconds = 0.01): Float64Array {
  const hop = round(sampleRate * hopSeconds);
  const fftSize = 1024;
  const window = hannWindow(fftSize);
  const frames = max(0, floor((samples.length - fftSize) / hop) + 1);
  const envelope = new Float64Array(frames);
  let previous: Float64Array | null = null;
  for (let f = 0; f < frames; f++) {
    const power = powerSpectrum(samples, f * hop, window, fftSize);
    const logMag = new Float64Array(power.length);
    for (let k = 0; k < power.length; k++) logMag[k] = log1p(1000 * sqrt(power[k]));
    if (previous) {
      let flux = 0;
      for (let k = 1; k < logMag.length; k++) flux += max(0, logMag[k] - previous[k]);
      envelope[f] = flux;
    }
    previous = logMag;
  }
  // Remove the slowly varying part (a 0.5 s moving average) and keep the rises.
  const half = round(0.25 / hopSeconds);
  const out = new Float64Array(frames);
  let sum = 0;
  let count = 0;
  let lo = 0;
  let hi = -1;
  for (let f = 0; f < frames; f++) {
    while (hi < min(frames - 1, f + half)) sum += envelope[++hi], count++;
    while (lo < f - half) sum -= envelope[lo++], count--;
    out[f] = max(0, envelope[f] - sum / max(1, count));
  }
  return out;
}

/** Estimated tempo (BPM) of mono audio, or null when there is no periodic onset pattern. */
export function estimateTempo(samples: Float32Array, sampleRate: number, minBpm = 50, maxBpm = 200): number | null {
  const hopSeconds = 0.01;
  const env = onsetEnvelope(samples, sampleRate, hopSeconds);
  const minLag = floor(60 / maxBpm / hopSeconds);
  const maxLag = ceil(60 / minBpm / hopSeconds);
  if (env.length < maxLag * 3) return null;
  const corr = new Float64Array(2 * maxLag + 4);
  for (let lag = minLag - 1; lag <= min(2 * maxLag + 2, env.length - 1); lag++) {
    let sum = 0;
    for (let i = 0; i + lag < env.length; i++) sum += env[i] * env[i + lag];
    corr[lag] = sum / (env.length - lag);
  }
  let best = -1;
  let bestScore = 0;
  for (let lag = minLag; lag <= maxLag; lag++) {
    if (corr[lag] < corr[lag - 1] || corr[lag] < corr[lag + 1]) continue;
    const bpm = 60 / (lag * hopSeconds);
    const prior = exp(-0.5 * (log2(bpm / 100) / 1) ** 2);
    // A pulse also recurs at twice its period: credit that (a comb of two teeth).
    const score = (corr[lag] + 0.5 * corr[2 * lag]) * prior;
    if (score > bestScore) {
      bestScore = score;
      best = lag;
    }
  }
  if (best < 0) return null;
  // A beat pattern also repeats every two beats: prefer the half lag while it is nearly as
  // periodic (the pulse is the shortest strong period in range).
  const typical = Array.from(corr.subarray(minLag, maxLag + 1)).sort((x, y) => x - y)[floor((maxLag - minLag) / 2)];
  for (;;) {
    const half = round(best / 2);
    if (half < minLag) break;
    let peak = half;
    for (let lag = max(minLag, half - 2); lag <= half + 2; lag++) if (corr[lag] > corr[peak]) peak = lag;
    if (corr[peak] < 0.5 * corr[best] || corr[peak] < 3 * typical) break;
    best = peak;
  }
  const a = corr[best - 1];
  const b = corr[best];
  const c = corr[best + 1];
  const denom = a - 2 * b + c;
  const offset = denom !== 0 ? max(-0.5, min(0.5, (0.5 * (a - c)) / denom)) : 0;
  return 60 / ((best + offset) * hopSeconds);
}
