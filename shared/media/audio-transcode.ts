/**
 * Re-encoding audio a speech model made (mp3, wav or ogg) into a format no model of ours makes
 * itself: Ogg/Opus, AAC (ADTS), FLAC, or raw PCM. ffmpeg (`findFfmpeg()`: the system one or the
 * npm package's static build, which has libopus, aac and flac) reads the bytes on stdin and writes
 * the result on stdout.
 */
import { runProgram } from './run-program';

export type TranscodedAudio = 'opus' | 'aac' | 'flac' | 'pcm';

const CODEC_ARGS: Record<TranscodedAudio, string[]> = {
  opus: ['-c:a', 'libopus', '-b:a', '64k', '-f', 'ogg'],
  aac: ['-c:a', 'aac', '-b:a', '128k', '-f', 'adts'],
  flac: ['-c:a', 'flac', '-f', 'flac'],
  // Raw samples as OpenAI's `pcm` is: 24 kHz, 16-bit signed little-endian, mono, no header.
  pcm: ['-ac', '1', '-ar', '24000', '-c:a', 'pcm_s16le', '-f', 's16le'],
};

/** Whether these bytes are already Ogg/Opus (the speech upstreams' `ogg`; the local engine's is Vorbis). */
export function isOggOpus(bytes: Buffer): boolean {
  return bytes.subarray(0, 4).toString('latin1') === 'OggS' && bytes.subarray(0, 96).includes('OpusHead');
}

/** `bytes` (any audio ffmpeg reads) in `format`; rejects when ffmpeg cannot read or encode them. */
export async function transcodeAudio(ffmpeg: string, bytes: Buffer, format: TranscodedAudio, signal: AbortSignal): Promise<Buffer> {
  const args = ['-hide_banner', '-nostdin', '-loglevel', 'error', '-i', 'pipe:0', '-vn', ...CODEC_ARGS[format], 'pipe:1'];
  const { stdout } = await runProgram('ffmpeg', ffmpeg, args, { signal, stdin: bytes });
  if (stdout.length === 0) throw new Error('ffmpeg wrote no audio');
  return stdout;
}
