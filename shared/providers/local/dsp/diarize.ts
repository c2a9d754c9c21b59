/**
 * Speaker diarization without a model, for the local recognizer: an energy voice-activity detector
 * cuts the audio at pauses, each segment gets a voice profile (MFCC means, median pitch by
 * autocorrelation, spectral centroid and rolloff), and the profiles are clustered bottom-up
 * (average linkage); the number of speakers (1–4) is the cut with the best silhouette among those
 * whose clusters are farther apart than one voice drifts from itself.
 *
 * Distances are measured in units of the file's own frame-to-frame spread for the MFCCs and in
 * semitones for the pitch, so they mean the same on any recording level.
 */
import { hannWindow, melFilterBank, mfccFromPower, nextPowerOfTwo, pitchAutocorrelation, powerSpectrum, spectralShape } from './spectrum';

// Math's functions as module constants: in hot loops a global lookup of `Math` is slow where the
// code runs in a vm context (a test runner's sandbox), a local binding is not.
const { abs, ceil, floor, log10, log2, max, min, round, sqrt } = Math;

export interface Segment {
  /** Sample offsets, `end` exclusive. */
  start: number;
  end: number;
}

export interface VadOptions {
  /** A quieter stretch at least this long splits two segments. */
  minPauseSeconds: number;
  /** Shorter bursts (clicks, breaths) are dropped. */
  minSpeechSeconds: number;
  /** Kept around each segment. */
  padSeconds: number;
  /** Longer segments are split at their quietest point. */
  maxSegmentSeconds: number;
}

export const DEFAULT_VAD: VadOptions = { minPauseSeconds: 0.3, minSpeechSeconds: 0.12, padSeconds: 0.08, maxSegmentSeconds: 12 };

const HOP_SECONDS = 0.01;
const WINDOW_SECONDS = 0.025;

/** Frame energies in dBFS, one per 10 ms. */
export function frameEnergiesDb(samples: Float32Array, sampleRate: number): Float64Array {
  const hop = round(sampleRate * HOP_SECONDS);
  const win = round(sampleRate * WINDOW_SECONDS);
  const frames = max(0, ceil(samples.length / hop));
  const out = new Float64Array(frames);
  for (let f = 0; f < frames; f++) {
    const start = f * hop;
    const end = min(samples.length, start + win);
    let sum = 0;
    for (let i = start; i < end; i++) sum += samples[i] * samples[i];
    out[f] = 10 * log10(sum / max(1, end - start) + 1e-10);
  }
  return out;
}

function percentile(values: ArrayLike<number>, p: number): number {
  const sorted = Array.from(values).sort((a, b) => a - b);
  if (sorted.length === 0) return 0;
  return sorted[min(sorted.length - 1, max(0, round(p * (sorted.length - 1))))];
}

/** The energy threshold between speech and pause for these frames. */
export function speechThresholdDb(energies: Float64Array): number {
  const noiseFloor = percentile(energies, 0.1);
  const peak = percentile(energies, 0.95);
  return max(noiseFloor + 12, peak - 32, -62);
}

/** Speech segments separated by pauses (see VadOptions). */
export function detectSpeechSegments(samples: Float32Array, sampleRate: number, options: Partial<VadOptions> = {}): Segment[] {
  const opts = { ...DEFAULT_VAD, ...options };
  const energies = frameEnergiesDb(samples, sampleRate);
  if (energies.length === 0) return [];
  const threshold = speechThresholdDb(energies);
  const hop = round(sampleRate * HOP_SECONDS);
  const minPause = round(opts.minPauseSeconds / HOP_SECONDS);
  const minSpeech = round(opts.minSpeechSeconds / HOP_SECONDS);
  const pad = round(opts.padSeconds / HOP_SECONDS);
  const maxFrames = round(opts.maxSegmentSeconds / HOP_SECONDS);

  // Runs of speech frames, pauses shorter than minPause bridged.
  const runs: Array<[number, number]> = [];
  let runStart = -1;
  let lastSpeech = -1;
  for (let f = 0; f < energies.length; f++) {
    if (energies[f] < threshold) continue;
    if (runStart >= 0 && f - lastSpeech - 1 >= minPause) {
      runs.push([runStart, lastSpeech + 1]);
      runStart = -1;
    }
    if (runStart < 0) runStart = f;
    lastSpeech = f;
  }
  if (runStart >= 0) runs.push([runStart, lastSpeech + 1]);

  const kept = runs.filter(([a, b]) => b - a >= minSpeech);
  const split: Array<[number, number]> = [];
  const splitLong = (a: number, b: number): void => {
    if (b - a <= maxFrames) {
      split.push([a, b]);
      return;
    }
    // The quietest 100 ms in the middle half.
    const from = a + floor((b - a) / 4);
    const to = b - floor((b - a) / 4);
    let best = from;
    let bestEnergy = Infinity;
    for (let f = from; f < to; f++) {
      let e = 0;
      for (let g = f - 5; g <= f + 5; g++) e += energies[max(a, min(b - 1, g))];
      if (e < bestEnergy) {
        bestEnergy = e;
        best = f;
      }
    }
    splitLong(a, best);
    splitLong(best, b);
  };
  for (const [a, b] of kept) splitLong(a, b);

  const total = samples.length;
  return split.map(([a, b], i) => {
    // Padding never reaches into the neighbour's half of the pause.
    const prevEnd = i > 0 ? split[i - 1][1] : -Infinity;
    const nextStart = i + 1 < split.length ? split[i + 1][0] : Infinity;
    const startFrame = max(a - pad, ceil((prevEnd + a) / 2), 0);
    const endFrame = min(b + pad, floor((b + nextStart) / 2));
    return { start: max(0, startFrame * hop), end: min(total, endFrame * hop) };
  });
}

