/**
 * The built-in offline audio providers (shared/providers/local): pure unit tests, no app.
 * Speech is Flite/eSpeak WebAssembly, transcription is PocketSphinx (skipped with a message where
 * Debian's pocketsphinx + pocketsphinx-en-us are not installed), music is fluidsynth + a GM sound
 * font or the built-in synth. Results are checked as audio: decoded by ffmpeg, measured, listened
 * to by the recognizer (speech → text round trips, word error rate), tempo estimated from onsets.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLocalAudioProviders, localAudioEngines } from '../shared/providers/local/audio-engines';
import { detectSpeechSegments, diarizeSegments } from '../shared/providers/local/dsp/diarize';
import { estimateTempo } from '../shared/providers/local/dsp/tempo';
import { decodeWav, encodeWav16, rms, toMono } from '../shared/providers/local/dsp/wav';
import type { PcmAudio } from '../shared/providers/local/dsp/wav';
import { LocalMusicProvider } from '../shared/providers/local/music';
import { analyzeMood, composeMusic } from '../shared/providers/local/music-compose';
import { compositionToMidi } from '../shared/providers/local/music-render';
import { LocalSpeechProvider, speechVoices } from '../shared/providers/local/speech';
import { LocalTranscriptionProvider } from '../shared/providers/local/transcription';
import { formatSpeakerLines } from '../shared/providers/transcript-format';
import { findFfmpeg } from '../shared/media/executables';
import { LocalWhisperProvider, whisperModulePath } from '../shared/providers/local/whisper';
import { ProviderError } from '../shared/providers/types';
import type { MusicRequest, SpeechRequest } from '../shared/providers/types';

const ffmpeg = findFfmpeg();
const engines = localAudioEngines();
const sttSkipReason =
  engines.pocketsphinx === null
    ? 'PocketSphinx is not installed (apt-get install pocketsphinx pocketsphinx-en-us)'
    : ffmpeg === null
      ? 'ffmpeg is not available'
      : null;
if (sttSkipReason) console.warn(`local-audio: speech-to-text tests skipped: ${sttSkipReason}`);
const describeStt = sttSkipReason ? describe.skip : describe;

function call(signal: AbortSignal = new AbortController().signal) {
  return { signal };
}

const speech = new LocalSpeechProvider();
afterAll(() => speech.close());

function speak(text: string, voice: string, extra: Partial<SpeechRequest> = {}) {
  return speech.synthesize({ upstreamModel: 'local-tts', text, voice, speed: 1, format: 'wav', ...extra }, call());
}

/** Flite voices speak at 16 kHz, the recognizer's rate; anything else is refused here. */
async function speak16k(text: string, voice: string): Promise<Float32Array> {
  const audio = decodeWav((await speak(text, voice)).file.bytes);
  expect(audio.sampleRate).toBe(16_000);
  return toMono(audio);
}

