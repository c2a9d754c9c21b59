/**
 * `upscale-esrgan`: super-resolution with the ESRGAN-family networks shipped inside
 * `@upscalerjs/esrgan-slim` (an RDN generator, C1-D2-G4-G0=64, trained on DIV2K; input and output in
 * 0–255), run on TensorFlow.js (wasm backend). The layers model is read from the package's own
 * model.json + weights via `tf.io.fromMemory` (UpscalerJS's `upscaler/node` needs tfjs-node).
 *
 * ×4 runs the ×4 network. ×2 runs the same ×4 network and reduces its output by half with Lanczos
 * (supersampling): on our measurements that is sharper and closer to the ground truth than the
 * package's ×2 network (which is no sharper than a Lanczos resize), for ~1.3× the time.
 *
 * The image is cut into 128 px tiles with 8 px of context on each side; each tile is upscaled on
 * its own and its centre is stitched in, so memory stays flat and no seams show. Alpha, if any, is
 * enlarged separately with Lanczos. Inputs above a pixel cap per scale are refused (bad_request);
 * the adapter runs the same check at acceptance (`upscaleInputProblem`), before anything is held.
 */
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { throwIfAborted } from '../../abort';
import { ProviderError } from '../../types';
import type { CallOptions, ToolResult } from '../../types';
import { clampByte, decodeImage, dropAlpha, encodePng, imageResult, imageSize, isOpaque, lazy, packageDir, yieldToEventLoop } from './common';
import type { Lazy } from './common';
import { loadTf, tfLoadFailed } from './tf';
import type { Tf } from './tf';

/** A module-local binding: hot loops then skip a global lookup (an accessor under Jest's sandbox, ~50× slower). */
const Math = globalThis.Math;

export const UPSCALE_SCALES = [2, 4] as const;
export type UpscaleScale = (typeof UPSCALE_SCALES)[number];

/**
 * Largest input (width × height) per scale, chosen so one warm request takes a few seconds on 2
 * cores: both scales run the ×4 network, whose cost is per input pixel (~27 µs a pixel with tiling
 * on the wasm backend): ×2 of 384×384 → 768×768 in ~4 s, ×4 of 256×256 → 1024×1024 in ~1.7 s
 * (512×512 at ×2 would take ~7 s). The first request adds the model load (~1–2 s).
 */
export const UPSCALE_MAX_INPUT_PIXELS: Readonly<Record<UpscaleScale, number>> = { 2: 384 * 384, 4: 256 * 256 };
/** The same caps as a side length of a square, for messages. */
export const UPSCALE_MAX_INPUT_SIDE: Readonly<Record<UpscaleScale, number>> = { 2: 384, 4: 256 };

const TILE = 128;
const CONTEXT = 8;
/** The network actually run for each requested scale (see the header). */
const NETWORK_SCALE: Readonly<Record<UpscaleScale, number>> = { 2: 4, 4: 4 };

export function parseUpscaleScale(value: unknown): UpscaleScale {
  if (value === undefined || value === null || value === '') return 2;
  const n = typeof value === 'string' ? Number(value.trim().replace(/^x/i, '')) : value;
  if (n === 2 || n === 4) return n;
  throw new ProviderError('bad_request', 'scale must be 2 or 4');
}

/** Null when the input can be upscaled at this scale, else the reason (names the limit). */
export function checkUpscaleInput(width: number, height: number, scale: number): string | null {
  if (scale !== 2 && scale !== 4) return 'scale must be 2 or 4';
  if (!Number.isFinite(width) || !Number.isFinite(height) || width < 1 || height < 1) return 'The image has no size';
  const cap = UPSCALE_MAX_INPUT_PIXELS[scale];
  if (width * height > cap) {
    const side = UPSCALE_MAX_INPUT_SIDE[scale];
    return `The image is too large to upscale ×${scale}: ${width}×${height} is ${width * height} pixels, at most ${cap} (${side}×${side}) are accepted`;
  }
  return null;
}

/** Null when the image (its bytes) can be upscaled at `scale` (default 2), else the reason. */
export async function upscaleInputProblem(image: Buffer, scale: unknown): Promise<string | null> {
  const { width = 0, height = 0 } = await sharp(image).metadata().catch(() => ({ width: 0, height: 0 }));
  return checkUpscaleInput(width, height, scale === 4 ? 4 : 2);
}

type LayersModel = Awaited<ReturnType<Tf['loadLayersModel']>>;

function modelFiles(networkScale: number): { json: string; weights: string } {
  const dir = path.join(packageDir('@upscalerjs/esrgan-slim'), 'models', `x${networkScale}`);
  return { json: path.join(dir, 'model.json'), weights: path.join(dir, 'group1-shard1of1.bin') };
}

interface ModelJson {
  modelTopology: object;
  weightsManifest: { paths: string[]; weights: import('@tensorflow/tfjs').io.WeightsManifestEntry[] }[];
}

async function loadNetwork(networkScale: number): Promise<{ tf: Tf; model: LayersModel }> {
  const tf = await loadTf();
  const files = modelFiles(networkScale);
  const manifest = JSON.parse(await fs.promises.readFile(files.json, 'utf8')) as ModelJson;
  const dir = path.dirname(files.json);
  const buffers = await Promise.all(manifest.weightsManifest.flatMap((group) => group.paths).map((p) => fs.promises.readFile(path.join(dir, p))));
  const joined = Buffer.concat(buffers);
  const weightData = joined.buffer.slice(joined.byteOffset, joined.byteOffset + joined.byteLength);
  const model = await tf.loadLayersModel(
    tf.io.fromMemory({
      modelTopology: manifest.modelTopology,
      weightSpecs: manifest.weightsManifest.flatMap((group) => group.weights),
      weightData,
    }),
  );
  return { tf, model };
}