// ---------------------------------------------------------------------------------------------
// Voice profiles
// ---------------------------------------------------------------------------------------------

export const MFCC_COUNT = 13;

/**
 * A segment's voice. The distance uses the MFCC means, the pitch and the centroid (they separate
 * voices best in our measurements); the spreads, voicing and rolloff are kept for inspection.
 */
export interface VoiceProfile {
  seconds: number;
  /** MFCC c1..c12 means over the segment's louder frames. */
  mfccMean: number[];
  /** Their standard deviations. */
  mfccStd: number[];
  /** Median F0 of the voiced frames (Hz), or null if hardly any frame was voiced. */
  pitchHz: number | null;
  voicedRatio: number;
  centroidHz: number;
  rolloffHz: number;
}

interface FrameFeatures {
  mfcc: Float64Array[];
  centroid: number[];
  rolloff: number[];
}

/** Voice profiles of the segments, plus the file-wide per-coefficient MFCC spread. */
export function voiceProfiles(samples: Float32Array, sampleRate: number, segments: Segment[]): { profiles: VoiceProfile[]; mfccSpread: number[] } {
  const hop = round(sampleRate * HOP_SECONDS);
  const win = round(sampleRate * WINDOW_SECONDS);
  const fftSize = nextPowerOfTwo(win);
  const window = hannWindow(win);
  const bank = melFilterBank(26, fftSize, sampleRate, 100, 7000);
  const energies = frameEnergiesDb(samples, sampleRate);
  const threshold = speechThresholdDb(energies);
  const pitchWin = round(sampleRate * 0.04);

  const perSegment: FrameFeatures[] = [];
  const profiles: VoiceProfile[] = [];
  for (const segment of segments) {
    const frames: FrameFeatures = { mfcc: [], centroid: [], rolloff: [] };
    const pitches: number[] = [];
    let pitchFrames = 0;
    const firstFrame = floor(segment.start / hop);
    const lastFrame = max(firstFrame, floor((segment.end - win) / hop));
    for (let f = firstFrame; f <= lastFrame; f++) {
      if ((energies[f] ?? -100) < threshold) continue;
      const power = powerSpectrum(samples, f * hop, window, fftSize);
      frames.mfcc.push(mfccFromPower(power, bank, MFCC_COUNT));
      const shape = spectralShape(power, fftSize, sampleRate);
      frames.centroid.push(shape.centroid);
      frames.rolloff.push(shape.rolloff);
      if ((f - firstFrame) % 2 === 0) {
        pitchFrames++;
        const f0 = pitchAutocorrelation(samples, f * hop, pitchWin, sampleRate);
        if (f0 !== null) pitches.push(f0);
      }
    }
    perSegment.push(frames);
    const mean: number[] = [];
    const std: number[] = [];
    for (let c = 1; c < MFCC_COUNT; c++) {
      const values = frames.mfcc.map((m) => m[c]);
      const mu = values.reduce((a, b) => a + b, 0) / max(1, values.length);
      const variance = values.reduce((a, b) => a + (b - mu) * (b - mu), 0) / max(1, values.length);
      mean.push(mu);
      std.push(sqrt(variance));
    }
    profiles.push({
      seconds: (segment.end - segment.start) / sampleRate,
      mfccMean: mean,
      mfccStd: std,
      pitchHz: pitches.length >= 3 && pitches.length >= 0.1 * pitchFrames ? percentile(pitches, 0.5) : null,
      voicedRatio: pitchFrames > 0 ? pitches.length / pitchFrames : 0,
      centroidHz: frames.centroid.length ? percentile(frames.centroid, 0.5) : 0,
      rolloffHz: frames.rolloff.length ? percentile(frames.rolloff, 0.5) : 0,
    });
  }

  // The file-wide spread of each coefficient over all speech frames: the unit of MFCC distance.
  const mfccSpread: number[] = [];
  for (let c = 1; c < MFCC_COUNT; c++) {
    let n = 0;
    let sum = 0;
    let sumSq = 0;
    for (const frames of perSegment) {
      for (const m of frames.mfcc) {
        n++;
        sum += m[c];
        sumSq += m[c] * m[c];
      }
    }
    const mu = n > 0 ? sum / n : 0;
    mfccSpread.push(sqrt(max(1e-6, n > 0 ? sumSq / n - mu * mu : 1)));
  }
  return { profiles, mfccSpread };
}

