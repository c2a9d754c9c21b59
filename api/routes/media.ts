/**
 * The multipart endpoints: POST /stt (spec 4.2), /tools (4.3), /inpaint (4.4), and their polling
 * paths. Uploaded files are stored (never served) and handed to the same pipeline as the JSON
 * forms, as this service's own URLs.
 */
import Router from '@koa/router';
import { z } from 'zod';
import type { Category } from '../../shared/catalog/types';
import { AppError } from '../../shared/errors';
import { splitRequestBody } from '../../shared/generation/input';
import { parseGenerationId } from '../../shared/generation/service';
import { AppContext, AppCustom, AppState, callerOf } from '../context';
import { requireAuth, setRateLimitHeaders } from '../middleware/auth';
import { presentContext, presentGeneration } from '../presenters/generation';
import { formField, multipartBody, UploadedMedia, uploadedAudio, uploadedImage } from '../uploads';
import type { RouteDoc } from '../openapi/registry';
import { GenerationA } from '../openapi/schemas/generation';
import { filePart, GenerationIdParam } from '../openapi/schemas/params';

async function store(ctx: AppContext, media: UploadedMedia): Promise<string> {
  const stored = await ctx.container.storage.put('uploads', media.bytes, media.type.contentType, media.type.extension);
  return `${ctx.container.config.publicBaseUrl}/files/${stored.key}`;
}

function booleanField(ctx: AppContext, name: string): boolean | undefined {
  const value = formField(ctx, name);
  if (value === undefined || value === '') return undefined;
  if (/^(true|1|yes|on)$/i.test(value)) return true;
  if (/^(false|0|no|off)$/i.test(value)) return false;
  throw AppError.validation(name, 'must be true or false');
}

/** The model is checked before an upload is stored, so a bad request leaves nothing behind. */
function requireModel(ctx: AppContext, slug: string | undefined, category: Category, message: string) {
  const model = ctx.container.generations.model(slug);
  if (model.category !== category) throw AppError.validation('model', message);
  return model;
}

async function start(ctx: AppContext, body: Record<string, unknown>): Promise<void> {
  const started = await ctx.container.generations.start(callerOf(ctx), splitRequestBody(body), { source: 'api' });
  if (started.limits) setRateLimitHeaders(ctx, started.limits);
  ctx.body = presentGeneration(started.generation, 'A', presentContext(ctx.container, started.balance));
}

async function show(ctx: AppContext, rawId: string | undefined, categories: string[]): Promise<void> {
  const polled = await ctx.container.generations.poll(callerOf(ctx).user.id, parseGenerationId(rawId));
  if (!categories.includes(polled.generation.category)) throw new AppError('not_found');
  ctx.body = presentGeneration(polled.generation, 'A', presentContext(ctx.container, polled.balance));
}

export function mediaRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>({ prefix: '/api/v2' });

  router.post('/stt', requireAuth, multipartBody(1), async (ctx) => {
    const model = formField(ctx, 'model');
    requireModel(ctx, model, 'stt', 'must be a speech-to-text model');
    const audio = await uploadedAudio(ctx, 'audio');
    const language = formField(ctx, 'language');
    await start(ctx, {
      model,
      audio_url: await store(ctx, audio),
      ...(language ? { language } : {}),
      ...(booleanField(ctx, 'diarize') !== undefined ? { diarize: booleanField(ctx, 'diarize') } : {}),
    });
  });

  router.post('/tools', requireAuth, multipartBody(2), async (ctx) => {
    const model = formField(ctx, 'model');
    const found = requireModel(ctx, model, 'tool', 'must be a tool');
    const source = (await uploadedImage(ctx, 'source_image')) as UploadedMedia;
    const target = await uploadedImage(ctx, 'target_image', found.slug === 'face-swap');
    const params: Record<string, unknown> = {};
    for (const name of ['scale', 'style']) {
      const value = formField(ctx, name);
      if (value !== undefined && value !== '') params[name] = name === 'scale' && /^\d+$/.test(value) ? Number(value) : value;
    }
    const prompt = formField(ctx, 'prompt');
    await start(ctx, {
      model,
      ...(prompt ? { prompt } : {}),
      image_url: await store(ctx, source),
      ...(target ? { target_image_url: await store(ctx, target) } : {}),
      ...params,
    });
  });

  router.post('/inpaint', requireAuth, multipartBody(2), async (ctx) => {
    const image = (await uploadedImage(ctx, 'image')) as UploadedMedia;
    const mask = (await uploadedImage(ctx, 'mask')) as UploadedMedia;
    const prompt = formField(ctx, 'prompt');
    await start(ctx, {
      model: 'inpaint',
      ...(prompt ? { prompt } : {}),
      image_url: await store(ctx, image),
      mask_url: await store(ctx, mask),
    });
  });

  router.get('/tools/:id', requireAuth, async (ctx) => show(ctx, ctx.params.id, ['tool']));
  router.get('/inpaint/:id', requireAuth, async (ctx) => show(ctx, ctx.params.id, ['tool']));
  router.get('/stt/:id', requireAuth, async (ctx) => show(ctx, ctx.params.id, ['stt']));

  return router;
}