function join(parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

const silence = (seconds: number) => new Float32Array(Math.round(seconds * 16_000));
const wav16k = (samples: Float32Array) => encodeWav16({ sampleRate: 16_000, channels: 1, samples });

/** Decodes any audio file with ffmpeg (independently of the providers): seconds of mono 16 kHz PCM. */
function ffmpegDecodeSeconds(bytes: Buffer): number {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'local-audio-test-'));
  try {
    const file = path.join(dir, 'in');
    fs.writeFileSync(file, bytes);
    const result = spawnSync(ffmpeg ?? 'ffmpeg', ['-hide_banner', '-loglevel', 'error', '-i', file, '-f', 's16le', '-ac', '1', '-ar', '16000', 'pipe:1'], {
      maxBuffer: 256 * 1024 * 1024,
    });
    expect(result.status).toBe(0);
    return result.stdout.length / 2 / 16_000;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Converts a WAV to another container/codec with ffmpeg, for recognizer input tests. */
function ffmpegConvert(bytes: Buffer, extension: string, codecArgs: string[]): Buffer {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'local-audio-test-'));
  try {
    fs.writeFileSync(path.join(dir, 'in.wav'), bytes);
    const out = path.join(dir, `out.${extension}`);
    const result = spawnSync(ffmpeg ?? 'ffmpeg', ['-hide_banner', '-loglevel', 'error', '-i', path.join(dir, 'in.wav'), ...codecArgs, out]);
    expect(result.status).toBe(0);
    return fs.readFileSync(out);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function words(text: string): string[] {
  return text.toLowerCase().replace(/[^a-z' ]+/g, ' ').split(/\s+/).filter((w) => w !== '');
}

/** Word-level edit distance (substitutions + insertions + deletions). */
function wordEdits(reference: string[], hypothesis: string[]): number {
  let previous = Array.from({ length: hypothesis.length + 1 }, (_, j) => j);
  for (let i = 1; i <= reference.length; i++) {
    const current = [i];
    for (let j = 1; j <= hypothesis.length; j++) {
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (reference[i - 1] === hypothesis[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[hypothesis.length];
}

/** Our children (by /proc) whose command name matches. */
function childProcesses(name: RegExp): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const match = /^\d+ \((.*)\) \S+ (\d+)/.exec(fs.readFileSync(`/proc/${entry}/stat`, 'utf8'));
      if (match && Number(match[2]) === process.pid && name.test(match[1])) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

async function waitForChild(name: RegExp, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const [pid] = childProcesses(name);
    if (pid !== undefined) return pid;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`no child process matching ${name} appeared within ${timeoutMs} ms`);
}

const SENTENCES = [
  'The weather is nice today and the sun is shining.',
  'Please send the report to the office before noon.',
  'My brother bought a new car last week.',
  'She reads a book every night before going to bed.',
  'The children are playing in the garden.',
  'We need more water for the long trip.',
];

// ---------------------------------------------------------------------------------------------
// Speech synthesis
// ---------------------------------------------------------------------------------------------

describe('LocalSpeechProvider', () => {
  it('speaks with every Flite voice of the catalog and with eSpeak for ru; the duration is the sample count', async () => {
    expect(speechVoices()).toEqual(expect.arrayContaining(['kal', 'kal16', 'awb', 'rms', 'slt', 'ru']));
    for (const voice of ['kal', 'kal16', 'awb', 'rms', 'slt']) {
      const result = await speak('Hello, this is a test of the speech system.', voice);
      const audio = decodeWav(result.file.bytes);
      expect(result.file).toMatchObject({ contentType: 'audio/wav', extension: 'wav' });
      expect(audio.sampleRate).toBe(voice === 'kal' ? 8000 : 16_000);
      expect(result.durationSeconds).toBeCloseTo(audio.samples.length / audio.sampleRate, 6);
      expect(result.durationSeconds).toBeGreaterThan(1.5);
      expect(result.durationSeconds).toBeLessThan(6);
      expect(rms(audio.samples)).toBeGreaterThan(0.02);
    }
  });

  it('speaks Russian as real audio: non-silent, a plausible length for the sentence', async () => {
    const result = await speak('Привет! Сегодня хорошая погода, и мы идём гулять в парк.', 'ru');
    const audio = decodeWav(result.file.bytes);
    expect(audio.sampleRate).toBe(22_050);
    expect(result.durationSeconds).toBeGreaterThan(2);
    expect(result.durationSeconds).toBeLessThan(8);
    expect(rms(audio.samples)).toBeGreaterThan(0.02);
    // Speech, not a tone: the loudness varies (syllables and pauses).
    const frames = Math.floor(audio.samples.length / 2205);
    const levels = Array.from({ length: frames }, (_, f) => rms(audio.samples.subarray(f * 2205, (f + 1) * 2205)));
    expect(levels.filter((l) => l < 0.01).length).toBeGreaterThan(2);
    expect(levels.filter((l) => l > 0.05).length).toBeGreaterThan(frames / 3);
  });

  it('speed 2 makes shorter audio than speed 0.5, with Flite and with eSpeak', async () => {
    for (const [voice, text] of [['awb', SENTENCES[0]], ['ru', 'Сегодня хорошая погода.']]) {
      const fast = await speak(text, voice, { speed: 2 });
      const slow = await speak(text, voice, { speed: 0.5 });
      expect(slow.durationSeconds / fast.durationSeconds).toBeGreaterThan(2);
    }
  });

  it('encodes mp3, wav and ogg that ffmpeg decodes to the reported duration', async () => {
    const expected = { mp3: 'audio/mpeg', wav: 'audio/wav', ogg: 'audio/ogg' } as const;
    for (const format of ['mp3', 'wav', 'ogg'] as const) {
      const result = await speak(SENTENCES[1], 'slt', { format });
      const { bytes, contentType, extension } = result.file;
      expect(contentType).toBe(expected[format]);
      expect(extension).toBe(format);
      if (format === 'wav') expect(bytes.toString('latin1', 0, 4) + bytes.toString('latin1', 8, 12)).toBe('RIFFWAVE');
      if (format === 'ogg') expect(bytes.toString('latin1', 0, 4)).toBe('OggS');
      if (format === 'mp3') expect(bytes.toString('latin1', 0, 3) === 'ID3' || (bytes[0] === 0xff && (bytes[1] & 0xe0) === 0xe0)).toBe(true);
      expect(Math.abs(ffmpegDecodeSeconds(bytes) - result.durationSeconds)).toBeLessThan(0.1);
    }
  });

  it('an abort stops a running synthesis; the next request gets a fresh synthesizer', async () => {
    const controller = new AbortController();
    const long = Array.from({ length: 40 }, () => SENTENCES.join(' ')).join(' ');
    const pending = speech.synthesize({ upstreamModel: 'local-tts', text: long, voice: 'awb', speed: 1, format: 'mp3' }, call(controller.signal));
    setTimeout(() => controller.abort(), 50);
    const started = Date.now();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    expect(Date.now() - started).toBeLessThan(1000);
    expect((await speak('Still here.', 'slt')).durationSeconds).toBeGreaterThan(0.5);
  });

  it('refuses an unknown voice, a speed out of range and an empty text as bad requests', async () => {
    await expect(speak('Hi', 'nobody')).rejects.toMatchObject({ kind: 'bad_request' });
    await expect(speak('Hi', 'awb', { speed: 3 })).rejects.toMatchObject({ kind: 'bad_request' });
    await expect(speak('   ', 'awb')).rejects.toBeInstanceOf(ProviderError);
  });
});

// ---------------------------------------------------------------------------------------------
// Diarization (DSP only: runs without the recognizer)
// ---------------------------------------------------------------------------------------------

/** Two voices take turns: awb (A), slt (B), then awb again; 0.5 s pauses between sentences. */
const TURNS: Array<[string, string[]]> = [
  ['awb', [SENTENCES[0], SENTENCES[1]]],
  ['slt', [SENTENCES[2], SENTENCES[4]]],
  ['awb', [SENTENCES[5]]],
];
let conversationAudio: Promise<{ samples: Float32Array; turnStarts: number[] }> | null = null;

function conversation(): Promise<{ samples: Float32Array; turnStarts: number[] }> {
  conversationAudio ??= (async () => {
    const parts: Float32Array[] = [];
    const turnStarts: number[] = [];
    let at = 0;
    for (const [voice, sentences] of TURNS) {
      turnStarts.push(at);
      for (const sentence of sentences) {
        const spoken = await speak16k(sentence, voice);
        parts.push(spoken, silence(0.5));
        at += spoken.length + silence(0.5).length;
      }
    }
    return { samples: join(parts), turnStarts };
  })();
  return conversationAudio;
}

describe('diarization (segments at pauses, voice profiles, clustering)', () => {
  it('labels the segments by voice: one label before the join, another after, the first voice again at its return', async () => {
    const { samples, turnStarts } = await conversation();
    const segments = diarizeSegments(samples, 16_000, detectSpeechSegments(samples, 16_000));
    const turnOf = (start: number) => turnStarts.filter((t) => t <= start).length - 1;
    const labelsByTurn = TURNS.map((_, turn) => new Set(segments.filter((s) => turnOf(s.start) === turn).map((s) => s.speaker)));
    console.info(`local-audio: diarized segments ${segments.map((s) => `${(s.start / 16_000).toFixed(2)}-${(s.end / 16_000).toFixed(2)}s:${s.speaker}`).join(' ')}`);
    expect(segments.length).toBeGreaterThanOrEqual(5);
    expect(labelsByTurn.map((set) => [...set])).toEqual([[1], [2], [1]]);
  });

  it('keeps one speaker for one voice with pauses (labels do not alternate at pauses)', async () => {
    const parts = await Promise.all(SENTENCES.slice(0, 4).map((s) => speak16k(s, 'slt')));
    const single = join(parts.flatMap((p) => [p, silence(0.5)]));
    const segments = diarizeSegments(single, 16_000, detectSpeechSegments(single, 16_000));
    expect(segments.length).toBeGreaterThanOrEqual(4);
    expect(new Set(segments.map((s) => s.speaker))).toEqual(new Set([1]));
  });

  it('formats speaker lines, joining consecutive utterances of a speaker and numbering by first line', () => {
    expect(formatSpeakerLines([{ speaker: 2, text: 'a' }, { speaker: 2, text: 'b' }, { speaker: 1, text: '' }, { speaker: 1, text: 'c' }, { speaker: 2, text: 'd' }])).toBe(
      '[Speaker 1]: a b\n[Speaker 2]: c\n[Speaker 1]: d',
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Speech-to-text
// ---------------------------------------------------------------------------------------------

describeStt(`LocalTranscriptionProvider${sttSkipReason ? ` (skipped: ${sttSkipReason})` : ''}`, () => {
  const stt = new LocalTranscriptionProvider();

  function transcribe(audio: Buffer, diarize = false, language: string | null = null) {
    return stt.transcribe({ upstreamModel: 'local-stt', audio, language, diarize }, call());
  }

  it('transcribes Flite speech back with a pooled word error rate below 30% (awb as mp3, kal16 as ogg)', async () => {
    let edits = 0;
    let total = 0;
    for (const [voice, format] of [['awb', 'mp3'], ['kal16', 'ogg']] as const) {
      const parts = await Promise.all(SENTENCES.map((s) => speak16k(s, voice)));
      const file = wav16k(join(parts.flatMap((p) => [p, silence(0.6)])));
      const encoded = format === 'mp3' ? ffmpegConvert(file, 'mp3', ['-c:a', 'libmp3lame', '-b:a', '64k']) : ffmpegConvert(file, 'ogg', ['-c:a', 'libvorbis']);
      const result = await transcribe(encoded);
      expect(result.language).toBe('en');
      expect(Math.abs(result.durationSeconds - decodeWav(file).samples.length / 16_000)).toBeLessThan(0.1);
      const reference = words(SENTENCES.join(' '));
      const errors = wordEdits(reference, words(result.text));
      console.info(`local-audio: ${voice} (${format}) WER ${(errors / reference.length).toFixed(3)}: "${result.text}"`);
      edits += errors;
      total += reference.length;
    }
    console.info(`local-audio: pooled WER ${(edits / total).toFixed(3)} over ${total} words`);
    expect(edits / total).toBeLessThan(0.3);
  }, 40_000);

  it('reads m4a, flac and webm input', async () => {
    const file = wav16k(await speak16k(SENTENCES[2], 'awb'));
    const inputs = [
      ffmpegConvert(file, 'm4a', ['-c:a', 'aac', '-b:a', '96k']),
      ffmpegConvert(file, 'flac', ['-c:a', 'flac']),
      ffmpegConvert(file, 'webm', ['-c:a', 'libopus', '-b:a', '48k']),
    ];
    for (const input of inputs) {
      const result = await transcribe(input);
      expect(wordEdits(words(SENTENCES[2]), words(result.text)) / words(SENTENCES[2]).length).toBeLessThan(0.5);
    }
  });

  it('refuses other languages as a bad request and an undecodable file too', async () => {
    const file = wav16k(await speak16k('Hello.', 'awb'));
    await expect(transcribe(file, false, 'ru')).rejects.toMatchObject({ kind: 'bad_request' });
    await expect(transcribe(file, false, 'en-US')).resolves.toMatchObject({ language: 'en' });
    await expect(transcribe(Buffer.from('not audio at all'))).rejects.toMatchObject({ kind: 'bad_request' });
  });

  it('writes "[Speaker N]: text" lines: the speaker changes at the join, each segment transcribed', async () => {
    const { samples } = await conversation();
    const result = await transcribe(wav16k(samples), true);
    console.info(`local-audio: diarized transcript:\n${result.text}`);
    const lines = result.text.split('\n');
    expect(lines.map((line) => /^\[Speaker (\d)\]: /.exec(line)?.[1])).toEqual(['1', '2', '1']);
    lines.forEach((line, turn) => {
      const reference = words(TURNS[turn][1].join(' '));
      const said = words(line.replace(/^\[Speaker \d\]: /, ''));
      expect(wordEdits(reference, said) / reference.length).toBeLessThan(0.4);
    });
  });

  it('an abort kills the running recognizer', async () => {
    const long = await speak16k(Array.from({ length: 3 }, () => SENTENCES.join(' ')).join(' '), 'awb');
    const controller = new AbortController();
    const pending = stt.transcribe({ upstreamModel: 'local-stt', audio: wav16k(long), language: 'en', diarize: false }, call(controller.signal));
    const pid = await waitForChild(/^pocketsphinx/, 20_000);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    expect(fs.existsSync(`/proc/${pid}`)).toBe(false);
  }, 30_000);
});

// ---------------------------------------------------------------------------------------------
// Music
// ---------------------------------------------------------------------------------------------

describe('composeMusic (pure)', () => {
  it('reads mood words: happy/upbeat → major and fast, sad/slow/calm → minor and slow', () => {
    expect(analyzeMood('a happy upbeat song')).toMatchObject({ words: ['happy', 'upbeat'] });
    for (let seed = 1; seed <= 8; seed++) {
      const happy = composeMusic({ prompt: 'happy upbeat energetic', seed, durationSeconds: 20 });
      const sad = composeMusic({ prompt: 'sad slow melancholic', seed, durationSeconds: 20 });
      const calm = composeMusic({ prompt: 'calm dark night', seed, durationSeconds: 20 });
      expect(happy.mode).toBe('major');
      expect(sad.mode).toBe('minor');
      expect(calm.mode).toBe('minor');
      expect(happy.tempo).toBeGreaterThanOrEqual(130);
      expect(sad.tempo).toBeLessThanOrEqual(70);
      expect(calm.tempo).toBeLessThan(happy.tempo);
      // Busier too: more notes a second.
      expect(happy.notes.length).toBeGreaterThan(2 * sad.notes.length);
    }
  });

  it('is a function of prompt and seed, and the notes end with the requested duration', () => {
    const a = composeMusic({ prompt: 'a walk in the park', seed: 7, durationSeconds: 30 });
    expect(composeMusic({ prompt: 'a walk in the park', seed: 7, durationSeconds: 30 })).toEqual(a);
    expect(composeMusic({ prompt: 'a walk in the park', seed: 8, durationSeconds: 30 }).notes).not.toEqual(a.notes);
    const lastEnd = Math.max(...a.notes.map((n) => ((n.startBeat + n.beats) * 60) / a.tempo));
    expect(lastEnd).toBeCloseTo(30, 1);
  });

  it('gives lyrics a vocal lead and one note per syllable', () => {
    const song = composeMusic({ prompt: 'pop', seed: 1, durationSeconds: 20, lyrics: 'hello my friend\nsing along', instrumental: false });
    expect(song.parts[0]).toMatchObject({ program: 53, name: 'vocal lead' });
    const phraseBeats = 2 * song.beatsPerBar;
    const melodyIn = (phrase: number) => song.notes.filter((n) => n.channel === 0 && n.startBeat >= phrase * phraseBeats && n.startBeat < (phrase + 1) * phraseBeats);
    expect(melodyIn(0)).toHaveLength(4); // hel-lo my friend
    expect(melodyIn(1)).toHaveLength(3); // sing a-long
    expect(composeMusic({ prompt: 'pop', seed: 1, durationSeconds: 20, lyrics: 'hello', instrumental: true }).parts[0].name).toBe('lead');
  });

  it('writes a Standard MIDI File: a tempo track and one track per part', () => {
    const song = composeMusic({ prompt: 'happy', seed: 1, durationSeconds: 10 });
    const midi = compositionToMidi(song);
    expect(midi.toString('latin1', 0, 4)).toBe('MThd');
    expect(midi.readUInt16BE(10)).toBe(song.parts.length + 1);
    expect(midi.toString('latin1').split('MTrk').length - 1).toBe(song.parts.length + 1);
  });
});

describe('LocalMusicProvider', () => {
  const renderers: Array<[string, LocalMusicProvider]> = [['built-in synth', new LocalMusicProvider({ fluidsynthPath: null })]];
  if (engines.fluidsynth && engines.soundfont) renderers.unshift(['fluidsynth', new LocalMusicProvider()]);
  else console.warn('local-audio: fluidsynth or a GM sound font missing: music tested with the built-in synth only');

  function request(extra: Partial<MusicRequest> = {}): MusicRequest {
    return { upstreamModel: 'local-music', prompt: 'happy upbeat piano', lyrics: null, instrumental: true, durationSeconds: 7.3, format: 'wav', seed: 42, ...extra };
  }

  describe.each(renderers)('%s', (_name, music) => {
    it('is exactly the requested duration, as wav and as mp3', async () => {
      const wav = await music.compose(request(), call());
      const audio = decodeWav(wav.file.bytes);
      expect(wav.file).toMatchObject({ contentType: 'audio/wav', extension: 'wav' });
      expect(audio).toMatchObject({ sampleRate: 44_100, channels: 2 });
      expect(audio.samples.length / 2).toBe(Math.round(7.3 * 44_100));
      expect(wav.durationSeconds).toBeCloseTo(7.3, 6);
      expect(rms(audio.samples)).toBeGreaterThan(0.03);

      const mp3 = await music.compose(request({ format: 'mp3' }), call());
      expect(mp3.file).toMatchObject({ contentType: 'audio/mpeg', extension: 'mp3' });
      expect(Math.abs(ffmpegDecodeSeconds(mp3.file.bytes) - 7.3)).toBeLessThanOrEqual(0.1);
    });

    it('same prompt and seed → the same bytes; another seed → other bytes', async () => {
      const a = await music.compose(request({ format: 'mp3' }), call());
      const b = await music.compose(request({ format: 'mp3' }), call());
      const c = await music.compose(request({ format: 'mp3', seed: 43 }), call());
      expect(b.file.bytes.equals(a.file.bytes)).toBe(true);
      expect(c.file.bytes.equals(a.file.bytes)).toBe(false);
    });

    it('mood words change the tempo heard in the audio (onset-based estimate)', async () => {
      const estimates: number[] = [];
      for (const prompt of ['happy upbeat energetic', 'sad slow melancholic']) {
        const composed = composeMusic({ prompt, seed: 5, durationSeconds: 12 });
        const result = await music.compose(request({ prompt, seed: 5, durationSeconds: 12 }), call());
        const audio: PcmAudio = decodeWav(result.file.bytes);
        const heard = estimateTempo(toMono(audio), audio.sampleRate);
        expect(heard).not.toBeNull();
        expect(Math.abs((heard ?? 0) / composed.tempo - 1)).toBeLessThan(0.06);
        estimates.push(heard ?? 0);
      }
      console.info(`local-audio: ${_name}: tempo heard happy ${estimates[0].toFixed(1)} BPM, sad ${estimates[1].toFixed(1)} BPM`);
      expect(estimates[0]).toBeGreaterThan(1.6 * estimates[1]);
    });
  });

  it('an abort kills the running encoder', async () => {
    const music = new LocalMusicProvider({ fluidsynthPath: null });
    const controller = new AbortController();
    const pending = music.compose(request({ format: 'mp3', durationSeconds: 45 }), call(controller.signal));
    const pid = await waitForChild(/^ffmpeg$/, 20_000);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    expect(fs.existsSync(`/proc/${pid}`)).toBe(false);
  }, 30_000);

  it('refuses a duration out of range', async () => {
    await expect(renderers[0][1].compose(request({ durationSeconds: 0 }), call())).rejects.toMatchObject({ kind: 'bad_request' });
  });
});

// ---------------------------------------------------------------------------------------------
// Engines, the factory, bring-your-own Whisper
// ---------------------------------------------------------------------------------------------

describe('localAudioEngines / createLocalAudioProviders', () => {
  it('reports the engines and leaves out transcription without PocketSphinx; music always works', () => {
    expect(Object.keys(engines).sort()).toEqual(['fluidsynth', 'pocketsphinx', 'soundfont']);
    const all = createLocalAudioProviders();
    expect(all.speech).toBeDefined();
    expect(all.music).toBeDefined();
    expect(all.transcription !== undefined).toBe(sttSkipReason === null);
    const bare = createLocalAudioProviders({ pocketsphinxPath: null, fluidsynthPath: null });
    expect(bare.transcription).toBeUndefined();
    expect(bare.music).toBeDefined();
  });
});

(whisperModulePath() ? describe : describe.skip)('LocalWhisperProvider (model loading only: no model ships)', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'local-audio-whisper-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('says clearly that a missing file is missing', async () => {
    const provider = new LocalWhisperProvider({ modelPath: path.join(dir, 'ggml-base.bin') });
    await expect(provider.load()).rejects.toMatchObject({ kind: 'unavailable', message: expect.stringMatching(/does not exist/) });
  });

  it('says clearly that a file of random bytes is not a model', async () => {
    const file = path.join(dir, 'random.bin');
    fs.writeFileSync(file, Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 2654435761) >>> 24)));
    await expect(new LocalWhisperProvider({ modelPath: file }).load()).rejects.toMatchObject({ kind: 'unavailable', message: expect.stringMatching(/not a whisper\.cpp ggml model/) });
  });

  it('says clearly that a model with a valid header and corrupt body is corrupt, and the loader crash does not take the process down', async () => {
    const header = Buffer.alloc(48);
    header.writeUInt32LE(0x67676d6c, 0);
    [51_865, 1500, 384, 6, 4, 448, 384, 6, 4, 80, 1].forEach((value, i) => header.writeInt32LE(value, 4 + i * 4));
    const file = path.join(dir, 'ggml-tiny-corrupt.bin');
    fs.writeFileSync(file, Buffer.concat([header, Buffer.alloc(20 * 1024 * 1024, 7)]));
    const provider = new LocalWhisperProvider({ modelPath: file });
    await expect(provider.load()).rejects.toMatchObject({ kind: 'unavailable', message: expect.stringMatching(/corrupt/) });
    await expect(provider.transcribe({ upstreamModel: 'whisper', audio: Buffer.from('x'), language: null, diarize: false }, call())).rejects.toMatchObject({ kind: 'unavailable' });
  });
});
