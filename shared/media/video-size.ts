/**
 * Video frame sizes from a request's aspect ratio and resolution: the short side is the
 * resolution (`480p` → 480, `720p` → 720, `1080p` → 1080; an empty resolution means 720p), the
 * long side follows the aspect ratio (`16:9`; empty means 16:9; at most 4:1 either way), both
 * rounded to even numbers.
 */
import { ProviderError } from '../providers/types';

const SUPPORTED_SHORT_SIDES = [360, 480, 540, 720, 1080];

/** A side in pixels rounded to an even number, at least 2: H.264 in yuv420p needs even sides. */
export function evenSide(value: number): number {
  return Math.max(2, Math.round(value / 2) * 2);
}

/** The output size for an aspect ratio (`16:9`) and a resolution (`480p`). */
export function videoDimensions(aspectRatio: string, resolution: string): { width: number; height: number } {
  const res = /^\s*(\d{3,4})p\s*$/i.exec(resolution === '' ? '720p' : resolution);
  const short = res ? Number(res[1]) : NaN;
  if (!SUPPORTED_SHORT_SIDES.includes(short)) {
    throw new ProviderError('bad_request', `unsupported resolution ${resolution}; use one of ${SUPPORTED_SHORT_SIDES.map((s) => `${s}p`).join(', ')}`);
  }
  const ratio = /^\s*(\d+(?:\.\d+)?)\s*:\s*(\d+(?:\.\d+)?)\s*$/.exec(aspectRatio === '' ? '16:9' : aspectRatio);
  const w = ratio ? Number(ratio[1]) : NaN;
  const h = ratio ? Number(ratio[2]) : NaN;
  if (!(w > 0 && h > 0) || w / h > 4 || h / w > 4) throw new ProviderError('bad_request', `unsupported aspect ratio ${aspectRatio}`);
  return w >= h ? { width: evenSide((short * w) / h), height: short } : { width: short, height: evenSide((short * h) / w) };
}