const SttForm = z.object({
  audio: filePart('mp3, mp4, wav, m4a, ogg, flac or webm; at most 25 MB'),
  model: z.string().meta({ description: 'A speech-to-text model', example: 'local-stt' }),
  language: z.string().optional().meta({ description: 'ISO 639-1; detected when left out', example: 'en' }),
  diarize: z.enum(['true', 'false']).optional().meta({ description: 'The diarizing model: `[Speaker N]:` lines' }),
});
const ToolsForm = z.object({
  model: z.string().meta({ description: 'A tool slug', example: 'remove-bg' }),
  source_image: filePart('The input image (PNG, JPEG, WebP); at most 25 MB'),
  target_image: filePart('face-swap: the image whose face is replaced').optional(),
  scale: z.string().optional().meta({ description: 'upscale: 2 or 4' }),
  style: z.string().optional().meta({ description: 'style-transfer: sketch, watercolor, oil-painting, cartoon, pop-art' }),
  prompt: z.string().optional(),
});
const InpaintForm = z.object({
  image: filePart('The image'),
  mask: filePart('White where the image is repainted'),
  prompt: z.string().optional(),
});

const tag = 'Generations';
const MEDIA_ERRORS = ['insufficient_tokens', 'insufficient_plan', 'rate_limited', 'not_found', 'feature_disabled'] as const;
const started = { 200: { description: 'The generation (shape A)', schema: GenerationA } };

export const mediaRouteDocs: RouteDoc[] = [
  { method: 'post', path: '/api/v2/stt', tag, auth: 'user', summary: 'Transcribe an uploaded recording', multipart: SttForm, responses: started, errors: [...MEDIA_ERRORS] },
  { method: 'post', path: '/api/v2/tools', tag, auth: 'user', summary: 'Run an image tool on uploaded images', multipart: ToolsForm, responses: started, errors: [...MEDIA_ERRORS] },
  { method: 'post', path: '/api/v2/inpaint', tag, auth: 'user', summary: 'Repaint the masked region of an uploaded image', multipart: InpaintForm, responses: started, errors: [...MEDIA_ERRORS] },
  { method: 'get', path: '/api/v2/tools/:id', tag, auth: 'user', summary: 'Poll a tool generation', params: GenerationIdParam, responses: { 200: { description: 'The generation (shape A)', schema: GenerationA } } },
  { method: 'get', path: '/api/v2/inpaint/:id', tag, auth: 'user', summary: 'Poll an inpainting', params: GenerationIdParam, responses: { 200: { description: 'The generation (shape A)', schema: GenerationA } } },
  { method: 'get', path: '/api/v2/stt/:id', tag, auth: 'user', summary: 'Poll a transcription', params: GenerationIdParam, responses: { 200: { description: 'The generation (shape A)', schema: GenerationA } } },
];
