/**
 * Bring-your-own Whisper: speech-to-text with a ggml Whisper model file the operator supplies
 * (`WHISPER_MODEL_PATH`, e.g. ggml-base.bin or ggml-small-q5_1.bin from the whisper.cpp project),
 * run by the npm package `@napi-rs/whisper` (whisper.cpp inside, CPU). No model ships with it.
 *
 * Loading is guarded, because whisper.cpp aborts the whole process (GGML_ASSERT) on some corrupt
 * files instead of returning an error: the file's ggml header is checked here first, then the
 * model is loaded once in a child Node process, and only if that succeeds in this one. A missing,
 * foreign or corrupt file becomes a ProviderError('unavailable') that says what is wrong.
 *
 * Transcription: ffmpeg decodes to 16 kHz mono float; `whisper.full` runs greedy decoding with the
 * requested language (or detection); `diarize` labels utterances as in the PocketSphinx provider.
 * `full` is synchronous: a long file keeps this thread busy (run the provider in the worker).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { findFfmpeg } from '../../media/executables';
import { abortError } from '../abort';
import { formatSpeakerLines, normalizeLanguage } from '../transcript-format';
import { ProviderError } from '../types';
import type { CallOptions, TranscriptionProvider, TranscriptionRequest, TranscriptionResult } from '../types';
import { decodeAudioFile } from './audio-process';
import { detectSpeechSegments, diarizeSegments } from './dsp/diarize';
import { STT_SAMPLE_RATE } from './transcription';

type WhisperModule = typeof import('@napi-rs/whisper');
type WhisperContext = InstanceType<WhisperModule['Whisper']>;

interface LoadedWhisper {
  lib: WhisperModule;
  context: WhisperContext;
  info: WhisperModelInfo;
}

/** 'ggml' as a little-endian uint32, the first four bytes of a whisper.cpp model file. */
const GGML_MAGIC = 0x67676d6c;
const HEADER_BYTES = 4 + 11 * 4;
const MODEL_SIZES: Record<number, string> = { 384: 'tiny', 512: 'base', 768: 'small', 1024: 'medium', 1280: 'large' };
/** ggml tensor types a whisper.cpp model may be stored in (ftype % 1000). */
const KNOWN_FTYPES = new Set([0, 1, 2, 3, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);

export interface WhisperModelInfo {
  path: string;
  sizeBytes: number;
  /** tiny, base, small, medium, large (by the audio encoder's width). */
  size: string;
  multilingual: boolean;
  mels: number;
  ftype: number;
}

function unavailable(file: string, why: string): ProviderError {
  return new ProviderError('unavailable', `the Whisper model ${file} ${why}`);
}

/** Checks that `file` exists and carries a plausible whisper.cpp ggml header; throws a clear ProviderError if not. */
export async function inspectWhisperModel(file: string): Promise<WhisperModelInfo> {
  let stat: fs.Stats;
  try {
    stat = await fs.promises.stat(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw unavailable(file, code === 'ENOENT' ? 'does not exist (check WHISPER_MODEL_PATH)' : `cannot be read (${code ?? String(error)})`);
  }
  if (!stat.isFile()) throw unavailable(file, 'is not a file');
  const header = Buffer.alloc(HEADER_BYTES);
  const handle = await fs.promises.open(file, 'r');
  let read: number;
  try {
    ({ bytesRead: read } = await handle.read(header, 0, HEADER_BYTES, 0));
  } finally {
    await handle.close();
  }
  if (read < 4 || header.readUInt32LE(0) !== GGML_MAGIC) {
    const gguf = read >= 4 && header.toString('latin1', 0, 4) === 'GGUF';
    throw unavailable(file, gguf ? 'is a GGUF file (a language model?), not a whisper.cpp ggml model' : 'is not a whisper.cpp ggml model (wrong magic bytes)');
  }
  if (read < HEADER_BYTES) throw unavailable(file, 'is truncated (incomplete header)');
  const h = Array.from({ length: 11 }, (_, i) => header.readInt32LE(4 + i * 4));
  const [nVocab, audioCtx, audioState, audioHead, audioLayer, textCtx, textState, textHead, textLayer, mels, ftype] = h;
  const plausible =
    nVocab >= 51_864 && nVocab <= 51_866 &&
    audioCtx === 1500 && textCtx === 448 &&
    MODEL_SIZES[audioState] !== undefined && textState === audioState &&
    audioHead >= 1 && audioHead <= 64 && textHead >= 1 && textHead <= 64 &&
    audioLayer >= 1 && audioLayer <= 64 && textLayer >= 1 && textLayer <= 64 &&
    (mels === 80 || mels === 128) &&
    ftype >= 0 && KNOWN_FTYPES.has(ftype % 1000);
  if (!plausible) throw unavailable(file, `is corrupt (implausible model header: ${h.join(', ')})`);
  // The smallest published model (tiny, 5-bit) is about 31 MB.
  if (stat.size < 16 * 1024 * 1024) throw unavailable(file, `is corrupt or truncated (${stat.size} bytes)`);
  return { path: file, sizeBytes: stat.size, size: MODEL_SIZES[audioState], multilingual: nVocab >= 51_865, mels, ftype };
}

const PROBE_SCRIPT = `
const [modulePath, modelPath] = process.argv.slice(1);
const whisper = require(modulePath);
try {
  new whisper.Whisper(modelPath);
} catch (error) {
  process.stderr.write('\\nload error: ' + String(error && error.message ? error.message : error) + '\\n');
  process.exit(3);
}
process.exit(0);
`;

/** How long the child may take to load a model (a large one reads ~3 GB). */
export const WHISPER_PROBE_TIMEOUT_MS = 180_000;

/** The path of `@napi-rs/whisper`'s entry, or null when it is not installed. */
export function whisperModulePath(): string | null {
  try {
    return require.resolve('@napi-rs/whisper');
  } catch {
    return null;
  }
}

/** The line of the loader's stderr that says what went wrong. */
function loaderComplaint(stderr: string): string {
  const lines = stderr.split('\n').map((line) => line.trim()).filter((line) => line !== '');
  const telling = lines.find((line) => /^load error:|GGML_ASSERT|terminate called|what\(\)|failed to|invalid|error/i.test(line));
  return (telling ?? lines[lines.length - 1] ?? '').replace(/^load error:\s*/, '').slice(0, 300);
}

/** Loads the model once in a child Node process: a crash there (GGML_ASSERT, SIGABRT) cannot take this process down. */
export function probeWhisperModel(file: string, signal: AbortSignal, timeoutMs = WHISPER_PROBE_TIMEOUT_MS): Promise<void> {
  const modulePath = whisperModulePath();
  if (!modulePath) return Promise.reject(new ProviderError('unavailable', 'the npm package @napi-rs/whisper is not installed'));
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(abortError(signal));
      return;
    }
    const child = spawn(process.execPath, ['-e', PROBE_SCRIPT, modulePath, file], {
      signal,
      killSignal: 'SIGKILL',
      timeout: timeoutMs,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-8000);
    });
    child.on('error', (error) => {
      if (signal.aborted) reject(abortError(signal));
      else if (child.pid === undefined) reject(new ProviderError('unavailable', `the Whisper model check could not start: ${error.message}`));
    });
    child.on('close', (code, killedBy) => {
      if (signal.aborted) reject(abortError(signal));
      else if (code === 0) resolve();
      else if (killedBy === 'SIGKILL' || killedBy === 'SIGTERM') reject(unavailable(file, `could not be loaded within ${Math.round(timeoutMs / 1000)} s (is it a corrupt file?)`));
      else if (killedBy) reject(unavailable(file, `is corrupt: the loader crashed (${killedBy}: ${loaderComplaint(stderr) || 'no message'})`));
      else reject(unavailable(file, `could not be loaded (${loaderComplaint(stderr) || `exit code ${code}`})`));
    });
  });
}

