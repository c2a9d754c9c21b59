/**
 * The composition behind the built-in music "model", a pure function of the prompt, the seed and
 * the duration (no audio here; music-render.ts plays it):
 *
 * - mood words set the valence (major or minor) and the energy (tempo, rhythm density, drums):
 *   "happy upbeat energetic" → major, fast; "sad calm dark melancholic" → minor, slow;
 * - instrument and genre words pick General-MIDI programs (piano, guitar, strings, synth, ...);
 * - a seeded PRNG (mulberry32 over a hash of prompt and seed) picks the key, a chord progression,
 *   a two-bar melodic motif that is repeated and varied (A A' B A), a bass line and a drum pattern;
 * - lyrics (when not instrumental) give the melody its phrasing (one note per syllable) and a
 *   vocal-like lead ("voice oohs"); no words are sung.
 *
 * The last bar is the tonic chord held to the end; the renderer trims to the exact duration.
 */
import { hashString, seededRng } from '../../random';
import type { Rng } from '../../random';

export type Mode = 'major' | 'minor';

export interface Mood {
  /** < 0 sad/dark … > 0 happy/bright. */
  valence: number;
  /** −3 (still) … +3 (driving). */
  energy: number;
  /** The prompt words that counted. */
  words: string[];
}

export interface NoteEvent {
  /** MIDI channel 0–15; 9 is General-MIDI percussion. */
  channel: number;
  pitch: number;
  velocity: number;
  startBeat: number;
  beats: number;
}

export interface Part {
  channel: number;
  /** General-MIDI program 0–127 (ignored on channel 9). */
  program: number;
  name: string;
}

export interface Composition {
  tempo: number;
  /** Pitch class of the tonic, 0 = C. */
  key: number;
  keyName: string;
  mode: Mode;
  beatsPerBar: number;
  /** Scale degrees (0 = tonic) of the repeating progression, one chord a bar. */
  progression: number[];
  mood: Mood;
  parts: Part[];
  drums: boolean;
  bars: number;
  durationSeconds: number;
  notes: NoteEvent[];
}

export interface CompositionRequest {
  prompt: string;
  seed: number;
  durationSeconds: number;
  lyrics?: string | null;
  instrumental?: boolean;
}

// ---------------------------------------------------------------------------------------------
// Mood
// ---------------------------------------------------------------------------------------------

/** word → [valence, energy] */
const MOOD_WORDS: Record<string, [number, number]> = {
  happy: [2, 1], joyful: [2, 1], cheerful: [2, 1], joy: [2, 1], upbeat: [1, 2], energetic: [1, 2], energy: [0, 2],
  exciting: [1, 2], excited: [1, 2], fast: [0, 2], quick: [0, 1], dance: [1, 2], dancing: [1, 2], party: [1, 2],
  bright: [1, 1], fun: [1, 1], funny: [1, 1], playful: [1, 1], triumphant: [2, 1], uplifting: [2, 1], hopeful: [1, 0],
  epic: [0, 2], heroic: [1, 2], summer: [1, 1], sunny: [1, 1], lively: [1, 2], rock: [0, 2], pop: [1, 1], disco: [1, 2],
  festive: [2, 1], celebration: [2, 2], love: [1, 0], romantic: [1, -1], sweet: [1, -1], victory: [2, 1],
  sad: [-2, -1], sadness: [-2, -1], melancholic: [-2, -1], melancholy: [-2, -1], dark: [-2, 0], gloomy: [-2, -1],
  calm: [-1, -2], slow: [0, -2], somber: [-2, -1], sombre: [-2, -1], lonely: [-2, -1], tragic: [-2, 0], grief: [-2, -1],
  mysterious: [-1, -1], eerie: [-2, -1], spooky: [-2, 0], horror: [-2, 0], tense: [-1, 1], angry: [-2, 2],
  aggressive: [-1, 2], night: [-1, -1], rain: [-1, -1], rainy: [-1, -1], relaxing: [0, -2], relaxed: [0, -2],
  peaceful: [0, -2], gentle: [0, -1], soft: [0, -1], ambient: [0, -2], lullaby: [0, -2], sleep: [0, -2], chill: [0, -1],
  dreamy: [0, -1], nostalgic: [-1, -1], winter: [-1, -1], cold: [-1, -1], tired: [-1, -2], quiet: [0, -2], serene: [0, -2],
};

