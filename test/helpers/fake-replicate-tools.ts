/**
 * The image-tool models the fake Replicate knows, with the inputs their public schemas take
 * (images as URIs; here data: URIs, which Replicate accepts too) and what they return: an image
 * file sized from the input, or (OCR) the text itself.
 */
import sharp from 'sharp';

export interface FakeToolModel {
  /** Inputs without which the prediction is a 422. */
  required: string[];
  /** Inputs that are images (must be decodable data: URIs). */
  images: string[];
  /** The input image whose size the output has (times `scale` for an upscaler). */
  sizeFrom?: string;
  upscales?: boolean;
  /** What the output file is, or `text` for a string output. */
  output: 'png' | 'jpeg' | 'webp' | 'text';
  /** An output list rather than one URL. */
  list?: boolean;
}

export const FAKE_OCR_TEXT = 'HELLO FROM THE FAKE OCR\n';

export const FAKE_TOOL_MODELS: Record<string, FakeToolModel> = {
  'nightmareai/real-esrgan': { required: ['image'], images: ['image'], sizeFrom: 'image', upscales: true, output: 'png' },
  'cdingram/face-swap': { required: ['input_image', 'swap_image'], images: ['input_image', 'swap_image'], sizeFrom: 'input_image', output: 'jpeg' },
  '851-labs/background-remover': { required: ['image'], images: ['image'], sizeFrom: 'image', output: 'png' },
  'lucataco/remove-bg': { required: ['image'], images: ['image'], sizeFrom: 'image', output: 'png' },
  'fofr/style-transfer': { required: ['structure_image'], images: ['structure_image', 'style_image'], sizeFrom: 'structure_image', output: 'webp', list: true },
  'arielreplicate/deoldify_image': { required: ['input_image', 'model_name'], images: ['input_image'], sizeFrom: 'input_image', output: 'jpeg' },
  'stability-ai/stable-diffusion-inpainting': { required: ['image', 'mask', 'prompt'], images: ['image', 'mask'], sizeFrom: 'image', output: 'png', list: true },
  'abiruyt/text-extract-ocr': { required: ['image'], images: ['image'], output: 'text' },
};

function decodeDataUri(value: unknown): Buffer | null {
  if (typeof value !== 'string') return null;
  const match = /^data:image\/[\w.+-]+;base64,(.+)$/s.exec(value);
  return match ? Buffer.from(match[1] ?? '', 'base64') : null;
}

/** What is wrong with a tool prediction's input (Replicate's 422 detail), or null. */
export async function toolInputProblem(model: FakeToolModel, input: Record<string, unknown>): Promise<string | null> {
  for (const field of model.required) {
    if (input[field] === undefined || input[field] === null || input[field] === '') return `- input.${field}: ${field} is required`;
  }
  for (const field of model.images) {
    if (input[field] === undefined) continue;
    const bytes = decodeDataUri(input[field]);
    if (!bytes) return `- input.${field}: Does not match format 'uri'`;
    try {
      await sharp(bytes).metadata();
    } catch {
      return `- input.${field}: cannot identify image file`;
    }
  }
  return null;
}

/** The output file of a tool prediction: a plain image of the size its model gives. */
export async function toolOutputFile(model: FakeToolModel, input: Record<string, unknown>): Promise<{ bytes: Buffer; contentType: string; extension: string }> {
  let width = 80;
  let height = 60;
  const source = model.sizeFrom ? decodeDataUri(input[model.sizeFrom]) : null;
  if (source) {
    const meta = await sharp(source).metadata();
    width = meta.width ?? width;
    height = meta.height ?? height;
  }
  if (model.upscales) {
    const scale = typeof input.scale === 'number' ? input.scale : 4;
    width = Math.round(width * scale);
    height = Math.round(height * scale);
  }
  const image = sharp({ create: { width, height, channels: 4, background: { r: 30, g: 120, b: 200, alpha: 1 } } });
  const format = model.output === 'jpeg' ? 'jpeg' : model.output === 'webp' ? 'webp' : 'png';
  const bytes = await (format === 'jpeg' ? image.jpeg() : format === 'webp' ? image.webp() : image.png()).toBuffer();
  return { bytes, contentType: `image/${format}`, extension: format === 'jpeg' ? 'jpg' : format };
}
