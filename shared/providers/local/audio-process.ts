/**
 * Running the external audio engines (ffmpeg, pocketsphinx, fluidsynth) for the local audio
 * providers: spawned with the caller's abort signal (SIGKILL on abort), stdin fed from a buffer,
 * stdout collected as bytes, a non-zero exit turned into a ProviderError with the end of stderr.
 * Also the ffmpeg steps they share: decoding any input to PCM, encoding PCM to mp3/ogg/wav.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { abortError } from '../abort';
import { ProviderError } from '../types';
import type { ProviderErrorKind } from '../types';
import { encodeWav16, fromInt16Bytes, toInt16Bytes } from './dsp/wav';
import type { PcmAudio } from './dsp/wav';

export interface RunOptions {
  signal: AbortSignal;
  /** Written to the process's stdin, which is then closed. */
  stdin?: Buffer;
  /** The kind of ProviderError a non-zero exit becomes (default `unavailable`). */
  failureKind?: ProviderErrorKind;
  cwd?: string;
}

export interface RunResult {
  stdout: Buffer;
  stderr: string;
}

/** Runs `binary args` to the end; see the module comment. */
export function runProcess(label: string, binary: string, args: string[], options: RunOptions): Promise<RunResult> {
  const { signal } = options;
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(abortError(signal));
      return;
    }
    const child = spawn(binary, args, {
      signal,
      killSignal: 'SIGKILL',
      cwd: options.cwd,
      stdio: [options.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    let stderr = '';
    let settled = false;
    const settle = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      fn();
    };
    child.stdout?.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-4000);
    });
    if (options.stdin && child.stdin) {
      // The process may exit before reading everything (an error, or an abort): ignore EPIPE.
      child.stdin.on('error', () => undefined);
      child.stdin.end(options.stdin);
    }
    child.on('error', (error) => {
      // A process that never started emits no 'close' of its own on every platform: settle here.
      // An abort of a running one is settled on 'close', once it is really gone (not writing into
      // a temp dir that the caller is about to remove).
      if (child.pid === undefined) settle(() => reject(signal.aborted ? abortError(signal) : new ProviderError('unavailable', `${label} could not be started: ${error.message}`)));
    });
    child.on('close', (code, killedBy) => {
      if (signal.aborted) settle(() => reject(abortError(signal)));
      else if (code === 0) settle(() => resolve({ stdout: Buffer.concat(out), stderr }));
      else {
        const tail = stderr.trim().split('\n').slice(-3).join(' | ');
        settle(() => reject(new ProviderError(options.failureKind ?? 'unavailable', `${label} failed (${code ?? killedBy ?? 'unknown'}): ${tail}`)));
      }
    });
  });
}

/** A temporary directory for the callback's files, removed afterwards whatever happens. */
export async function withTempDir<T>(prefix: string, fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), prefix));
  try {
    return await fn(dir);
  } finally {
    await fs.promises.rm(dir, { recursive: true, force: true });
  }
}

const FFMPEG_QUIET = ['-hide_banner', '-nostdin', '-nostats', '-loglevel', 'error'];

/**
 * Decodes an audio (or video) file of any format ffmpeg reads into mono or stereo float PCM at
 * `sampleRate`. The input goes through a file, not a pipe, so formats that need seeking (m4a/mp4
 * with the index at the end) work. An input ffmpeg cannot read is a `bad_request`.
 */
export async function decodeAudioFile(
  ffmpeg: string,
  input: Buffer,
  sampleRate: number,
  channels: 1 | 2,
  signal: AbortSignal,
): Promise<PcmAudio> {
  return withTempDir('gensvc-decode-', async (dir) => {
    const inPath = path.join(dir, 'input');
    await fs.promises.writeFile(inPath, input);
    const args = [...FFMPEG_QUIET, '-i', inPath, '-vn', '-ac', String(channels), '-ar', String(sampleRate), '-f', 's16le', '-acodec', 'pcm_s16le', 'pipe:1'];
    let result: RunResult;
    try {
      result = await runProcess('ffmpeg', ffmpeg, args, { signal, failureKind: 'bad_request' });
    } catch (error) {
      if (error instanceof ProviderError && error.kind === 'bad_request') {
        throw new ProviderError('bad_request', `the audio could not be decoded (${error.message})`);
      }
      throw error;
    }
    return { sampleRate, channels, samples: fromInt16Bytes(result.stdout) };
  });
}

export type AudioFormat = 'mp3' | 'wav' | 'ogg';

export const AUDIO_CONTENT_TYPES: Record<AudioFormat, string> = {
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  ogg: 'audio/ogg',
};

/**
 * Encodes PCM as `format`: WAV is written directly (no ffmpeg needed), mp3 (LAME) and ogg
 * (Vorbis) by ffmpeg reading 16-bit PCM from stdin. The `-bitexact` flags keep the output
 * byte-identical for the same input.
 */
export async function encodeAudio(ffmpeg: string | null, audio: PcmAudio, format: AudioFormat, signal: AbortSignal, bitrateKbps = 96): Promise<Buffer> {
  if (format === 'wav') return encodeWav16(audio);
  if (!ffmpeg) throw new ProviderError('unavailable', `encoding ${format} needs ffmpeg: install the system ffmpeg or the npm package @ffmpeg-installer/ffmpeg`);
  const codec = format === 'mp3' ? ['-c:a', 'libmp3lame', '-b:a', `${bitrateKbps}k`, '-f', 'mp3'] : ['-c:a', 'libvorbis', '-q:a', '4', '-f', 'ogg'];
  // Written to a file rather than a pipe so the muxer can seek back: mp3 then gets its Xing/LAME
  // header (encoder delay and padding), and players report the exact duration.
  return withTempDir('gensvc-encode-', async (dir) => {
    const outPath = path.join(dir, `out.${format}`);
    const args = [
      ...FFMPEG_QUIET,
      '-f', 's16le', '-ar', String(audio.sampleRate), '-ac', String(audio.channels), '-i', 'pipe:0',
      '-map_metadata', '-1', '-fflags', '+bitexact', '-flags:a', '+bitexact',
      ...codec,
      outPath,
    ];
    await runProcess('ffmpeg', ffmpeg, args, { signal, stdin: toInt16Bytes(audio.samples) });
    const bytes = await fs.promises.readFile(outPath);
    if (bytes.length === 0) throw new ProviderError('unavailable', `ffmpeg produced no ${format} output`);
    return bytes;
  });
}
