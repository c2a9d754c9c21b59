/**
 * The built-in offline video "model": a slow zoom (ffmpeg `zoompan`) over the picture the local
 * image provider draws for the prompt and seed (or over `startImage`), encoded as H.264 + yuv420p
 * MP4 with `+faststart`, plus a JPEG thumbnail of the first frame.
 *
 * Sizes (`videoDimensions()`, shared/media/video-size.ts): the short side is the resolution (`480p`
 * → 480, `720p` → 720, `1080p` → 1080; an empty resolution means 720p), the long side follows the
 * aspect ratio, both rounded to even numbers.
 * The duration is exact: round(seconds × 25) frames at 25 fps.
 *
 * ffmpeg: the system `ffmpeg` when `ffmpeg -version` runs, else the static binary inside the npm
 * package `@ffmpeg-installer/ffmpeg`; see `findFfmpeg()` in shared/media/executables.ts.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { findFfmpeg } from '../../media/executables';
import { evenSide, videoDimensions } from '../../media/video-size';
import { hashString, seededRng } from '../../random';
import { abortError } from '../abort';
import { ProviderError } from '../types';
import type { CallOptions, VideoProvider, VideoRequest, VideoResult } from '../types';
import { LocalImageProvider, MAX_IMAGE_SIDE } from './image';

export const VIDEO_FPS = 25;
export const MAX_VIDEO_SECONDS = 60;
/** The still is drawn larger than the video so zoompan's whole-pixel crop steps stay small. */
const OVERSAMPLE = 2;
const ZOOM_RANGE = 0.22;

// ---------------------------------------------------------------------------------------------
// Running ffmpeg
// ---------------------------------------------------------------------------------------------

/**
 * Runs ffmpeg to the end. `options.signal` kills it (SIGKILL) and rejects with the abort reason;
 * a non-zero exit rejects with a ProviderError carrying the end of stderr. `-progress pipe:1`
 * lines (`frame=N`) go to `onFrame`.
 */
function runFfmpeg(binary: string, args: string[], signal: AbortSignal, onFrame?: (frame: number) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(abortError(signal));
      return;
    }
    const child = spawn(binary, args, { signal, killSignal: 'SIGKILL', stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    let spawnError: Error | null = null;
    let pending = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        const match = /^frame=(\d+)/.exec(line.trim());
        if (match && onFrame) onFrame(Number(match[1]));
      }
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-4000);
    });
    child.on('error', (error) => {
      spawnError = error;
      // A process that never started emits no 'close' of its own on every platform: settle here.
      if (child.pid === undefined) reject(new ProviderError('unavailable', `ffmpeg could not be started: ${error.message}`));
    });
    child.on('close', (code, killedBy) => {
      if (signal.aborted) reject(abortError(signal));
      else if (code === 0) resolve();
      else if (spawnError && child.pid === undefined) return;
      else reject(new ProviderError('unavailable', `ffmpeg failed (${code ?? killedBy ?? 'unknown'}): ${stderr.trim().split('\n').slice(-3).join(' | ')}`));
    });
  });
}

// ---------------------------------------------------------------------------------------------
// The provider
// ---------------------------------------------------------------------------------------------

interface Motion {
  zoomFrom: number;
  zoomTo: number;
  /** Where the crop sits within the slack, 0..1 on each axis. */
  focusX: number;
  focusY: number;
}

function motionFor(request: VideoRequest): Motion {
  const rng = seededRng(hashString(`motion\u0000${request.prompt}`, request.seed >>> 0));
  const zoomIn = rng() < 0.7;
  const focusX = 0.3 + rng() * 0.4;
  const focusY = 0.3 + rng() * 0.4;
  return zoomIn ? { zoomFrom: 1, zoomTo: 1 + ZOOM_RANGE, focusX, focusY } : { zoomFrom: 1 + ZOOM_RANGE, zoomTo: 1, focusX, focusY };
}

export class LocalVideoProvider implements VideoProvider {
  private readonly images = new LocalImageProvider();

