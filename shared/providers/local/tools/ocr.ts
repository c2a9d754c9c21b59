/**
 * `ocr`: Tesseract 5 (LSTM engine) compiled to WebAssembly by tesseract.js, with the English
 * `4.0.0_best_int` traineddata shipped by `@tesseract.js-data/eng`. One worker thread is created on
 * first use and kept warm; recognitions are queued on it one at a time. `langPath` + `cacheMethod:
 * 'none'` keep it from fetching language data from a CDN.
 */
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { throwIfAborted } from '../../abort';
import { ProviderError } from '../../types';
import type { CallOptions, ToolResult } from '../../types';
import { engineUnavailable, lazy, packageDir } from './common';

type Tesseract = typeof import('tesseract.js');
type TesseractWorker = Awaited<ReturnType<Tesseract['createWorker']>>;

function langDir(): string {
  return path.join(packageDir('@tesseract.js-data/eng'), '4.0.0_best_int');
}

const worker = lazy(async (): Promise<{ worker: TesseractWorker }> => {
  const tesseract: Tesseract = require('tesseract.js');
  const created = await tesseract.createWorker('eng', tesseract.OEM.LSTM_ONLY, {
    langPath: langDir(),
    gzip: true,
    cacheMethod: 'none',
  });
  return { worker: created };
});

let queue: Promise<unknown> = Promise.resolve();

export function ocrAvailable(): boolean {
  if (worker.failure !== null) return false;
  try {
    require.resolve('tesseract.js');
    return fs.existsSync(path.join(langDir(), 'eng.traineddata.gz'));
  } catch {
    return false;
  }
}

/** Ends the worker thread (tests, shutdown); the next call starts a new one. */
export async function closeOcr(): Promise<void> {
  if (!worker.loaded) return;
  const { worker: running } = await worker.get();
  worker.reset();
  await running.terminate();
}

/** Text as Tesseract reads it: trailing spaces trimmed, runs of blank lines collapsed. */
function tidyText(text: string): string {
  return text
    .split('\n')
    .map((line) => line.replace(/\s+$/, ''))
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

export async function runOcr(image: Buffer, options: CallOptions): Promise<ToolResult> {
  let png: Buffer;
  try {
    // Transparent areas read as paper; small images get more pixels per glyph.
    const pipeline = sharp(image, { failOn: 'none' }).rotate().flatten({ background: '#ffffff' });
    const meta = await sharp(image, { failOn: 'none' }).metadata();
    const longest = Math.max(meta.width ?? 0, meta.height ?? 0);
    png = await (longest > 0 && longest < 600 ? pipeline.resize({ width: (meta.width ?? 0) * 2, kernel: 'lanczos3' }) : pipeline)
      .png()
      .toBuffer();
  } catch {
    throw new ProviderError('bad_request', 'The image could not be decoded as an image');
  }
  throwIfAborted(options.signal);
  let loaded: { worker: TesseractWorker };
  try {
    loaded = await worker.get();
  } catch (error) {
    throw engineUnavailable('ocr', error);
  }
  options.onProgress?.(20);
  const job = queue.then(() => {
    throwIfAborted(options.signal);
    return loaded.worker.recognize(png);
  });
  queue = job.catch(() => undefined);
  const result = await job;
  return { kind: 'text', text: tidyText(result.data.text) };
}