function promptWords(prompt: string): string[] {
  return prompt.toLowerCase().split(/[^a-z]+/).filter((w) => w.length > 1);
}

/** The mood of a prompt: summed valence and energy of its mood words (energy clamped to ±3). */
export function analyzeMood(prompt: string): Mood {
  let valence = 0;
  let energy = 0;
  const words: string[] = [];
  for (const word of promptWords(prompt)) {
    const entry = MOOD_WORDS[word];
    if (!entry) continue;
    words.push(word);
    valence += entry[0];
    energy += entry[1];
  }
  return { valence, energy: Math.max(-3, Math.min(3, energy)), words };
}

/** Tempo (BPM) for an energy: 58 BPM at −3 … 142 BPM at +3, before the seeded nudge. */
export function baseTempo(energy: number): number {
  return 100 + 14 * energy;
}

// ---------------------------------------------------------------------------------------------
// Instruments
// ---------------------------------------------------------------------------------------------

interface Palette {
  lead: number[];
  chords: number[];
  bass: number[];
}

/** General-MIDI programs (0-based) for instrument and genre words. */
const INSTRUMENT_WORDS: Record<string, Partial<Palette>> = {
  piano: { lead: [0, 1], chords: [0] },
  keys: { lead: [4, 0], chords: [4] },
  guitar: { lead: [24, 25], chords: [24, 25] },
  acoustic: { lead: [24, 25], chords: [25] },
  strings: { chords: [48, 49], lead: [40, 48] },
  orchestral: { chords: [48, 49], lead: [40, 73], bass: [43] },
  cinematic: { chords: [48, 49], lead: [60, 40], bass: [43] },
  violin: { lead: [40] },
  cello: { lead: [42], bass: [42] },
  flute: { lead: [73] },
  synth: { lead: [80, 81], chords: [88, 89], bass: [38, 39] },
  electronic: { lead: [80, 81], chords: [88, 90], bass: [38, 39] },
  techno: { lead: [81], chords: [90], bass: [38] },
  organ: { lead: [16, 17], chords: [16, 19] },
  jazz: { lead: [65, 66], chords: [0, 4], bass: [32] },
  saxophone: { lead: [65, 66] },
  sax: { lead: [65, 66] },
  trumpet: { lead: [56] },
  brass: { lead: [56, 61], chords: [61] },
  bell: { lead: [14, 10] },
  bells: { lead: [14, 10] },
  music: {},
  harp: { lead: [46], chords: [46] },
  choir: { chords: [52], lead: [52] },
  rock: { lead: [29, 30], chords: [29], bass: [33, 34] },
  folk: { lead: [24, 73], chords: [25], bass: [32] },
  ambient: { lead: [88, 89], chords: [89, 91, 95], bass: [38] },
  lofi: { lead: [4, 0], chords: [4], bass: [32] },
};

const DEFAULT_PALETTE: Palette = { lead: [0, 73, 40, 24, 11], chords: [48, 0, 89, 4], bass: [32, 33, 38] };
const VOCAL_LEAD = 53; // Voice Oohs

function pick<T>(rng: Rng, items: readonly T[]): T {
  return items[Math.min(items.length - 1, Math.floor(rng() * items.length))];
}

function choosePalette(prompt: string, rng: Rng): { lead: number; chords: number; bass: number } {
  const merged: Palette = { lead: [], chords: [], bass: [] };
  for (const word of promptWords(prompt)) {
    const entry = INSTRUMENT_WORDS[word];
    if (!entry) continue;
    merged.lead.push(...(entry.lead ?? []));
    merged.chords.push(...(entry.chords ?? []));
    merged.bass.push(...(entry.bass ?? []));
  }
  return {
    lead: pick(rng, merged.lead.length ? merged.lead : DEFAULT_PALETTE.lead),
    chords: pick(rng, merged.chords.length ? merged.chords : DEFAULT_PALETTE.chords),
    bass: pick(rng, merged.bass.length ? merged.bass : DEFAULT_PALETTE.bass),
  };
}

// ---------------------------------------------------------------------------------------------
// Harmony
// ---------------------------------------------------------------------------------------------

