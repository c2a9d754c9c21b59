/**
 * The multipart endpoints: POST /stt (spec 4.2), /tools (4.3), /inpaint (4.4), and their polling
 * paths. Uploaded files are stored (never served) and handed to the same pipeline as the JSON
 * forms, as this service's own URLs.
 */
import Router from '@koa/router';
import type { Category } from '../../shared/catalog/types';
import { AppError } from '../../shared/errors';
import { splitRequestBody } from '../../shared/generation/input';
import { parseGenerationId } from '../../shared/generation/service';
import { AppContext, AppCustom, AppState, callerOf } from '../context';
import { requireAuth, setRateLimitHeaders } from '../middleware/auth';
import { presentWithBalance } from '../presenters/generation';
import { tokenBalance } from '../../shared/billing';
import { formField, multipartBody, UploadedMedia, uploadedAudio, uploadedImage } from '../uploads';

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

async function run(ctx: AppContext, category: Category, body: Record<string, unknown>): Promise<void> {
  const { generations } = ctx.container;
  const model = generations.model(typeof body.model === 'string' ? body.model : undefined);
  if (model.category !== category) throw AppError.validation('model', `must be a ${category} model`);
  const caller = callerOf(ctx);
  const accepted = await generations.start(caller, splitRequestBody(body), { source: 'api' });
  if (accepted.limits) setRateLimitHeaders(ctx, accepted.limits);
  // Unless this request charged it, the balance is as authentication read it moments ago.
  ctx.body = await presentWithBalance(ctx.container, accepted.generation, 'A', accepted.balance ?? tokenBalance(caller.user));
}

async function show(ctx: AppContext, rawId: string | undefined, categories: string[]): Promise<void> {
  const generation = await ctx.container.generations.get(callerOf(ctx).user.id, parseGenerationId(rawId));
  if (!categories.includes(generation.category)) throw new AppError('not_found');
  ctx.body = await presentWithBalance(ctx.container, generation, 'A');
}

export function mediaRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>({ prefix: '/api/v2' });

  router.post('/stt', requireAuth, multipartBody(1), async (ctx) => {
    const model = formField(ctx, 'model');
    // The model is checked before the upload is stored, so a bad request leaves nothing behind.
    const found = ctx.container.generations.model(model);
    if (found.category !== 'stt') throw AppError.validation('model', 'must be a speech-to-text model');
    const audio = await uploadedAudio(ctx, 'audio');
    const language = formField(ctx, 'language');
    await run(ctx, 'stt', {
      model,
      audio_url: await store(ctx, audio),
      ...(language ? { language } : {}),
      ...(booleanField(ctx, 'diarize') !== undefined ? { diarize: booleanField(ctx, 'diarize') } : {}),
    });
  });

  router.post('/tools', requireAuth, multipartBody(2), async (ctx) => {
    const model = formField(ctx, 'model');
    const found = ctx.container.generations.model(model);
    if (found.category !== 'tool') throw AppError.validation('model', 'must be a tool');
    const source = (await uploadedImage(ctx, 'source_image')) as UploadedMedia;
    const target = await uploadedImage(ctx, 'target_image', found.slug === 'face-swap');
    const params: Record<string, unknown> = {};
    for (const name of ['scale', 'style']) {
      const value = formField(ctx, name);
      if (value !== undefined && value !== '') params[name] = name === 'scale' && /^\d+$/.test(value) ? Number(value) : value;
    }
    const prompt = formField(ctx, 'prompt');
    await run(ctx, 'tool', {
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
    await run(ctx, 'tool', {
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
