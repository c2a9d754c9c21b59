/**
 * The image tools of spec 4.1 on Replicate: one small table per tool saying which input fields
 * the typical public model for it takes (images as data: URIs) and how its output is read (an
 * image file, or the text itself for OCR).
 *
 * An operator can point a catalog entry (or its fallback) at another Replicate model: a model
 * that takes the same inputs works as is. The tool is told by the request's tool slug (what the
 * local provider calls it), else by the model id: a table's own model, or a name that looks like
 * the tool (`…esrgan…`, `…face-swap…`, `…inpaint…`).
 */
import sharp from 'sharp';
import { encodeImage, IMAGE_FORMATS } from '../../media/image-format';
import { sniffImage } from '../../media/sniff';
import { ImageRequest, ProviderError, ToolRequest, ToolResult } from '../types';
import { isRecord } from '../upstream-http';

export const REPLICATE_TOOLS = ['upscale-esrgan', 'face-swap', 'remove-bg', 'style-transfer', 'colorize', 'inpaint', 'ocr'] as const;
export type ReplicateTool = (typeof REPLICATE_TOOLS)[number];

export interface ToolMapping {
  /** The public model the fields were written for (the shipped catalog's fallback). */
  model: string;
  /** Model ids this mapping is taken for when the request's tool slug is not one of ours. */
  modelPattern: RegExp;
  /** The input field of the request's image. */
  image: string;
  /** The input field of the second image (face-swap's target, inpaint's mask) and whether it is required. */
  secondImage?: { field: string; required: boolean };
  /** The input field of the prompt, and the prompt sent when the user gave none. */
  prompt?: { field: string; default: (params: Record<string, unknown>) => string };
  /** Catalog params copied into the input: param name → input field. */
  params?: Record<string, string>;
  /** Inputs always sent. */
  fixed?: Record<string, unknown>;
  /** How the prediction's output is read. */
  output: 'image' | 'text';
}

export const TOOL_MAPPINGS: Record<ReplicateTool, ToolMapping> = {
  // nightmareai/real-esrgan: {image, scale, face_enhance} → an image URL.
  'upscale-esrgan': { model: 'nightmareai/real-esrgan', modelPattern: /esrgan|upscal|super-?res/i, image: 'image', params: { scale: 'scale' }, output: 'image' },
  // cdingram/face-swap: {input_image: the target photo, swap_image: the face put into it} → an image URL.
  'face-swap': {
    model: 'cdingram/face-swap',
    modelPattern: /face-?swap|swap-?face/i,
    image: 'swap_image',
    secondImage: { field: 'input_image', required: true },
    output: 'image',
  },
  // 851-labs/background-remover (and lucataco/remove-bg): {image} → a PNG URL with alpha.
  'remove-bg': { model: '851-labs/background-remover', modelPattern: /remove-?bg|background-?remov|rembg|matting/i, image: 'image', output: 'image' },
  // fofr/style-transfer: {structure_image: the photo kept, prompt: the style wanted} → image URLs.
  'style-transfer': {
    model: 'fofr/style-transfer',
    modelPattern: /style-?transfer/i,
    image: 'structure_image',
    prompt: { field: 'prompt', default: (params) => `${typeof params.style === 'string' ? params.style.replace(/-/g, ' ') : 'painterly'} style` },
    output: 'image',
  },
  // arielreplicate/deoldify_image: {input_image, model_name: Artistic|Stable} → an image URL.
  colorize: { model: 'arielreplicate/deoldify_image', modelPattern: /deoldify|coloriz/i, image: 'input_image', fixed: { model_name: 'Artistic' }, output: 'image' },
  // stability-ai/stable-diffusion-inpainting: {image, mask: white is repainted, prompt} → image URLs.
  inpaint: {
    model: 'stability-ai/stable-diffusion-inpainting',
    modelPattern: /inpaint/i,
    image: 'image',
    secondImage: { field: 'mask', required: true },
    prompt: { field: 'prompt', default: () => 'the surroundings, continued seamlessly' },
    output: 'image',
  },
  // abiruyt/text-extract-ocr: {image} → the text as a string.
  ocr: { model: 'abiruyt/text-extract-ocr', modelPattern: /ocr|text-?extract|tesseract/i, image: 'image', output: 'text' },
};