export interface LocalWhisperOptions {
  /** The ggml model file (WHISPER_MODEL_PATH). */
  modelPath: string;
  /** Default: `findFfmpeg()`. */
  ffmpegPath?: string | null;
  /** CPU threads for whisper.cpp; default 2. */
  threads?: number;
}

export class LocalWhisperProvider implements TranscriptionProvider {
  private loading: Promise<LoadedWhisper> | null = null;

  constructor(private readonly options: LocalWhisperOptions) {}

  /** Checks and loads the model (once; a failure is not cached, so a fixed file is picked up). */
  async load(signal: AbortSignal = new AbortController().signal): Promise<WhisperModelInfo> {
    return (await this.loaded(signal)).info;
  }

  private loaded(signal: AbortSignal): Promise<LoadedWhisper> {
    this.loading ??= this.loadOnce(signal).catch((error: unknown) => {
      this.loading = null;
      throw error;
    });
    return this.loading;
  }

  private async loadOnce(signal: AbortSignal): Promise<LoadedWhisper> {
    const file = this.options.modelPath;
    const info = await inspectWhisperModel(file);
    await probeWhisperModel(file, signal);
    let lib: WhisperModule;
    try {
      lib = require('@napi-rs/whisper') as WhisperModule;
    } catch (error) {
      throw new ProviderError('unavailable', `@napi-rs/whisper could not be loaded: ${error instanceof Error ? error.message : String(error)}`);
    }
    try {
      return { lib, context: new lib.Whisper(file), info };
    } catch (error) {
      throw unavailable(file, `could not be loaded (${error instanceof Error ? error.message : String(error)})`);
    }
  }

