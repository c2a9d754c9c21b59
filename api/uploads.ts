/**
 * multipart/form-data for /stt, /tools and /inpaint. Sizes are enforced by formidable while the
 * body streams to a temporary file (413 as soon as a limit is passed); types are told from the
 * bytes (415); images are checked against a pixel limit before anything decodes them.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import type { Middleware, Next } from 'koa';
import { HttpMethodEnum, koaBody } from 'koa-body';
import sharp from 'sharp';
import { AppError } from '../shared/errors';
import { SniffedType, sniffAudio, sniffImage } from '../shared/media/sniff';
import type { AppContext, AppCustom, AppState } from './context';

export const MAX_UPLOAD_BYTES = 25 * 1024 * 1024;
/** Larger images are refused before decoding (decompression bombs). */
export const MAX_IMAGE_PIXELS = 40_000_000;

interface UploadedFile {
  filepath: string;
  size: number;
}

function formidableStatus(error: unknown): number | undefined {
  const e = error as { httpCode?: number; status?: number };
  return e.httpCode ?? e.status;
}

/** Formidable's codes for a form with too many parts (its other 413s are about sizes). */
const TOO_MANY_FILES = 1015;
const TOO_MANY_FIELDS = 1007;

/** Which limit a 413 from formidable passed, in words that say how to fix the request. */
function tooLarge(error: Error, maxFiles: number): string {
  const code = (error as { code?: number }).code;
  if (code === TOO_MANY_FILES) return `At most ${maxFiles} file${maxFiles === 1 ? '' : 's'} may be sent`;
  if (code === TOO_MANY_FIELDS) return 'The form has too many fields';
  return `Files may be at most ${MAX_UPLOAD_BYTES / 1024 / 1024} MB`;
}

export function multipartBody(maxFiles: number): Middleware<AppState, AppCustom> {
  const parse = koaBody({
    multipart: true,
    json: false,
    urlencoded: false,
    text: false,
    parsedMethods: [HttpMethodEnum.POST],
    formidable: {
      uploadDir: os.tmpdir(),
      maxFileSize: MAX_UPLOAD_BYTES,
      maxTotalFileSize: MAX_UPLOAD_BYTES * maxFiles,
      maxFiles,
      maxFields: 20,
      maxFieldsSize: 64 * 1024,
      allowEmptyFiles: false,
    },
    onError: (error) => {
      const status = formidableStatus(error);
      if (status === 413) throw new AppError('payload_too_large', { detail: tooLarge(error, maxFiles) });
      throw AppError.validation('(body)', /empty/i.test(error.message) ? 'the file is empty' : 'malformed multipart body');
    },
  });
  return async (ctx: AppContext, next: Next) => {
    if (!ctx.is('multipart/form-data')) throw new AppError('unsupported_media_type', { detail: 'Send multipart/form-data' });
    await parse(ctx, async () => undefined);
    try {
      await next();
    } finally {
      // Uploaded bytes live in storage from here on; the temporary files go.
      for (const file of Object.values(ctx.request.files ?? {}).flat() as UploadedFile[]) {
        await fs.rm(file.filepath, { force: true }).catch(() => undefined);
      }
    }
  };
}

export function formField(ctx: AppContext, name: string): string | undefined {
  const value = (ctx.request.body as Record<string, unknown> | undefined)?.[name];
  if (Array.isArray(value)) return typeof value[0] === 'string' ? value[0] : undefined;
  return typeof value === 'string' ? value : undefined;
}

export interface UploadedMedia {
  bytes: Buffer;
  type: SniffedType;
}

async function fileBytes(ctx: AppContext, name: string, required: boolean): Promise<Buffer | null> {
  const entry = ctx.request.files?.[name];
  const file = (Array.isArray(entry) ? entry[0] : entry) as UploadedFile | undefined;
  if (!file) {
    if (required) throw AppError.validation(name, 'a file is required');
    return null;
  }
  if (file.size === 0) throw AppError.validation(name, 'the file is empty');
  return fs.readFile(file.filepath);
}

export async function uploadedAudio(ctx: AppContext, name: string): Promise<UploadedMedia> {
  const bytes = (await fileBytes(ctx, name, true)) as Buffer;
  const type = sniffAudio(bytes);
  if (!type) throw new AppError('unsupported_media_type', { detail: `${name}: not an audio file (mp3, mp4/m4a, wav, ogg, flac, webm)` });
  return { bytes, type };
}

export async function uploadedImage(ctx: AppContext, name: string, required = true): Promise<UploadedMedia | null> {
  const bytes = await fileBytes(ctx, name, required);
  if (!bytes) return null;
  const type = sniffImage(bytes);
  if (!type) throw new AppError('unsupported_media_type', { detail: `${name}: not an image (png, jpeg, webp, gif)` });
  let metadata: sharp.Metadata;
  try {
    metadata = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch {
    throw AppError.validation(name, 'the image cannot be read (truncated or corrupt)');
  }
  const pixels = (metadata.width ?? 0) * (metadata.height ?? 0);
  if (!pixels) throw AppError.validation(name, 'the image has no size');
  if (pixels > MAX_IMAGE_PIXELS) throw AppError.validation(name, `the image has more than ${MAX_IMAGE_PIXELS / 1_000_000} megapixels`);
  // Decode once, so a truncated file is refused here rather than by a tool later.
  try {
    await sharp(bytes).stats();
  } catch {
    throw AppError.validation(name, 'the image cannot be read (truncated or corrupt)');
  }
  return { bytes, type };
}
