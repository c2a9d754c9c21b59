/**
 * The image formats results are delivered in (`webp`, `png`, `jpeg`): their content type and file
 * extension, and the sharp encoder settings the local image engine and the Replicate adapter
 * deliver them with (the `hd` quality trades size for fidelity).
 */
import type sharp from 'sharp';
import type { ImageRequest } from '../providers/types';

export interface EncodedFormat {
  contentType: string;
  extension: string;
}

export const IMAGE_FORMATS: Record<ImageRequest['format'], EncodedFormat> = {
  webp: { contentType: 'image/webp', extension: 'webp' },
  png: { contentType: 'image/png', extension: 'png' },
  jpeg: { contentType: 'image/jpeg', extension: 'jpg' },
};

/** The pipeline set to encode as `format` at `quality`; run it with `.toBuffer()`. */
export function encodeImage(pipeline: sharp.Sharp, format: ImageRequest['format'], quality: ImageRequest['quality']): sharp.Sharp {
  const hd = quality === 'hd';
  switch (format) {
    case 'webp':
      return pipeline.webp({ quality: hd ? 92 : 82, effort: 4 });
    case 'png':
      return pipeline.png({ compressionLevel: hd ? 9 : 6 });
    case 'jpeg':
      return pipeline.jpeg({ quality: hd ? 92 : 84, mozjpeg: true });
  }
}
