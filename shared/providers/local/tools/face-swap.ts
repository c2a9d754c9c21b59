/**
 * `face-swap`: classic face replacement guided by detected landmarks. Faces and 68 landmarks are
 * found with `@vladmandic/face-api` (SSD-MobileNet v1 detector + the 68-point landmark net, weights
 * shipped in the package, run on TensorFlow.js wasm); the largest face of each image is used. The
 * source face (`image`) is warped onto the target face (`secondImage`) triangle by triangle (a
 * piecewise-affine warp over the Delaunay triangulation of the target's landmarks), its colours are
 * moved to the target's skin (Reinhard transfer in L*a*b* over the face region) and it is cloned
 * into the target seamlessly by mean-value coordinates (the membrane of Poisson cloning), feathered
 * at the outline. The region is the convex hull of the jaw line and brows, slightly shrunk.
 */
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { throwIfAborted } from '../../abort';
import { ProviderError } from '../../types';
import type { CallOptions, ToolResult } from '../../types';
import { decodeImage, encodePng, engineUnavailable, imageResult, lazy, packageDir } from './common';
import type { RawImage } from './common';
import { boundingBox, cloneSeamless, convexHull, delaunay, transferColour, warpPiecewiseAffine } from './face-geometry';
import type { Point } from './face-geometry';
import { loadTf, tfLoadFailed } from './tf';

/** A module-local binding: hot loops then skip a global lookup (an accessor under Jest's sandbox, ~50× slower). */
const Math = globalThis.Math;

type FaceApi = typeof import('@vladmandic/face-api/dist/face-api.node-wasm.js');

/** Detection runs on a copy at most this large (landmarks are scaled back). */
const DETECT_MAX_SIDE = 1024;
const MIN_CONFIDENCE = 0.5;
/** The face region is the landmark hull shrunk towards its centre by this fraction. */
const HULL_SHRINK = 0.04;
/** Feathered band, as a fraction of the face's size. */
const FEATHER = 0.06;

function modelDir(): string {
  return path.join(packageDir('@vladmandic/face-api'), 'model');
}

const detector = lazy(async (): Promise<{ faceapi: FaceApi }> => {
  await loadTf();
  const faceapi: FaceApi = require('@vladmandic/face-api/dist/face-api.node-wasm.js');
  await faceapi.nets.ssdMobilenetv1.loadFromDisk(modelDir());
  await faceapi.nets.faceLandmark68Net.loadFromDisk(modelDir());
  return { faceapi };
});

const recogniser = lazy(async (): Promise<{ faceapi: FaceApi }> => {
  const { faceapi } = await detector.get();
  await faceapi.nets.faceRecognitionNet.loadFromDisk(modelDir());
  return { faceapi };
});

export function faceSwapAvailable(): boolean {
  if (tfLoadFailed() || detector.failure !== null) return false;
  try {
    require.resolve('@tensorflow/tfjs');
    require.resolve('@tensorflow/tfjs-backend-wasm');
    const dir = modelDir();
    return ['ssd_mobilenetv1_model.bin', 'face_landmark_68_model.bin'].every((file) => fs.existsSync(path.join(dir, file)));
  } catch {
    return false;
  }
}

export interface DetectedFace {
  box: { x: number; y: number; width: number; height: number };
  score: number;
  /** 68 landmarks (iBUG 300-W order) in the image's pixel coordinates. */
  landmarks: Point[];
}

async function withInputTensor<T>(faceapi: FaceApi, image: RawImage, body: (input: ReturnType<FaceApi['tf']['tensor3d']>, scale: number) => Promise<T>): Promise<T> {
  const factor = Math.min(1, DETECT_MAX_SIDE / Math.max(image.width, image.height));
  let data: Uint8Array = image.data;
  let width = image.width;
  let height = image.height;
  if (factor < 1) {
    width = Math.max(1, Math.round(image.width * factor));
    height = Math.max(1, Math.round(image.height * factor));
    data = await sharp(image.data, { raw: { width: image.width, height: image.height, channels: 3 } })
      .resize(width, height, { fit: 'fill' })
      .raw()
      .toBuffer();
  }
  const input = faceapi.tf.tensor3d(Int32Array.from(data), [height, width, 3], 'int32');
  try {
    return await body(input, image.width / width);
  } finally {
    input.dispose();
  }
}

/** The largest face with its landmarks, or null. `image` is RGB (3 channels). */
export async function detectLargestFace(image: RawImage): Promise<DetectedFace | null> {
  const { faceapi } = await detector.get();
  return withInputTensor(faceapi, image, async (input, scale) => {
    const results = await faceapi.detectAllFaces(input, new faceapi.SsdMobilenetv1Options({ minConfidence: MIN_CONFIDENCE })).withFaceLandmarks();
    let best: DetectedFace | null = null;
    for (const result of results) {
      const box = result.detection.box;
      const face: DetectedFace = {
        box: { x: box.x * scale, y: box.y * scale, width: box.width * scale, height: box.height * scale },
        score: result.detection.score,
        landmarks: result.landmarks.positions.map((p) => [p.x * scale, p.y * scale] as const),
      };
      if (!best || face.box.width * face.box.height > best.box.width * best.box.height) best = face;
    }
    return best;
  });
}