  async generate(request: VideoRequest, options: CallOptions): Promise<VideoResult> {
    const { signal } = options;
    if (signal.aborted) throw abortError(signal);
    const seconds = request.durationSeconds;
    if (!Number.isFinite(seconds) || seconds <= 0 || seconds > MAX_VIDEO_SECONDS) {
      throw new ProviderError('bad_request', `duration must be more than 0 and at most ${MAX_VIDEO_SECONDS} seconds, got ${seconds}`);
    }
    const { width, height } = videoDimensions(request.aspectRatio, request.resolution);
    const ffmpeg = findFfmpeg();
    if (!ffmpeg) throw new ProviderError('unavailable', 'ffmpeg is not available: install the system ffmpeg or the npm package @ffmpeg-installer/ffmpeg');

    const frames = Math.max(1, Math.round(seconds * VIDEO_FPS));
    const scale = Math.min(OVERSAMPLE, MAX_IMAGE_SIDE / Math.max(width, height));
    const stillWidth = evenSide(width * scale);
    const stillHeight = evenSide(height * scale);

    const still = await this.still(request, stillWidth, stillHeight, signal);
    options.onProgress?.(10);

    const motion = motionFor(request);
    const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'gensvc-video-'));
    try {
      const stillPath = path.join(dir, 'still.png');
      const outPath = path.join(dir, 'out.mp4');
      await fs.promises.writeFile(stillPath, still);

      const last = Math.max(1, frames - 1);
      const zoom = `${motion.zoomFrom}+${(motion.zoomTo - motion.zoomFrom).toFixed(6)}*on/${last}`;
      const filter = [
        `zoompan=z='${zoom}'` +
          `:x='(iw-iw/zoom)*${motion.focusX.toFixed(4)}'` +
          `:y='(ih-ih/zoom)*${motion.focusY.toFixed(4)}'` +
          `:d=${frames}:s=${width}x${height}:fps=${VIDEO_FPS}`,
        'setsar=1',
        'format=yuv420p',
      ].join(',');
      const args = [
        '-hide_banner', '-nostdin', '-y', '-loglevel', 'error', '-nostats', '-progress', 'pipe:1',
        '-i', stillPath,
        '-vf', filter,
        '-frames:v', String(frames),
        '-r', String(VIDEO_FPS),
        '-c:v', 'libx264', '-preset', 'veryfast', '-crf', '23', '-pix_fmt', 'yuv420p', '-profile:v', 'high',
        '-an', '-movflags', '+faststart',
        outPath,
      ];
      await runFfmpeg(ffmpeg, args, signal, (frame) => options.onProgress?.(Math.min(98, 10 + Math.round((frame / frames) * 88))));
      const bytes = await fs.promises.readFile(outPath);
      const thumbnail = await this.firstFrame(still, stillWidth, stillHeight, width, height, motion);
      options.onProgress?.(100);
      return {
        file: { bytes, contentType: 'video/mp4', extension: 'mp4' },
        thumbnail: { bytes: thumbnail, contentType: 'image/jpeg', extension: 'jpg' },
        width,
        height,
        durationSeconds: frames / VIDEO_FPS,
      };
    } finally {
      await fs.promises.rm(dir, { recursive: true, force: true });
    }
  }

  /** The picture to move over, as PNG at exactly stillWidth×stillHeight. */
  private async still(request: VideoRequest, stillWidth: number, stillHeight: number, signal: AbortSignal): Promise<Buffer> {
    if (request.startImage) {
      try {
        return await sharp(request.startImage).rotate().resize(stillWidth, stillHeight, { fit: 'cover' }).removeAlpha().png().toBuffer();
      } catch (error) {
        throw new ProviderError('bad_request', `the start image could not be read: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    const image = await this.images.generate(
      {
        upstreamModel: request.upstreamModel,
        prompt: request.prompt,
        negativePrompt: request.negativePrompt,
        width: stillWidth,
        height: stillHeight,
        aspectRatio: request.aspectRatio,
        format: 'png',
        quality: 'standard',
        style: null,
        seed: request.seed,
        inputImage: null,
      },
      { signal },
    );
    return image.file.bytes;
  }

  /** The first frame as JPEG: the crop zoompan starts from, scaled to the video size. */
  private async firstFrame(still: Buffer, stillWidth: number, stillHeight: number, width: number, height: number, motion: Motion): Promise<Buffer> {
    const cropWidth = Math.min(stillWidth, Math.round(stillWidth / motion.zoomFrom));
    const cropHeight = Math.min(stillHeight, Math.round(stillHeight / motion.zoomFrom));
    const left = Math.floor((stillWidth - cropWidth) * motion.focusX);
    const top = Math.floor((stillHeight - cropHeight) * motion.focusY);
    return sharp(still)
      .extract({ left, top, width: cropWidth, height: cropHeight })
      .resize(width, height, { fit: 'fill' })
      .jpeg({ quality: 82 })
      .toBuffer();
  }
}
