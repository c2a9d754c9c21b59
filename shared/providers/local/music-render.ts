/**
 * Playing a Composition (music-compose.ts): as a Standard MIDI File rendered by Debian's
 * `fluidsynth` with a General-MIDI sound font (real instrument samples), or, without them, by a
 * small additive synthesizer here (harmonic tones with envelopes, a swept-sine kick, noise snare
 * and hats from a seeded PRNG). Either way the result is 44.1 kHz stereo, trimmed or padded to
 * exactly the requested number of samples, faded out at the end and peak-normalized: the same
 * composition always gives the same samples.
 */
import fs from 'node:fs';
import path from 'node:path';
import { runProgram } from '../../media/run-program';
import { hashString, seededRng } from '../../random';
import { withTempDir } from './audio-process';
import { decodeWav } from './dsp/wav';
import type { PcmAudio } from './dsp/wav';
import type { Composition, NoteEvent } from './music-compose';

// Math's functions as module constants: in hot loops a global lookup of `Math` is slow where the
// code runs in a vm context (a test runner's sandbox), a local binding is not.
const { abs, ceil, cos, exp, floor, max, min, PI, round, sin } = Math;

export const MUSIC_SAMPLE_RATE = 44_100;
const PPQ = 480;

// ---------------------------------------------------------------------------------------------
// Standard MIDI File (format 1)
// ---------------------------------------------------------------------------------------------

function varLen(value: number): number[] {
  let v = max(0, round(value));
  const bytes = [v & 0x7f];
  v >>= 7;
  while (v > 0) {
    bytes.unshift((v & 0x7f) | 0x80);
    v >>= 7;
  }
  return bytes;
}

function chunk(id: string, body: number[]): Buffer {
  const header = Buffer.alloc(8);
  header.write(id, 0, 'latin1');
  header.writeUInt32BE(body.length, 4);
  return Buffer.concat([header, Buffer.from(body)]);
}

interface TimedEvent {
  tick: number;
  /** Note-offs (0) sort before note-ons (1) at the same tick; setup events (−1) first. */
  order: number;
  bytes: number[];
}

function trackBytes(events: TimedEvent[]): number[] {
  events.sort((a, b) => a.tick - b.tick || a.order - b.order);
  const out: number[] = [];
  let last = 0;
  for (const event of events) {
    out.push(...varLen(event.tick - last), ...event.bytes);
    last = event.tick;
  }
  out.push(0x00, 0xff, 0x2f, 0x00);
  return out;
}

/** The composition as a format-1 SMF: a tempo track, then one track per part. */
export function compositionToMidi(composition: Composition): Buffer {
  const microsPerBeat = round(60_000_000 / composition.tempo);
  const tempoTrack = trackBytes([
    { tick: 0, order: -1, bytes: [0xff, 0x51, 0x03, (microsPerBeat >> 16) & 0xff, (microsPerBeat >> 8) & 0xff, microsPerBeat & 0xff] },
    { tick: 0, order: -1, bytes: [0xff, 0x58, 0x04, composition.beatsPerBar, 2, 24, 8] },
  ]);
  const tracks = [chunk('MTrk', tempoTrack)];
  for (const part of composition.parts) {
    const ch = part.channel & 0x0f;
    const events: TimedEvent[] = [
      { tick: 0, order: -1, bytes: [0xb0 | ch, 7, part.name === 'chords' ? 84 : 100] },
      { tick: 0, order: -1, bytes: [0xb0 | ch, 91, 40] },
    ];
    if (ch !== 9) events.push({ tick: 0, order: -1, bytes: [0xc0 | ch, part.program & 0x7f] });
    for (const note of composition.notes) {
      if (note.channel !== part.channel) continue;
      const on = round(note.startBeat * PPQ);
      const off = max(on + 1, round((note.startBeat + note.beats) * PPQ));
      events.push({ tick: on, order: 1, bytes: [0x90 | ch, note.pitch & 0x7f, max(1, min(127, note.velocity))] });
      events.push({ tick: off, order: 0, bytes: [0x80 | ch, note.pitch & 0x7f, 0] });
    }
    tracks.push(chunk('MTrk', trackBytes(events)));
  }
  const header = chunk('MThd', [0, 1, (tracks.length >> 8) & 0xff, tracks.length & 0xff, (PPQ >> 8) & 0xff, PPQ & 0xff]);
  return Buffer.concat([header, ...tracks]);
}

// ---------------------------------------------------------------------------------------------
// Finishing: exact length, fades, level
// ---------------------------------------------------------------------------------------------

