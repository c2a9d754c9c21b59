/**
 * How long some audio plays: WAV from its header; anything else by decoding it with ffmpeg
 * (`time=` of the final stats line, else the `Duration:` of the input); an estimate from the
 * bytes only when no ffmpeg can be run.
 */
import { spawn } from 'node:child_process';
import { wavDuration } from './wav';

/** Parses `HH:MM:SS.xx`. */
function clockSeconds(value: string): number {
  const [h, m, s] = value.split(':').map(Number);
  return (h ?? 0) * 3600 + (m ?? 0) * 60 + (s ?? 0);
}

/** Decodes the audio with ffmpeg (fed on stdin) and reads how long it played. */
export function ffmpegDuration(ffmpeg: string, bytes: Buffer, signal: AbortSignal): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(ffmpeg, ['-hide_banner', '-nostdin', '-i', 'pipe:0', '-f', 'null', '-'], {
      stdio: ['pipe', 'ignore', 'pipe'],
      signal,
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('latin1')).slice(-16_384);
    });
    child.stdin.on('error', () => undefined);
    child.on('error', () => resolve(null));
    child.on('close', () => {
      const times = [...stderr.matchAll(/time=(\d+:\d{2}:\d{2}(?:\.\d+)?)/g)];
      const last = times.at(-1)?.[1];
      if (last !== undefined && clockSeconds(last) > 0) return resolve(clockSeconds(last));
      const duration = /Duration: (\d+:\d{2}:\d{2}(?:\.\d+)?)/.exec(stderr)?.[1];
      resolve(duration !== undefined ? clockSeconds(duration) : null);
    });
    child.stdin.end(bytes);
  });
}

const MPEG1_LAYER3_KBPS = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];
const MPEG2_LAYER3_KBPS = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160];

/**
 * An estimate without ffmpeg: an Ogg stream's last granule position (48 kHz for Opus), an MP3's
 * size at the bitrate of its first frame, or 16 kB per second for anything else.
 */
export function estimateDuration(bytes: Buffer): number {
  const wav = wavDuration(bytes);
  if (wav !== null) return wav;
  if (bytes.toString('latin1', 0, 4) === 'OggS') {
    const last = bytes.lastIndexOf('OggS', undefined, 'latin1');
    if (last >= 0 && last + 14 <= bytes.length) {
      const granule = Number(bytes.readBigUInt64LE(last + 6));
      const isOpus = bytes.indexOf('OpusHead', 0, 'latin1') !== -1;
      const preSkip = isOpus ? bytes.readUInt16LE(bytes.indexOf('OpusHead', 0, 'latin1') + 10) : 0;
      if (granule > 0) return Math.max(0, granule - preSkip) / (isOpus ? 48_000 : 44_100);
    }
  }
  let offset = 0;
  if (bytes.toString('latin1', 0, 3) === 'ID3' && bytes.length >= 10) {
    offset = 10 + (((bytes[6]! & 0x7f) << 21) | ((bytes[7]! & 0x7f) << 14) | ((bytes[8]! & 0x7f) << 7) | (bytes[9]! & 0x7f));
  }
  for (let i = offset; i + 4 <= bytes.length && i < offset + 64 * 1024; i++) {
    if (bytes[i] !== 0xff || (bytes[i + 1]! & 0xe0) !== 0xe0) continue;
    const version = (bytes[i + 1]! >> 3) & 0x03; // 3 = MPEG-1
    const layer = (bytes[i + 1]! >> 1) & 0x03; // 1 = Layer III
    const bitrateIndex = bytes[i + 2]! >> 4;
    if (layer !== 1 || bitrateIndex === 0 || bitrateIndex === 15 || version === 1) continue;
    const kbps = (version === 3 ? MPEG1_LAYER3_KBPS : MPEG2_LAYER3_KBPS)[bitrateIndex] ?? 0;
    if (kbps > 0) return ((bytes.length - i) * 8) / (kbps * 1000);
  }
  return bytes.length / 16_000;
}

/**
 * How long the audio plays: exact for WAV (header) and whenever ffmpeg is available, an estimate
 * otherwise (`estimated: true`).
 */
export async function audioDuration(bytes: Buffer, ffmpeg: string | null, signal: AbortSignal): Promise<{ seconds: number; estimated: boolean }> {
  const wav = wavDuration(bytes);
  if (wav !== null) return { seconds: wav, estimated: false };
  if (ffmpeg) {
    const measured = await ffmpegDuration(ffmpeg, bytes, signal);
    if (measured !== null) return { seconds: measured, estimated: false };
  }
  return { seconds: estimateDuration(bytes), estimated: true };
}