const KEY_NAMES = ['C', 'C#', 'D', 'Eb', 'E', 'F', 'F#', 'G', 'Ab', 'A', 'Bb', 'B'];
const SCALES: Record<Mode, number[]> = { major: [0, 2, 4, 5, 7, 9, 11], minor: [0, 2, 3, 5, 7, 8, 10] };
const PROGRESSIONS: Record<Mode, number[][]> = {
  major: [[0, 4, 5, 3], [0, 5, 3, 4], [0, 3, 4, 3], [0, 3, 0, 4], [5, 3, 0, 4], [0, 2, 3, 4]],
  minor: [[0, 5, 2, 6], [0, 3, 4, 0], [0, 6, 5, 6], [0, 3, 6, 2], [0, 5, 3, 4], [0, 2, 3, 6]],
};

/** MIDI pitch of scale degree `degree` (any integer, wraps octaves) above `tonic`. */
function degreePitch(tonic: number, mode: Mode, degree: number): number {
  const scale = SCALES[mode];
  const octave = Math.floor(degree / 7);
  const index = ((degree % 7) + 7) % 7;
  return tonic + 12 * octave + scale[index];
}

/** The triad on a scale degree, as degrees. */
function triad(root: number): number[] {
  return [root, root + 2, root + 4];
}

// ---------------------------------------------------------------------------------------------
// Composition
// ---------------------------------------------------------------------------------------------

function countSyllables(line: string): number {
  return promptWords(line).reduce((sum, word) => sum + Math.max(1, (word.match(/[aeiouy]+/g) ?? []).length - (word.endsWith('e') && word.length > 3 ? 1 : 0)), 0);
}

/** Note lengths (beats) for one two-bar phrase at this energy, or fitted to a syllable count. */
function phraseRhythm(rng: Rng, energy: number, beatsPerBar: number, syllables: number | null): number[] {
  const total = beatsPerBar * 2;
  if (syllables !== null && syllables > 0) {
    const count = Math.max(2, Math.min(16, syllables));
    const unit = total / count >= 1 ? 1 : 0.5;
    const rhythm: number[] = [];
    let left = total;
    for (let i = 0; i < count && left > 0; i++) {
      const length = i === count - 1 ? left : Math.min(left, unit * (rng() < 0.25 && left > unit * (count - i) ? 2 : 1));
      rhythm.push(length);
      left -= length;
    }
    if (left > 0) rhythm[rhythm.length - 1] += left;
    return rhythm;
  }
  const choices = energy >= 2 ? [0.5, 0.5, 1, 0.5, 1, 1.5] : energy >= 0 ? [1, 0.5, 1, 2, 0.5, 1] : energy >= -1 ? [1, 2, 1, 2, 1.5] : [2, 2, 1, 3, 4];
  const rhythm: number[] = [];
  let left = total;
  while (left > 0) {
    const length = Math.min(left, pick(rng, choices));
    rhythm.push(length);
    left -= length;
  }
  return rhythm;
}

/** Melody degrees for a rhythm: chord tones on strong beats, steps in between, a seeded walk. */
function phraseMelody(rng: Rng, rhythm: number[], chordsOfPhrase: number[], beatsPerBar: number, startDegree: number): number[] {
  const degrees: number[] = [];
  let current = startDegree;
  let beat = 0;
  for (let i = 0; i < rhythm.length; i++) {
    const bar = Math.min(chordsOfPhrase.length - 1, Math.floor(beat / beatsPerBar));
    const chord = triad(chordsOfPhrase[bar]);
    const strong = beat % 1 === 0 && (beat % beatsPerBar === 0 || rhythm[i] >= 1);
    if (strong) {
      // The chord tone nearest the current degree (in any octave), sometimes a leap.
      const options: number[] = [];
      for (const tone of chord) for (const octave of [-7, 0, 7]) options.push(tone + octave + 7);
      options.sort((a, b) => Math.abs(a - current) - Math.abs(b - current));
      current = rng() < 0.8 ? options[0] : options[Math.min(options.length - 1, 1 + Math.floor(rng() * 3))];
    } else {
      current += pick(rng, [-1, 1, -1, 1, 2, -2, 0]);
    }
    current = Math.max(3, Math.min(15, current));
    degrees.push(current);
    beat += rhythm[i];
  }
  return degrees;
}