/** Stereo audio cut or padded to `frames`, a 5 ms fade-in, a fade-out, peaks at −1 dBFS. */
export function finishMusic(audio: PcmAudio, frames: number): PcmAudio {
  const channels = 2;
  const out = new Float32Array(frames * channels);
  const srcFrames = floor(audio.samples.length / audio.channels);
  for (let f = 0; f < min(frames, srcFrames); f++) {
    for (let c = 0; c < channels; c++) out[f * 2 + c] = audio.samples[f * audio.channels + min(c, audio.channels - 1)];
  }
  const fadeIn = min(frames, round(0.005 * audio.sampleRate));
  const fadeOut = min(frames, round(min(2, (frames / audio.sampleRate) * 0.12) * audio.sampleRate));
  for (let f = 0; f < fadeIn; f++) for (let c = 0; c < channels; c++) out[f * 2 + c] *= f / fadeIn;
  for (let f = 0; f < fadeOut; f++) {
    const gain = (f / fadeOut) ** 2;
    const at = frames - 1 - f;
    for (let c = 0; c < channels; c++) out[at * 2 + c] *= gain;
  }
  let peak = 0;
  for (let i = 0; i < out.length; i++) peak = max(peak, abs(out[i]));
  if (peak > 1e-6) {
    const gain = 0.89 / peak;
    for (let i = 0; i < out.length; i++) out[i] *= gain;
  }
  return { sampleRate: audio.sampleRate, channels, samples: out };
}

// ---------------------------------------------------------------------------------------------
// fluidsynth
// ---------------------------------------------------------------------------------------------

/** Renders the composition with fluidsynth and a sound font (raw, before finishMusic). */
export async function renderWithFluidsynth(composition: Composition, fluidsynth: string, soundfont: string, signal: AbortSignal): Promise<PcmAudio> {
  return withTempDir('gensvc-music-', async (dir) => {
    const midiPath = path.join(dir, 'song.mid');
    const wavPath = path.join(dir, 'song.wav');
    await fs.promises.writeFile(midiPath, compositionToMidi(composition));
    const args = [
      '-n', '-i', '-q',
      '-a', 'file', '-F', wavPath, '-T', 'wav', '-O', 's16', '-r', String(MUSIC_SAMPLE_RATE),
      '-g', '0.5', '-R', '1', '-C', '0',
      '-o', 'synth.cpu-cores=1', '-o', 'synth.lock-memory=0',
      soundfont, midiPath,
    ];
    await runProgram('fluidsynth', fluidsynth, args, { signal, cwd: dir });
    return decodeWav(await fs.promises.readFile(wavPath));
  });
}

// ---------------------------------------------------------------------------------------------
// The built-in synthesizer
// ---------------------------------------------------------------------------------------------

interface Voice {
  harmonics: number[];
  attack: number;
  decay: number;
  sustain: number;
  release: number;
  gain: number;
  pan: number;
  vibrato: number;
}

/** Timbres by General-MIDI family: plucked/struck decay, sustained pads, reedy leads. */
function voiceFor(channel: number, program: number): Voice {
  const family = floor(program / 8);
  if (channel === 2) return { harmonics: [1, 0.5, 0.33, 0.25, 0.2, 0.16], attack: 0.005, decay: 0.25, sustain: 0.55, release: 0.08, gain: 0.34, pan: 0, vibrato: 0 };
  if (family === 0 || family === 1 || family === 3) {
    // piano, chromatic percussion, guitar: struck, decaying
    return { harmonics: [1, 0.45, 0.22, 0.12, 0.06], attack: 0.004, decay: 0.9, sustain: 0.18, release: 0.25, gain: channel === 0 ? 0.3 : 0.14, pan: channel === 0 ? 0 : -0.3, vibrato: 0 };
  }
  if (family === 6 || family === 11 || family === 12 || program === 52 || program === 53) {
    // strings ensembles, pads, choir: slow attack
    return { harmonics: [1, 0.3, 0.15, 0.08], attack: 0.12, decay: 0.3, sustain: 0.8, release: 0.4, gain: channel === 0 ? 0.26 : 0.11, pan: channel === 0 ? 0 : 0.3, vibrato: channel === 0 ? 0.004 : 0 };
  }
  // organ, strings, brass, reeds, pipes, synth leads
  return { harmonics: [1, 0.6, 0.4, 0.25, 0.15, 0.1], attack: 0.02, decay: 0.2, sustain: 0.7, release: 0.15, gain: channel === 0 ? 0.24 : 0.1, pan: channel === 0 ? 0 : 0.25, vibrato: channel === 0 ? 0.005 : 0 };
}