/**
 * The units of the three parts of the voice distance: a quarter of the file's frame spread for the
 * mean MFCCs, 3 semitones of median pitch, half an octave of spectral centroid. With them, segments
 * of one voice come out 0.5–0.8 apart and segments of two different Flite voices 1.6–2.1 apart,
 * hence the merge distance of 1.2 below.
 */
const MFCC_SPREAD_UNIT = 0.25;
const PITCH_SEMITONES_UNIT = 3;
const CENTROID_OCTAVE_UNIT = 0.5;

/** How far apart two voice profiles are (0 = identical; see the units above). */
export function voiceDistance(a: VoiceProfile, b: VoiceProfile, mfccSpread: number[]): number {
  let mfcc = 0;
  for (let i = 0; i < mfccSpread.length; i++) {
    const d = (a.mfccMean[i] - b.mfccMean[i]) / mfccSpread[i];
    mfcc += d * d;
  }
  mfcc = sqrt(mfcc / mfccSpread.length) / MFCC_SPREAD_UNIT;
  const pitch = a.pitchHz !== null && b.pitchHz !== null ? abs(12 * log2(a.pitchHz / b.pitchHz)) / PITCH_SEMITONES_UNIT : 0;
  const centroid = a.centroidHz > 0 && b.centroidHz > 0 ? abs(log2(a.centroidHz / b.centroidHz)) / CENTROID_OCTAVE_UNIT : 0;
  return sqrt((mfcc * mfcc + pitch * pitch + centroid * centroid) / 3);
}

// ---------------------------------------------------------------------------------------------
// Clustering
// ---------------------------------------------------------------------------------------------

/** Mean silhouette of a labelling under a distance matrix (0 when there is one cluster). */
export function silhouette(distances: number[][], labels: number[]): number {
  const clusters = new Set(labels);
  if (clusters.size < 2) return 0;
  let total = 0;
  for (let i = 0; i < labels.length; i++) {
    const sums = new Map<number, { sum: number; count: number }>();
    for (let j = 0; j < labels.length; j++) {
      if (i === j) continue;
      const entry = sums.get(labels[j]) ?? { sum: 0, count: 0 };
      entry.sum += distances[i][j];
      entry.count++;
      sums.set(labels[j], entry);
    }
    const own = sums.get(labels[i]);
    if (!own || own.count === 0) continue; // a singleton scores 0
    const a = own.sum / own.count;
    let b = Infinity;
    for (const [label, entry] of sums) if (label !== labels[i]) b = min(b, entry.sum / entry.count);
    total += (b - a) / max(a, b, 1e-9);
  }
  return total / labels.length;
}

export interface ClusterOptions {
  maxSpeakers: number;
  /** Clusters closer than this (average linkage) are one voice. */
  mergeDistance: number;
  /** A cut into k ≥ 2 clusters needs at least this silhouette. */
  minSilhouette: number;
}

export const DEFAULT_CLUSTERING: ClusterOptions = { maxSpeakers: 4, mergeDistance: 1.2, minSilhouette: 0.2 };

/**
 * Average-linkage agglomerative clustering of n items under `distances`; returns labels 0..k-1
 * (numbered by first appearance) and the chosen k with its silhouette.
 */