const networks = new Map<number, Lazy<{ tf: Tf; model: LayersModel }>>();

function network(networkScale: number): Lazy<{ tf: Tf; model: LayersModel }> {
  let entry = networks.get(networkScale);
  if (!entry) {
    entry = lazy(() => loadNetwork(networkScale));
    networks.set(networkScale, entry);
  }
  return entry;
}

/** True when the package and its weight files are present (nothing is loaded). */
export function upscaleAvailable(): boolean {
  if (tfLoadFailed() || [...networks.values()].some((entry) => entry.failure !== null)) return false;
  try {
    require.resolve('@tensorflow/tfjs');
    require.resolve('@tensorflow/tfjs-backend-wasm');
    const files = modelFiles(4);
    return fs.existsSync(files.json) && fs.existsSync(files.weights);
  } catch {
    return false;
  }
}

/** Runs the network over `rgb` (HWC, 3 channels) tile by tile; returns the enlarged HWC bytes. */
async function upscaleRgb(
  tf: Tf,
  model: LayersModel,
  rgb: Buffer,
  width: number,
  height: number,
  scale: number,
  options: CallOptions,
): Promise<Buffer> {
  const outWidth = width * scale;
  const out = Buffer.alloc(outWidth * height * scale * 3);
  const tilesX = Math.ceil(width / TILE);
  const tilesY = Math.ceil(height / TILE);
  let done = 0;
  for (let ty = 0; ty < tilesY; ty++) {
    for (let tx = 0; tx < tilesX; tx++) {
      throwIfAborted(options.signal);
      const coreX = tx * TILE;
      const coreY = ty * TILE;
      const coreW = Math.min(TILE, width - coreX);
      const coreH = Math.min(TILE, height - coreY);
      const x0 = Math.max(0, coreX - CONTEXT);
      const y0 = Math.max(0, coreY - CONTEXT);
      const x1 = Math.min(width, coreX + coreW + CONTEXT);
      const y1 = Math.min(height, coreY + coreH + CONTEXT);
      const tw = x1 - x0;
      const th = y1 - y0;
      const input = new Float32Array(tw * th * 3);
      for (let y = 0; y < th; y++) {
        const src = ((y0 + y) * width + x0) * 3;
        for (let i = 0; i < tw * 3; i++) input[y * tw * 3 + i] = rgb[src + i];
      }
      const output = tf.tidy(() => {
        const prediction = model.predict(tf.tensor4d(input, [1, th, tw, 3]));
        if (Array.isArray(prediction)) throw new Error('The upscaling network returned several outputs');
        return prediction.clone();
      });
      const values = await output.data();
      output.dispose();
      const ow = tw * scale;
      const offX = (coreX - x0) * scale;
      const offY = (coreY - y0) * scale;
      for (let y = 0; y < coreH * scale; y++) {
        const src = ((offY + y) * ow + offX) * 3;
        const dst = ((coreY * scale + y) * outWidth + coreX * scale) * 3;
        for (let i = 0; i < coreW * scale * 3; i++) out[dst + i] = clampByte(values[src + i]);
      }
      done++;
      options.onProgress?.(Math.min(95, 5 + Math.round((done / (tilesX * tilesY)) * 90)));
      await yieldToEventLoop();
    }
  }
  return out;
}

export async function runUpscale(image: Buffer, params: Record<string, unknown>, options: CallOptions): Promise<ToolResult> {
  const scale = parseUpscaleScale(params.scale);
  const size = await imageSize(image, 'image');
  const refusal = checkUpscaleInput(size.width, size.height, scale);
  if (refusal) throw new ProviderError('bad_request', refusal);
  throwIfAborted(options.signal);

  const networkScale = NETWORK_SCALE[scale];
  const { tf, model } = await network(networkScale).get();
  throwIfAborted(options.signal);

  const rgba = await decodeImage(image, 'image', 4);
  const { width, height } = rgba;
  const rgb = dropAlpha(rgba.data, width, height).data;
  const opaque = isOpaque(rgba.data);

  const netOut = await upscaleRgb(tf, model, rgb, width, height, networkScale, options);
  const outWidth = width * scale;
  const outHeight = height * scale;
  let enlarged: Buffer = netOut;
  if (networkScale !== scale) {
    enlarged = await sharp(netOut, { raw: { width: width * networkScale, height: height * networkScale, channels: 3 } })
      .resize(outWidth, outHeight, { kernel: 'lanczos3', fit: 'fill' })
      .raw()
      .toBuffer();
  }
  throwIfAborted(options.signal);

  if (opaque) {
    const file = await encodePng({ data: enlarged, width: outWidth, height: outHeight, channels: 3 });
    return imageResult(file, outWidth, outHeight);
  }
  const alpha = Buffer.alloc(width * height);
  for (let i = 0; i < width * height; i++) alpha[i] = rgba.data[i * 4 + 3];
  const bigAlpha = await sharp(alpha, { raw: { width, height, channels: 1 } })
    .resize(outWidth, outHeight, { kernel: 'lanczos3', fit: 'fill' })
    .extractChannel(0) // sharp widens one raw channel to three otherwise
    .raw()
    .toBuffer();
  const withAlpha = Buffer.alloc(outWidth * outHeight * 4);
  for (let i = 0; i < outWidth * outHeight; i++) {
    withAlpha[i * 4] = enlarged[i * 3];
    withAlpha[i * 4 + 1] = enlarged[i * 3 + 1];
    withAlpha[i * 4 + 2] = enlarged[i * 3 + 2];
    withAlpha[i * 4 + 3] = bigAlpha[i];
  }
  const file = await encodePng({ data: withAlpha, width: outWidth, height: outHeight, channels: 4 });
  return imageResult(file, outWidth, outHeight);
}