  async transcribe(request: TranscriptionRequest, options: CallOptions): Promise<TranscriptionResult> {
    const { signal } = options;
    if (signal.aborted) throw abortError(signal);
    if (request.audio.length === 0) throw new ProviderError('bad_request', 'the audio is empty');
    const { lib, context, info } = await this.loaded(signal);
    const language = normalizeLanguage(request.language);
    if (language !== null && !info.multilingual && language !== 'en') {
      throw new ProviderError('bad_request', `the configured Whisper model is English-only; language ${request.language} is not supported`);
    }
    if (language !== null && lib.Whisper.langId(language) < 0) throw new ProviderError('bad_request', `unknown language ${request.language}`);
    const ffmpeg = this.options.ffmpegPath === undefined ? findFfmpeg() : this.options.ffmpegPath;
    if (!ffmpeg) throw new ProviderError('unavailable', 'ffmpeg is not available: install the system ffmpeg or the npm package @ffmpeg-installer/ffmpeg');
    const samples = (await decodeAudioFile(ffmpeg, request.audio, STT_SAMPLE_RATE, 1, signal)).samples;
    const durationSeconds = samples.length / STT_SAMPLE_RATE;
    options.onProgress?.(10);

    const run = (part: Float32Array): string => {
      const params = new lib.WhisperFullParams(lib.WhisperSamplingStrategy.Greedy);
      params.language = language ?? 'auto';
      params.nThreads = this.options.threads ?? 2;
      params.printProgress = false;
      params.printRealtime = false;
      params.printTimestamps = false;
      return context.full(params, part).trim();
    };

    let text: string;
    if (request.diarize) {
      const labelled = diarizeSegments(samples, STT_SAMPLE_RATE, detectSpeechSegments(samples, STT_SAMPLE_RATE));
      const utterances: Array<{ speaker: number; text: string }> = [];
      for (const [i, segment] of labelled.entries()) {
        if (signal.aborted) throw abortError(signal);
        utterances.push({ speaker: segment.speaker, text: run(samples.subarray(segment.start, segment.end)) });
        options.onProgress?.(10 + Math.round((85 * (i + 1)) / labelled.length));
      }
      text = formatSpeakerLines(utterances);
    } else {
      text = samples.length > 0 ? run(samples) : '';
    }
    const detected = language ?? lib.Whisper.lang(context.fullLangId) ?? 'en';
    options.onProgress?.(100);
    return { text, language: detected, durationSeconds };
  }
}
