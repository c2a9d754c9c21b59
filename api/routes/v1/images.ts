/**
 * POST /v1/images/generations: OpenAI's image endpoint over our image generations. `size`,
 * `quality`, `style` and `output_format` map onto the model's declared params (a value it does
 * not take is 400 naming the field); one image per request. OpenAI answers with the image, so a
 * model that runs as a queued job is waited for within its timeout (without holding a worker
 * slot); past it the answer is 504 and the generation goes on, ending in history as usual.
 */
import Router from '@koa/router';
import { z } from 'zod';
import type { CatalogModel } from '../../../shared/catalog/types';
import { AppError } from '../../../shared/errors';
import type { GenerateRequest } from '../../../shared/generation/input';
import { AppContext, AppCustom, AppState, callerOf } from '../../context';
import { generationOptions, parseBody } from '../../http';
import { requireAuth } from '../../middleware/auth';
import { presentImages } from '../../presenters/openai-media';
import { completedGeneration, paramOf, requiredString, requireModel, valuesOf, withProtocolNames } from './media-common';
import type { RouteDoc } from '../../openapi/registry';
import { IdempotencyHeader } from '../../openapi/schemas/params';
import { ImagesResponse } from '../../openapi/schemas/v1';
import { V1_GENERATION_ERRORS } from '../../openapi/schemas/v1-requests';

/** What we read of an image request; fields we do not use (`user`, `moderation`, …) are accepted and ignored. */
const ImageBody = z.looseObject({
  model: requiredString(200).min(1, 'is required'),
  prompt: requiredString(100_000),
  n: z.number().int().refine((n) => n === 1, 'only 1 image per request is supported').nullish(),
  size: z.string().max(32).nullish(),
  quality: z.string().max(32).nullish(),
  style: z.string().max(32).nullish(),
  response_format: z.enum(['url', 'b64_json'], { message: 'must be url or b64_json' }).nullish(),
  output_format: z.enum(['png', 'webp', 'jpeg'], { message: 'must be png, webp or jpeg' }).nullish(),
  stream: z.literal(false, { message: 'streamed image generation is not supported' }).nullish(),
});
type ImageBody = z.infer<typeof ImageBody>;

/** Our params' names as OpenAI's image request calls them. */
const PROTOCOL_NAMES = { format: 'output_format', aspect_ratio: 'size' };

/** How far a size's shape may be from an aspect ratio and still be it (1792x1024 is 7:4, sold as 16:9). */
const RATIO_TOLERANCE = 0.03;

function ratioOf(value: string): number | null {
  const match = /^(\d+):(\d+)$/.exec(value);
  return match ? Number(match[1]) / Number(match[2]) : null;
}

/** `size` as the model takes it: a size of its own, the aspect ratio of that shape, or its one size. */
function sizeParams(model: CatalogModel, size: string): Record<string, unknown> {
  if (paramOf(model, 'size')) return { size };
  const match = /^(\d{1,5})x(\d{1,5})$/.exec(size);
  const ratios = valuesOf(paramOf(model, 'aspect_ratio')).map(String);
  if (ratios.length > 0) {
    const asked = match && Number(match[2]) > 0 ? Number(match[1]) / Number(match[2]) : NaN;
    const fitting = ratios.find((r) => {
      const ratio = ratioOf(r);
      return ratio !== null && Math.abs(asked / ratio - 1) <= RATIO_TOLERANCE;
    });
    if (!fitting) throw AppError.validation('size', `this model draws the shapes ${ratios.join(', ')}: give a size of one of them (e.g. 1024x1024, 1792x1024, 1024x1792)`);
    return { aspect_ratio: fitting };
  }
  // A model with neither declares one size: the square one.
  if (size !== '1024x1024') throw AppError.validation('size', 'this model only draws 1024x1024');
  return {};
}

/** The request's OpenAI fields as the model's params. */
function imageParams(model: CatalogModel, body: ImageBody): Record<string, unknown> {
  // OpenAI's images come as PNG unless asked otherwise (our own default, webp, would surprise its clients).
  const params: Record<string, unknown> = { format: body.output_format ?? 'png' };
  if (body.size && body.size !== 'auto') Object.assign(params, sizeParams(model, body.size));
  if (body.quality && body.quality !== 'auto') params.quality = body.quality;
  if (body.style) {
    if (!paramOf(model, 'style')) throw AppError.validation('style', 'this model takes no style');
    params.style = body.style;
  }
  return params;
}

async function generateImage(ctx: AppContext): Promise<void> {
  const body = parseBody(ctx, ImageBody);
  const model = requireModel(ctx, body.model, 'image');
  const request: GenerateRequest = { model: body.model, prompt: body.prompt, params: {}, topLevel: imageParams(model, body) };
  const options = { ...generationOptions(ctx, body), category: 'image' as const };
  const { generations } = ctx.container;
  const started = await withProtocolNames(PROTOCOL_NAMES, () => generations.start(callerOf(ctx), request, options));
  // A queued model is waited for here: OpenAI answers with the image.
  const generation = await completedGeneration(ctx, model, started);
  const { storage, config } = ctx.container;
  const bytes = body.response_format === 'b64_json' && generation.resultKey ? await storage.readAll(generation.resultKey) : null;
  ctx.body = presentImages(generation, { publicBaseUrl: config.publicBaseUrl, bytes });
}

export function v1ImageRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>({ prefix: '/v1/images' });
  router.use(requireAuth);
  router.post('/generations', generateImage);
  return router;
}

export const v1ImageRouteDocs: RouteDoc[] = [
  { method: 'post', path: '/v1/images/generations', tag: 'OpenAI- and Anthropic-compatible (/v1)', auth: 'user', summary: "OpenAI's image generation (one image)", headers: IdempotencyHeader, body: ImageBody, bodyExample: { model: 'demo-image', prompt: 'a lighthouse at dusk', size: '1024x1024' }, responses: { 200: { description: 'The image, by URL or as base64', schema: ImagesResponse } }, errors: V1_GENERATION_ERRORS },
];