/** face-api's 128-d descriptor of the largest face in an encoded image, or null (diagnostics, tests). */
export async function faceDescriptor(bytes: Buffer): Promise<Float32Array | null> {
  const image = await decodeImage(bytes, 'image', 3);
  const { faceapi } = await recogniser.get();
  return withInputTensor(faceapi, image, async (input) => {
    const results = await faceapi.detectAllFaces(input, new faceapi.SsdMobilenetv1Options({ minConfidence: MIN_CONFIDENCE })).withFaceLandmarks().withFaceDescriptors();
    let best: { area: number; descriptor: Float32Array } | null = null;
    for (const result of results) {
      const area = result.detection.box.width * result.detection.box.height;
      if (!best || area > best.area) best = { area, descriptor: result.descriptor };
    }
    return best ? best.descriptor : null;
  });
}

/**
 * Puts the face of `source` onto the face of `target` (both RGB, landmarks given); returns the
 * target's RGB bytes with the face replaced.
 */
export function swapFace(source: RawImage, sourceLandmarks: readonly Point[], target: RawImage, targetLandmarks: readonly Point[]): Buffer {
  const hull = convexHull(targetLandmarks);
  let cx = 0;
  let cy = 0;
  for (const [x, y] of hull) {
    cx += x;
    cy += y;
  }
  cx /= hull.length;
  cy /= hull.length;
  const { minX, minY, maxX, maxY } = boundingBox(targetLandmarks);
  const faceSize = Math.max(maxX - minX, maxY - minY);
  // Work on a crop of the target around the face.
  const margin = 4;
  const x0 = Math.max(0, Math.floor(minX) - margin);
  const y0 = Math.max(0, Math.floor(minY) - margin);
  const x1 = Math.min(target.width, Math.ceil(maxX) + margin + 1);
  const y1 = Math.min(target.height, Math.ceil(maxY) + margin + 1);
  const width = x1 - x0;
  const height = y1 - y0;
  const out = Buffer.from(target.data);
  if (width < 4 || height < 4) return out;
  const crop = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) crop.set(target.data.subarray(((y0 + y) * target.width + x0) * 3, ((y0 + y) * target.width + x1) * 3), y * width * 3);

  const local = targetLandmarks.map(([x, y]) => [x - x0, y - y0] as const);
  const polygon = hull.map(([x, y]) => [cx + (x - cx) * (1 - HULL_SHRINK) - x0, cy + (y - cy) * (1 - HULL_SHRINK) - y0] as const);
  const warped = warpPiecewiseAffine({ data: source.data, width: source.width, height: source.height }, sourceLandmarks, local, width, height, delaunay(local));

  const mask = new Uint8Array(width * height);
  for (let p = 0; p < mask.length; p++) mask[p] = warped.covered[p];
  // Where the warp left holes (degenerate triangles), take the target itself.
  for (let p = 0; p < mask.length; p++) {
    if (!warped.covered[p]) {
      warped.data[p * 3] = crop[p * 3];
      warped.data[p * 3 + 1] = crop[p * 3 + 1];
      warped.data[p * 3 + 2] = crop[p * 3 + 2];
    }
  }
  transferColour(warped.data, { data: crop, width, height }, mask, width, height);
  cloneSeamless(crop, width, height, warped.data, polygon, Math.max(1, FEATHER * faceSize));
  for (let y = 0; y < height; y++) out.set(crop.subarray(y * width * 3, (y + 1) * width * 3), ((y0 + y) * target.width + x0) * 3);
  return out;
}

export async function runFaceSwap(image: Buffer, targetImage: Buffer | null, options: CallOptions): Promise<ToolResult> {
  if (!targetImage) throw new ProviderError('bad_request', 'Face swap needs a target image (target_image_url) whose face is replaced');
  const source = await decodeImage(image, 'source image', 3);
  const target = await decodeImage(targetImage, 'target image', 3);
  throwIfAborted(options.signal);
  try {
    await detector.get();
  } catch (error) {
    throw engineUnavailable('face-swap', error);
  }
  options.onProgress?.(15);
  const sourceFace = await detectLargestFace(source);
  if (!sourceFace) throw new ProviderError('bad_request', 'No face found in the source image');
  throwIfAborted(options.signal);
  const targetFace = await detectLargestFace(target);
  if (!targetFace) throw new ProviderError('bad_request', 'No face found in the target image');
  throwIfAborted(options.signal);
  options.onProgress?.(60);
  const swapped = swapFace(source, sourceFace.landmarks, target, targetFace.landmarks);
  const file = await encodePng({ data: swapped, width: target.width, height: target.height, channels: 3 });
  return imageResult(file, target.width, target.height);
}
