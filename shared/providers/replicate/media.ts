/**
 * What the Replicate adapter makes of a downloaded output: the file type told from its bytes
 * (never from the URL), images in the format that was asked with their size read by sharp,
 * videos with a first-frame thumbnail when ffmpeg is at hand, audio with its duration.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { encodeImage, IMAGE_FORMATS } from '../../media/image-format';
import { sniffImage, sniffAudio } from '../../media/sniff';
import { videoDimensions } from '../../media/video-size';
import { wavDuration } from '../../media/wav';
import { FileOutput, ImageRequest, ImageResult, MusicRequest, MusicResult, ProviderError, VideoRequest, VideoResult } from '../types';

const THUMBNAIL_TIMEOUT_MS = 20_000;

function unusable(what: string): ProviderError {
  return new ProviderError('unavailable', `The replicate provider returned ${what}`);
}

export function sniffVideo(bytes: Buffer): FileOutput | null {
  if (bytes.length >= 12 && bytes.toString('latin1', 4, 8) === 'ftyp') {
    const brand = bytes.toString('latin1', 8, 12);
    return brand === 'qt  ' ? { bytes, contentType: 'video/quicktime', extension: 'mov' } : { bytes, contentType: 'video/mp4', extension: 'mp4' };
  }
  if (bytes.length >= 4 && bytes.readUInt32BE(0) === 0x1a45dfa3) return { bytes, contentType: 'video/webm', extension: 'webm' };
  const image = sniffImage(bytes);
  if (image?.extension === 'gif') return { bytes, contentType: image.contentType, extension: image.extension };
  return null;
}

export async function imageResult(bytes: Buffer, request: ImageRequest): Promise<ImageResult> {
  const sniffed = sniffImage(bytes);
  if (!sniffed) throw unusable('an output that is not an image');
  const wanted = IMAGE_FORMATS[request.format];
  try {
    if (sniffed.contentType === wanted.contentType) {
      const meta = await sharp(bytes).metadata();
      if (!meta.width || !meta.height) throw new Error('no size');
      return { file: { bytes, contentType: wanted.contentType, extension: wanted.extension }, width: meta.width, height: meta.height, seed: request.seed };
    }
    const converted = await encodeImage(sharp(bytes), request.format, request.quality).toBuffer({ resolveWithObject: true });
    return {
      file: { bytes: converted.data, contentType: wanted.contentType, extension: wanted.extension },
      width: converted.info.width,
      height: converted.info.height,
      seed: request.seed,
    };
  } catch {
    throw unusable('an image that could not be decoded');
  }
}

function requestedSize(request: VideoRequest): { width: number; height: number } {
  try {
    return videoDimensions(request.aspectRatio, request.resolution);
  } catch {
    return { width: 0, height: 0 };
  }
}

/** The first frame as PNG, by ffmpeg reading a temporary file (an MP4's index may sit at its end). */
async function firstFrame(ffmpeg: string, video: FileOutput, signal: AbortSignal): Promise<Buffer | null> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'gensvc-replicate-'));
  const file = path.join(dir, `input.${video.extension}`);
  try {
    await fs.writeFile(file, video.bytes);
    return await new Promise<Buffer | null>((resolve) => {
      const child = spawn(ffmpeg, ['-hide_banner', '-loglevel', 'error', '-nostdin', '-i', file, '-frames:v', '1', '-f', 'image2pipe', '-c:v', 'png', 'pipe:1'], {
        stdio: ['ignore', 'pipe', 'ignore'],
        signal: AbortSignal.any([signal, AbortSignal.timeout(THUMBNAIL_TIMEOUT_MS)]),
      });
      const chunks: Buffer[] = [];
      child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
      child.on('error', () => resolve(null));
      child.on('close', (code) => resolve(code === 0 && chunks.length > 0 ? Buffer.concat(chunks) : null));
    });
  } finally {
    await fs.rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** The video, its size (measured from the first frame; else the size that was asked) and a WebP thumbnail when ffmpeg can make one. */
export async function videoResult(bytes: Buffer, request: VideoRequest, ffmpeg: string | null, signal: AbortSignal): Promise<VideoResult> {
  const file = sniffVideo(bytes);
  if (!file) throw unusable('an output that is not a video');
  let size = requestedSize(request);
  let thumbnail: FileOutput | null = null;
  const frame = ffmpeg ? await firstFrame(ffmpeg, file, signal) : null;
  if (frame) {
    try {
      const encoded = await sharp(frame).webp({ quality: 80 }).toBuffer({ resolveWithObject: true });
      thumbnail = { bytes: encoded.data, contentType: 'image/webp', extension: 'webp' };
      size = { width: encoded.info.width, height: encoded.info.height };
    } catch {
      // no thumbnail then; the video itself is fine
    }
  }
  return { file, thumbnail, width: size.width, height: size.height, durationSeconds: request.durationSeconds };
}

export function musicResult(bytes: Buffer, request: MusicRequest): MusicResult {
  const sniffed = sniffAudio(bytes);
  if (!sniffed) throw unusable('an output that is not audio');
  return { file: { bytes, contentType: sniffed.contentType, extension: sniffed.extension }, durationSeconds: wavDuration(bytes) ?? request.durationSeconds };
}
