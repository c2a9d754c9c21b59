/**
 * Helpers shared by the local image tools: locating a package's files on disk, decoding inputs to
 * raw pixels with sharp (EXIF orientation applied), encoding PNG results, lazily loaded engines that
 * stay warm. Nothing heavy is loaded here.
 */
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { ProviderError } from '../../types';
import type { FileOutput, ToolResult } from '../../types';

/** A module-local binding: hot loops then skip a global lookup (an accessor under Jest's sandbox, ~50× slower). */
const Math = globalThis.Math;

/** The directory of an installed package (found through Node's lookup paths, exports maps ignored). */
export function packageDir(name: string): string {
  const paths = require.resolve.paths(name) ?? [];
  for (const base of paths) {
    const candidate = path.join(base, name);
    if (fs.existsSync(path.join(candidate, 'package.json'))) return candidate;
  }
  throw new Error(`Package ${name} is not installed`);
}

/** Lets other work (and abort signals) run between long synchronous steps. */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * A lazily created, cached engine: the factory runs on the first call only; concurrent first calls
 * share it; a failed load is not cached (the next call tries again) but is remembered for reports.
 */
export interface Lazy<T> {
  get(): Promise<T>;
  /** Loaded and ready. */
  readonly loaded: boolean;
  /** The last load error, or null. */
  readonly failure: Error | null;
  reset(): void;
}

export function lazy<T>(factory: () => Promise<T>): Lazy<T> {
  let pending: Promise<T> | null = null;
  let loaded = false;
  let failure: Error | null = null;
  return {
    get(): Promise<T> {
      if (!pending) {
        pending = factory().then(
          (value) => {
            loaded = true;
            failure = null;
            return value;
          },
          (error: unknown) => {
            pending = null;
            failure = error instanceof Error ? error : new Error(String(error));
            throw failure;
          },
        );
      }
      return pending;
    },
    get loaded() {
      return loaded;
    },
    get failure() {
      return failure;
    },
    reset() {
      pending = null;
      loaded = false;
    },
  };
}

/** A package that could not be loaded (missing, or its native part failed) → a non-transient provider error. */
export function engineUnavailable(tool: string, error: unknown): ProviderError {
  const detail = error instanceof Error ? error.message : String(error);
  return new ProviderError('unavailable', `The local ${tool} engine could not be loaded: ${detail}`);
}

export interface RawImage {
  data: Buffer;
  width: number;
  height: number;
  channels: number;
}

/** Decodes any image sharp reads (orientation applied) into raw 8-bit pixels with 3 or 4 channels. */
export async function decodeImage(bytes: Buffer, what: string, channels: 3 | 4): Promise<RawImage> {
  try {
    let pipeline = sharp(bytes, { failOn: 'none' }).rotate();
    pipeline = channels === 4 ? pipeline.ensureAlpha() : pipeline.removeAlpha();
    const { data, info } = await pipeline.raw().toBuffer({ resolveWithObject: true });
    return { data, width: info.width, height: info.height, channels: info.channels };
  } catch {
    throw new ProviderError('bad_request', `The ${what} could not be decoded as an image`);
  }
}

/** The decoded size (orientation applied) without decoding the pixels. */
export async function imageSize(bytes: Buffer, what: string): Promise<{ width: number; height: number; hasAlpha: boolean }> {
  try {
    const meta = await sharp(bytes, { failOn: 'none' }).metadata();
    if (!meta.width || !meta.height) throw new Error('no size');
    const rotated = (meta.orientation ?? 1) >= 5;
    return {
      width: rotated ? meta.height : meta.width,
      height: rotated ? meta.width : meta.height,
      hasAlpha: meta.hasAlpha === true,
    };
  } catch {
    throw new ProviderError('bad_request', `The ${what} could not be decoded as an image`);
  }
}

export async function encodePng(raw: RawImage): Promise<FileOutput> {
  const bytes = await sharp(raw.data, { raw: { width: raw.width, height: raw.height, channels: rawChannels(raw.channels) } })
    .png({ compressionLevel: 6 })
    .toBuffer();
  return { bytes, contentType: 'image/png', extension: 'png' };
}

/** True when every alpha byte of interleaved RGBA data is 255. */
export function isOpaque(rgba: Uint8Array): boolean {
  for (let i = 3; i < rgba.length; i += 4) if (rgba[i] !== 255) return false;
  return true;
}

/** Interleaved RGBA → RGB (alpha dropped). */
export function dropAlpha(rgba: Uint8Array, width: number, height: number): RawImage {
  const rgb = Buffer.alloc(width * height * 3);
  for (let i = 0, j = 0; i < width * height; i++, j += 4) {
    rgb[i * 3] = rgba[j];
    rgb[i * 3 + 1] = rgba[j + 1];
    rgb[i * 3 + 2] = rgba[j + 2];
  }
  return { data: rgb, width, height, channels: 3 };
}

export function imageResult(file: FileOutput, width: number, height: number): ToolResult {
  return { kind: 'image', file, width, height };
}

export function rawChannels(channels: number): 1 | 2 | 3 | 4 {
  if (channels === 1 || channels === 2 || channels === 3 || channels === 4) return channels;
  throw new Error(`Unsupported channel count ${channels}`);
}

export function clampByte(value: number): number {
  return value <= 0 ? 0 : value >= 255 ? 255 : Math.round(value);
}
