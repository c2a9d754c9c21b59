/**
 * `inpaint`: mask-guided inpainting with Telea's fast marching method ("An Image Inpainting
 * Technique Based on the Fast Marching Method", 2004) as implemented by OpenCV (`cv.inpaint`,
 * `INPAINT_TELEA`), run from OpenCV.js. The mask (`secondImage`, white = repaint) is resized to the
 * image, thresholded at 50 % grey and grown by a few pixels so anti-aliased edges of the removed
 * object are repainted too. Alpha, if any, is inpainted the same way. The prompt is not used: this
 * fills from the surroundings, it does not invent content.
 */
import sharp from 'sharp';
import { throwIfAborted } from '../../abort';
import { ProviderError } from '../../types';
import type { CallOptions, ToolResult } from '../../types';
import { decodeImage, dropAlpha, encodePng, engineUnavailable, imageResult, isOpaque } from './common';
import { loadOpenCv } from './opencv';
import type { CvMat, OpenCv } from './types/opencv';

/** A module-local binding: hot loops then skip a global lookup (an accessor under Jest's sandbox, ~50× slower). */
const Math = globalThis.Math;

/** Binary mask (0/255) at the image's size, from any image: luminance over 127 (alpha-weighted) is "repaint". */
export async function prepareMask(mask: Buffer, width: number, height: number): Promise<Buffer> {
  let grey: Buffer;
  try {
    grey = await sharp(mask, { failOn: 'none' })
      .rotate()
      .flatten({ background: '#000000' })
      .greyscale()
      .resize(width, height, { fit: 'fill', kernel: 'lanczos3' })
      .raw()
      .toBuffer();
  } catch {
    throw new ProviderError('bad_request', 'The mask could not be decoded as an image');
  }
  if (grey.length !== width * height) throw new Error('Mask resize produced an unexpected size');
  const binary = Buffer.alloc(width * height);
  for (let i = 0; i < grey.length; i++) binary[i] = grey[i] > 127 ? 255 : 0;
  return binary;
}

function withMats<T>(mats: CvMat[], body: () => T): T {
  try {
    return body();
  } finally {
    for (const mat of mats) mat.delete();
  }
}

export async function runInpaint(image: Buffer, maskBytes: Buffer | null, options: CallOptions): Promise<ToolResult> {
  if (!maskBytes) throw new ProviderError('bad_request', 'Inpainting needs a mask image (mask_url): white where the image is to be repainted');
  const rgba = await decodeImage(image, 'image', 4);
  const { width, height } = rgba;
  const mask = await prepareMask(maskBytes, width, height);
  throwIfAborted(options.signal);
  let cv: OpenCv;
  try {
    ({ cv } = await loadOpenCv());
  } catch (error) {
    throw engineUnavailable('inpaint', error);
  }
  options.onProgress?.(20);

  const translucent = !isOpaque(rgba.data);
  if (!mask.includes(255)) {
    // Nothing to repaint: the image comes back as it was.
    const file = await encodePng(translucent ? rgba : dropAlpha(rgba.data, width, height));
    return imageResult(file, width, height);
  }

  const side = Math.max(width, height);
  const grow = Math.max(1, Math.round(side / 256));
  const radius = Math.max(3, Math.round(side / 128));
  const rgb = Buffer.alloc(width * height * 3);
  const alpha = Buffer.alloc(width * height);
  for (let i = 0; i < width * height; i++) {
    rgb[i * 3] = rgba.data[i * 4];
    rgb[i * 3 + 1] = rgba.data[i * 4 + 1];
    rgb[i * 3 + 2] = rgba.data[i * 4 + 2];
    alpha[i] = rgba.data[i * 4 + 3];
  }

  const out = Buffer.alloc(width * height * 4);
  const maskMat = cv.matFromArray(height, width, cv.CV_8UC1, mask);
  const grown = new cv.Mat();
  const kernel = cv.getStructuringElement(cv.MORPH_ELLIPSE, new cv.Size(2 * grow + 1, 2 * grow + 1));
  const src = cv.matFromArray(height, width, cv.CV_8UC3, rgb);
  const dst = new cv.Mat();
  const alphaSrc = cv.matFromArray(height, width, cv.CV_8UC1, alpha);
  const alphaDst = new cv.Mat();
  withMats([maskMat, grown, kernel, src, dst, alphaSrc, alphaDst], () => {
    cv.dilate(maskMat, grown, kernel, new cv.Point(-1, -1), 1);
    cv.inpaint(src, grown, dst, radius, cv.INPAINT_TELEA);
    if (translucent) cv.inpaint(alphaSrc, grown, alphaDst, radius, cv.INPAINT_TELEA);
    const filled = dst.data;
    const filledAlpha = translucent ? alphaDst.data : alpha;
    for (let i = 0; i < width * height; i++) {
      out[i * 4] = filled[i * 3];
      out[i * 4 + 1] = filled[i * 3 + 1];
      out[i * 4 + 2] = filled[i * 3 + 2];
      out[i * 4 + 3] = filledAlpha[i];
    }
  });
  throwIfAborted(options.signal);
  const file = await encodePng(translucent ? { data: out, width, height, channels: 4 } : dropAlpha(out, width, height));
  return imageResult(file, width, height);
}
