/**
 * The ffmpeg steps the local audio providers share (decoding any input to PCM, encoding PCM to
 * mp3/ogg/wav), run with shared/media/run-program.ts, and a temporary directory for the files of
 * an engine run.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runProgram } from '../../media/run-program';
import type { RunResult } from '../../media/run-program';
import { ProviderError } from '../types';
import { encodeWav16, fromInt16Bytes, toInt16Bytes } from './dsp/wav';
import type { PcmAudio } from './dsp/wav';

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
      result = await runProgram('ffmpeg', ffmpeg, args, { signal, failureKind: 'bad_request' });
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
    await runProgram('ffmpeg', ffmpeg, args, { signal, stdin: toInt16Bytes(audio.samples) });
    const bytes = await fs.promises.readFile(outPath);
    if (bytes.length === 0) throw new ProviderError('unavailable', `ffmpeg produced no ${format} output`);
    return bytes;
  });
}