export function clusterByDistance(distances: number[][], options: Partial<ClusterOptions> = {}): { labels: number[]; k: number; silhouette: number } {
  const opts = { ...DEFAULT_CLUSTERING, ...options };
  const n = distances.length;
  if (n === 0) return { labels: [], k: 0, silhouette: 0 };
  let clusters: number[][] = distances.map((_, i) => [i]);
  const linkage = (a: number[], b: number[]): number => {
    let sum = 0;
    for (const i of a) for (const j of b) sum += distances[i][j];
    return sum / (a.length * b.length);
  };
  // cuts[k] = the clustering with k clusters; heights[k] = the linkage at which k became k-1.
  const cuts = new Map<number, number[][]>();
  const heights = new Map<number, number>();
  cuts.set(n, clusters.map((c) => [...c]));
  while (clusters.length > 1) {
    let best = Infinity;
    let bi = 0;
    let bj = 1;
    for (let i = 0; i < clusters.length; i++) {
      for (let j = i + 1; j < clusters.length; j++) {
        const d = linkage(clusters[i], clusters[j]);
        if (d < best) {
          best = d;
          bi = i;
          bj = j;
        }
      }
    }
    heights.set(clusters.length, best);
    clusters = clusters.filter((_, index) => index !== bi && index !== bj).concat([[...clusters[bi], ...clusters[bj]]]);
    cuts.set(clusters.length, clusters.map((c) => [...c]));
  }

  const labelsOf = (cut: number[][]): number[] => {
    const raw = new Array<number>(n).fill(0);
    cut.forEach((members, label) => members.forEach((i) => (raw[i] = label)));
    const order = new Map<number, number>();
    return raw.map((label) => {
      if (!order.has(label)) order.set(label, order.size);
      return order.get(label) ?? 0;
    });
  };

  let chosen = 1;
  let chosenScore = 0;
  for (let k = 2; k <= min(opts.maxSpeakers, n); k++) {
    const height = heights.get(k) ?? 0;
    if (height < opts.mergeDistance) continue;
    const cut = cuts.get(k);
    if (!cut) continue;
    const score = silhouette(distances, labelsOf(cut));
    if (score >= opts.minSilhouette && score > chosenScore) {
      chosen = k;
      chosenScore = score;
    }
  }
  return { labels: labelsOf(cuts.get(chosen) ?? [distances.map((_, i) => i)]), k: chosen, silhouette: chosenScore };
}

export interface DiarizedSegment extends Segment {
  /** 1-based, numbered by first appearance. */
  speaker: number;
}

/** Segments shorter than this are labelled by their nearest cluster instead of clustered. */
const MIN_CLUSTER_SECONDS = 0.6;

/** Labels each segment with a speaker (see the module comment). */
export function diarizeSegments(samples: Float32Array, sampleRate: number, segments: Segment[], options: Partial<ClusterOptions> = {}): DiarizedSegment[] {
  if (segments.length === 0) return [];
  const { profiles, mfccSpread } = voiceProfiles(samples, sampleRate, segments);
  const n = segments.length;
  const all = profiles.map((a) => profiles.map((b) => voiceDistance(a, b, mfccSpread)));
  let core = profiles.map((p, i) => (p.seconds >= MIN_CLUSTER_SECONDS ? i : -1)).filter((i) => i >= 0);
  if (core.length < 2) core = profiles.map((_, i) => i);
  const coreDistances = core.map((i) => core.map((j) => all[i][j]));
  const { labels } = clusterByDistance(coreDistances, options);
  const label = new Array<number>(n).fill(-1);
  core.forEach((index, c) => (label[index] = labels[c]));
  const clusterCount = max(...labels) + 1;
  for (let i = 0; i < n; i++) {
    if (label[i] >= 0) continue;
    let best = 0;
    let bestDistance = Infinity;
    for (let c = 0; c < clusterCount; c++) {
      const members = core.filter((_, m) => labels[m] === c);
      const d = members.reduce((sum, m) => sum + all[i][m], 0) / members.length;
      if (d < bestDistance) {
        bestDistance = d;
        best = c;
      }
    }
    label[i] = best;
  }
  const order = new Map<number, number>();
  return segments.map((segment, i) => {
    if (!order.has(label[i])) order.set(label[i], order.size + 1);
    return { ...segment, speaker: order.get(label[i]) ?? 1 };
  });
}