function isReplicateTool(value: string): value is ReplicateTool {
  return (REPLICATE_TOOLS as readonly string[]).includes(value);
}

/** The tool a request is for: its slug, else the table whose model (or model pattern) the id matches. */
export function toolOf(request: Pick<ToolRequest, 'tool' | 'upstreamModel'>): ReplicateTool {
  if (isReplicateTool(request.tool)) return request.tool;
  const model = request.upstreamModel.split(':', 1)[0] ?? '';
  const exact = REPLICATE_TOOLS.find((tool) => TOOL_MAPPINGS[tool].model === model);
  if (exact) return exact;
  const named = REPLICATE_TOOLS.find((tool) => TOOL_MAPPINGS[tool].modelPattern.test(model));
  if (named) return named;
  throw new ProviderError('bad_request', `The replicate model "${request.upstreamModel}" is not mapped to an image tool (${REPLICATE_TOOLS.join(', ')})`);
}

export function dataUri(bytes: Buffer): string {
  const contentType = sniffImage(bytes)?.contentType ?? 'application/octet-stream';
  return `data:${contentType};base64,${bytes.toString('base64')}`;
}

/** The prediction input of a tool request, as its table says. */
export function toolInput(request: ToolRequest, mapping: ToolMapping): Record<string, unknown> {
  const input: Record<string, unknown> = { ...mapping.fixed, [mapping.image]: dataUri(request.image) };
  if (mapping.secondImage) {
    if (request.secondImage) input[mapping.secondImage.field] = dataUri(request.secondImage);
    else if (mapping.secondImage.required) throw new ProviderError('bad_request', `The ${request.tool} tool needs a second image (${mapping.secondImage.field})`);
  }
  if (mapping.prompt) {
    const prompt = request.prompt?.trim();
    input[mapping.prompt.field] = prompt ? prompt : mapping.prompt.default(request.params);
  }
  for (const [param, field] of Object.entries(mapping.params ?? {})) {
    if (request.params[param] !== undefined && request.params[param] !== null) input[field] = request.params[param];
  }
  return input;
}

/** OCR's output: a string, a list of strings (joined), or an object's `text`. */
export function outputText(output: unknown): string | null {
  if (typeof output === 'string') return output;
  if (Array.isArray(output) && output.every((item) => typeof item === 'string')) return output.join('');
  if (isRecord(output) && typeof output.text === 'string') return output.text;
  return null;
}

/** The format the result is delivered in: `params.format` when it names one, else PNG (what the local tools return). */
function resultFormat(params: Record<string, unknown>): ImageRequest['format'] {
  const asked = typeof params.format === 'string' ? params.format.toLowerCase() : '';
  if (asked === 'jpg' || asked === 'jpeg') return 'jpeg';
  return asked === 'webp' ? 'webp' : 'png';
}

/** A downloaded tool output as a ToolResult image: re-encoded to the delivered format, sized by sharp. */
export async function toolImageResult(bytes: Buffer, params: Record<string, unknown>): Promise<ToolResult> {
  if (!sniffImage(bytes)) throw new ProviderError('unavailable', 'The replicate provider returned an output that is not an image');
  const format = resultFormat(params);
  const wanted = IMAGE_FORMATS[format];
  try {
    const converted = await encodeImage(sharp(bytes), format, 'standard').toBuffer({ resolveWithObject: true });
    return { kind: 'image', file: { bytes: converted.data, contentType: wanted.contentType, extension: wanted.extension }, width: converted.info.width, height: converted.info.height };
  } catch {
    throw new ProviderError('unavailable', 'The replicate provider returned an image that could not be decoded');
  }
}
