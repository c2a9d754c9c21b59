/**
 * Telegram plays only OGG/Opus as a voice message. Speech in another format (the built-in
 * engines write OGG/Vorbis or mp3) is re-encoded with ffmpeg when it is there; without it, or when
 * the encoding fails, the result goes as an audio file instead.
 */
import { findFfmpeg } from '../media/executables';
import { runProgram } from '../media/run-program';

const TRANSCODE_TIMEOUT_MS = 30_000;

/** OGG with an Opus stream. */
export function isOggOpus(bytes: Buffer): boolean {
  return bytes.subarray(0, 4).toString('latin1') === 'OggS' && bytes.subarray(0, 96).includes('OpusHead');
}

export type VoiceEncoder = (audio: Buffer) => Promise<Buffer | null>;

/** Mono Opus at 32 kb/s in OGG, as Telegram's own voice notes. */
export function ffmpegVoiceEncoder(ffmpeg: string | null = findFfmpeg()): VoiceEncoder {
  return async (audio) => {
    if (isOggOpus(audio)) return audio;
    if (!ffmpeg) return null;
    try {
      const args = ['-hide_banner', '-loglevel', 'error', '-i', 'pipe:0', '-vn', '-c:a', 'libopus', '-b:a', '32k', '-ac', '1', '-f', 'ogg', 'pipe:1'];
      const { stdout } = await runProgram('ffmpeg', ffmpeg, args, { signal: AbortSignal.timeout(TRANSCODE_TIMEOUT_MS), stdin: audio });
      return isOggOpus(stdout) ? stdout : null;
    } catch {
      return null;
    }
  };
}