function addSample(out: Float32Array, frame: number, value: number, pan: number): void {
  if (frame < 0 || frame * 2 + 1 >= out.length) return;
  out[frame * 2] += value * cos(((pan + 1) * PI) / 4);
  out[frame * 2 + 1] += value * sin(((pan + 1) * PI) / 4);
}

function renderTone(out: Float32Array, note: NoteEvent, voice: Voice, beatSeconds: number, sampleRate: number): void {
  const start = round(note.startBeat * beatSeconds * sampleRate);
  const held = note.beats * beatSeconds;
  const length = round((held + voice.release) * sampleRate);
  const freq = 440 * 2 ** ((note.pitch - 69) / 12);
  const amp = voice.gain * (note.velocity / 127);
  const nyquist = sampleRate / 2;
  const harmonics = voice.harmonics.map((weight, i) => ({ weight, mult: i + 1 })).filter((h) => freq * h.mult < nyquist * 0.9);
  let phase = 0;
  for (let i = 0; i < length; i++) {
    const t = i / sampleRate;
    let env: number;
    if (t < voice.attack) env = t / voice.attack;
    else if (t < held) env = voice.sustain + (1 - voice.sustain) * exp(-(t - voice.attack) / voice.decay);
    else {
      const atRelease = voice.sustain + (1 - voice.sustain) * exp(-(held - voice.attack) / voice.decay);
      env = atRelease * exp(-(t - held) / (voice.release / 4));
    }
    const vib = voice.vibrato > 0 ? 1 + voice.vibrato * sin(2 * PI * 5.5 * t) * min(1, t / 0.3) : 1;
    phase += (2 * PI * freq * vib) / sampleRate;
    let value = 0;
    for (const h of harmonics) value += h.weight * sin(phase * h.mult);
    addSample(out, start + i, value * env * amp, voice.pan);
  }
}

function renderDrum(out: Float32Array, note: NoteEvent, beatSeconds: number, sampleRate: number, noise: () => number): void {
  const start = round(note.startBeat * beatSeconds * sampleRate);
  const amp = note.velocity / 127;
  const KICK = 36;
  const SNARE = 38;
  const RIM = 37;
  const CRASH = 49;
  if (note.pitch === KICK) {
    const length = round(0.35 * sampleRate);
    let phase = 0;
    for (let i = 0; i < length; i++) {
      const t = i / sampleRate;
      phase += (2 * PI * (48 + 110 * exp(-t / 0.04))) / sampleRate;
      addSample(out, start + i, 0.6 * amp * sin(phase) * exp(-t / 0.12), 0);
    }
  } else if (note.pitch === SNARE || note.pitch === RIM) {
    const length = round((note.pitch === RIM ? 0.05 : 0.2) * sampleRate);
    let phase = 0;
    for (let i = 0; i < length; i++) {
      const t = i / sampleRate;
      phase += (2 * PI * 185) / sampleRate;
      const body = sin(phase) * exp(-t / 0.05);
      const hiss = (noise() * 2 - 1) * exp(-t / (note.pitch === RIM ? 0.012 : 0.06));
      addSample(out, start + i, 0.28 * amp * (0.5 * body + hiss), 0.1);
    }
  } else {
    const decay = note.pitch === CRASH ? 0.6 : 0.03;
    const length = round(decay * 5 * sampleRate);
    let previous = 0;
    for (let i = 0; i < length; i++) {
      const t = i / sampleRate;
      const white = noise() * 2 - 1;
      const high = white - previous; // first difference: a crude high-pass
      previous = white;
      addSample(out, start + i, (note.pitch === CRASH ? 0.16 : 0.1) * amp * high * exp(-t / decay), 0.35);
    }
  }
}

/** Renders the composition with the built-in synthesizer (raw, before finishMusic). */
export function renderWithSynth(composition: Composition, sampleRate = MUSIC_SAMPLE_RATE): PcmAudio {
  const beatSeconds = 60 / composition.tempo;
  const frames = ceil((composition.durationSeconds + 1) * sampleRate);
  const out = new Float32Array(frames * 2);
  const noise = seededRng(hashString(`noise\u0000${composition.keyName}`, composition.tempo));
  const programs = new Map(composition.parts.map((part) => [part.channel, part.program]));
  for (const note of composition.notes) {
    if (note.channel === 9) renderDrum(out, note, beatSeconds, sampleRate, noise);
    else renderTone(out, note, voiceFor(note.channel, programs.get(note.channel) ?? 0), beatSeconds, sampleRate);
  }
  return { sampleRate, channels: 2, samples: out };
}