export function composeMusic(request: CompositionRequest): Composition {
  const rng = seededRng(hashString(`music\u0000${request.prompt}`, request.seed >>> 0));
  const mood = analyzeMood(request.prompt);
  const mode: Mode = mood.valence > 0 ? 'major' : mood.valence < 0 ? 'minor' : rng() < 0.6 ? 'major' : 'minor';
  const tempo = Math.round(Math.max(54, Math.min(168, baseTempo(mood.energy) + (rng() * 10 - 5))));
  const key = Math.floor(rng() * 12);
  const beatsPerBar = /\bwaltz\b/i.test(request.prompt) ? 3 : 4;
  const progression = pick(rng, PROGRESSIONS[mode]);
  const palette = choosePalette(request.prompt, rng);
  const lyricLines =
    !request.instrumental && request.lyrics ? request.lyrics.split(/\n+/).map((l) => l.trim()).filter((l) => l !== '') : [];
  const vocal = lyricLines.length > 0;
  const drums = mood.energy >= -1 || /\b(drum|drums|beat|beats|groove)\b/i.test(request.prompt);

  const beatSeconds = 60 / tempo;
  const barSeconds = beatSeconds * beatsPerBar;
  const durationSeconds = request.durationSeconds;
  // Whole bars of music, then the tonic held from the next bar line to the end.
  const bodyBars = Math.max(1, Math.floor(durationSeconds / barSeconds) - (durationSeconds % barSeconds < barSeconds * 0.5 ? 1 : 0));
  const endBeat = durationSeconds / beatSeconds;

  const tonic = 48 + ((key + 12 - 5) % 12) + 5; // tonic pitch between F3 and E4
  // Melody degrees run 3..15 over the tonic (degree 7 is the octave above it).
  const leadBase = tonic;
  const notes: NoteEvent[] = [];
  const parts: Part[] = [
    { channel: 0, program: vocal ? VOCAL_LEAD : palette.lead, name: vocal ? 'vocal lead' : 'lead' },
    { channel: 1, program: palette.chords, name: 'chords' },
    { channel: 2, program: palette.bass, name: 'bass' },
  ];
  if (drums) parts.push({ channel: 9, program: 0, name: 'drums' });

  // Melody: phrases of two bars, form A A' B A ... ; lyric lines (if any) set the note counts.
  const phraseCount = Math.ceil(bodyBars / 2);
  const motifs = new Map<string, { rhythm: number[]; degrees: number[] }>();
  let lastDegree = 7 + pick(rng, [0, 2, 4]);
  for (let p = 0; p < phraseCount; p++) {
    const firstBar = p * 2;
    const chordsOfPhrase = [progression[firstBar % progression.length], progression[(firstBar + 1) % progression.length]];
    const formLetter = vocal ? `L${p % lyricLines.length}` : ['A', 'A2', 'B', 'A'][p % 4];
    let motif = motifs.get(formLetter);
    if (!motif) {
      const syllables = vocal ? countSyllables(lyricLines[p % lyricLines.length]) : null;
      const base = formLetter === 'A2' ? motifs.get('A') : undefined;
      const rhythm = base ? [...base.rhythm] : phraseRhythm(rng, mood.energy, beatsPerBar, syllables);
      let degrees = phraseMelody(rng, rhythm, chordsOfPhrase, beatsPerBar, lastDegree);
      if (base) degrees = base.degrees.map((d, i) => (i >= base.degrees.length - 2 ? degrees[i] : d)); // A': new ending
      motif = { rhythm, degrees };
      motifs.set(formLetter, motif);
    }
    let beat = firstBar * beatsPerBar;
    motif.rhythm.forEach((length, i) => {
      const start = beat;
      beat += length;
      if (start >= bodyBars * beatsPerBar) return;
      if (!vocal && rng() < 0.08 && i > 0) return; // a rest now and then
      const accent = start % beatsPerBar === 0 ? 12 : 0;
      notes.push({
        channel: 0,
        pitch: degreePitch(leadBase, mode, motif.degrees[i]),
        velocity: Math.min(120, 78 + accent + Math.round(mood.energy * 4) + Math.floor(rng() * 8)),
        startBeat: start,
        beats: Math.min(length * 0.95, bodyBars * beatsPerBar - start),
      });
    });
    lastDegree = motif.degrees[motif.degrees.length - 1];
  }

  // Chords and bass, one chord a bar.
  const chordVelocity = 56 + mood.energy * 4;
  for (let bar = 0; bar < bodyBars; bar++) {
    const root = progression[bar % progression.length];
    const start = bar * beatsPerBar;
    const voicing = triad(root).map((d) => degreePitch(tonic, mode, d) - (d >= 5 ? 12 : 0));
    if (mood.energy >= 2) {
      for (let b = 0; b < beatsPerBar; b++) for (const pitch of voicing) notes.push({ channel: 1, pitch, velocity: chordVelocity + (b === 0 ? 8 : 0), startBeat: start + b + 0.5 * (b % 2), beats: 0.45 });
    } else if (mood.energy >= 0) {
      for (let b = 0; b < beatsPerBar; b += 2) for (const pitch of voicing) notes.push({ channel: 1, pitch, velocity: chordVelocity, startBeat: start + b, beats: Math.min(2, beatsPerBar - b) * 0.95 });
    } else {
      // Slow music: the chord broken into a quarter-note arpeggio (root, fifth, third, fifth), the
      // pulse of a ballad; each note rings to the end of the bar.
      const pattern = [0, 2, 1, 2, 0, 2];
      for (let b = 0; b < beatsPerBar; b++) {
        notes.push({ channel: 1, pitch: voicing[pattern[b]], velocity: chordVelocity + (b === 0 ? 6 : 0), startBeat: start + b, beats: (beatsPerBar - b) * 0.98 });
      }
    }
    const bassRoot = degreePitch(tonic - 24, mode, root);
    const fifth = degreePitch(tonic - 24, mode, root + 4);
    if (mood.energy >= 2) {
      for (let e = 0; e < beatsPerBar * 2; e++) notes.push({ channel: 2, pitch: e % 4 === 3 ? bassRoot + 12 : bassRoot, velocity: 92, startBeat: start + e * 0.5, beats: 0.45 });
    } else if (mood.energy >= 0) {
      for (let b = 0; b < beatsPerBar; b++) notes.push({ channel: 2, pitch: b % 2 === 0 ? bassRoot : fifth, velocity: 88, startBeat: start + b, beats: 0.9 });
    } else {
      for (let b = 0; b < beatsPerBar; b += 2) notes.push({ channel: 2, pitch: b === 0 ? bassRoot : fifth, velocity: 80, startBeat: start + b, beats: Math.min(2, beatsPerBar - b) * 0.95 });
    }
    if (drums) {
      const KICK = 36;
      const SNARE = 38;
      const HAT = 42;
      const RIM = 37;
      for (let b = 0; b < beatsPerBar; b++) {
        const strong = b === 0 || (beatsPerBar === 4 && b === 2);
        if (mood.energy >= 2 || strong) notes.push({ channel: 9, pitch: KICK, velocity: strong ? 110 : 96, startBeat: start + b, beats: 0.25 });
        if (b % 2 === 1) notes.push({ channel: 9, pitch: mood.energy >= 0 ? SNARE : RIM, velocity: mood.energy >= 0 ? 96 : 70, startBeat: start + b, beats: 0.25 });
        notes.push({ channel: 9, pitch: HAT, velocity: 64, startBeat: start + b, beats: 0.2 });
        if (mood.energy >= 1) notes.push({ channel: 9, pitch: HAT, velocity: 48, startBeat: start + b + 0.5, beats: 0.2 });
      }
    }
  }

  // The ending: the tonic chord from the last bar line to the end, bass on the root, a crash.
  const finalStart = bodyBars * beatsPerBar;
  const finalBeats = Math.max(0.5, endBeat - finalStart);
  for (const d of [0, 2, 4]) notes.push({ channel: 1, pitch: degreePitch(tonic, mode, d), velocity: chordVelocity, startBeat: finalStart, beats: finalBeats });
  notes.push({ channel: 0, pitch: degreePitch(leadBase, mode, 7), velocity: 80, startBeat: finalStart, beats: finalBeats });
  notes.push({ channel: 2, pitch: tonic - 24, velocity: 88, startBeat: finalStart, beats: finalBeats });
  if (drums) notes.push({ channel: 9, pitch: 49, velocity: 90, startBeat: finalStart, beats: 1 });

  notes.sort((a, b) => a.startBeat - b.startBeat || a.channel - b.channel || a.pitch - b.pitch);
  return {
    tempo,
    key,
    keyName: `${KEY_NAMES[key]} ${mode}`,
    mode,
    beatsPerBar,
    progression,
    mood,
    parts,
    drums,
    bars: bodyBars + 1,
    durationSeconds,
    notes,
  };
}
