/**
 * OpenAI's video jobs over our asynchronous video generations: `POST /v1/videos` (multipart, as
 * OpenAI's SDK sends it, or JSON; `model`, `prompt`, `seconds`, `size`, `input_reference` as an
 * image file or `{image_url}`) answers the job at once; `GET /v1/videos/{id}` polls it;
 * `GET /v1/videos/{id}/content` streams the mp4 (or `variant=thumbnail`) once it is completed;
 * `GET /v1/videos` lists them (cursor pages) and `DELETE /v1/videos/{id}` deletes one from history.
 * A job id is `video_<generation id>`; another user's, or one that is not a video, is 404.
 */
import crypto from 'node:crypto';
import Router from '@koa/router';
import { z } from 'zod';
import type { CatalogModel } from '../../../shared/catalog/types';
import type { Generation } from '../../../shared/db/entities';
import { AppError } from '../../../shared/errors';
import type { GenerateRequest } from '../../../shared/generation/input';
import { parseGenerationId } from '../../../shared/generation/service';
import { videoDimensions } from '../../../shared/media/video-size';
import { AppContext, AppCustom, AppState, callerOf } from '../../context';
import { generationOptions, parseBody, validate } from '../../http';
import { requireAuth, setRateLimitHeaders } from '../../middleware/auth';
import { failedGenerationError } from '../../presenters/openai';
import { presentVideo, presentVideoList, VideoFacts } from '../../presenters/openai-media';
import { formField, multipartBody, uploadedImage } from '../../uploads';
import { paramOf, requiredString, requireModel, valuesOf, withProtocolNames } from './media-common';
import type { RouteDoc } from '../../openapi/registry';
import { filePart, IdempotencyHeader } from '../../openapi/schemas/params';
import { Video, VideoDeleted, VideoList } from '../../openapi/schemas/v1';
import { V1_GENERATION_ERRORS } from '../../openapi/schemas/v1-requests';

const CreateVideo = z.looseObject({
  model: requiredString(200).min(1, 'is required'),
  prompt: requiredString(100_000),
  // OpenAI's clients send the seconds as a string ("4"); either form is read.
  seconds: z.union([z.number(), z.string().regex(/^\d{1,4}$/, 'must be a whole number of seconds').transform(Number)], { message: 'must be a whole number of seconds' }).optional(),
  size: z.string().max(32).optional(),
  input_reference: z
    .looseObject({
      image_url: z.string().max(8 * 1024 * 1024).optional(),
      file_id: z.string().optional(),
    })
    .refine((reference) => reference.file_id === undefined, 'file ids are not supported: upload the image, or give its image_url')
    .optional(),
});
type CreateVideo = z.infer<typeof CreateVideo>;

/** Our params' names as OpenAI's video request calls them. */
const PROTOCOL_NAMES = { duration: 'seconds', aspect_ratio: 'size', resolution: 'size', image_url: 'input_reference' };

const ListQuery = z.object({
  after: z.string().regex(/^video_[1-9][0-9]{0,9}$/, 'must be a video id').optional(),
  limit: z.coerce.number().int().min(1, 'must be 1 to 100').max(100, 'must be 1 to 100').default(20),
  order: z.enum(['asc', 'desc'], { message: 'must be asc or desc' }).default('desc'),
});

const ContentQuery = z.object({
  variant: z.enum(['video', 'thumbnail', 'spritesheet'], { message: 'must be video, thumbnail or spritesheet' }).default('video'),
});

/** A job id (`video_7`; a bare `7` or `gen_7` is the same generation): anything else is 404. */
function parseVideoId(raw: string | undefined): number {
  return parseGenerationId((raw ?? '').replace(/^video_/, ''));
}

/** The sizes the model makes: each aspect ratio at each resolution it declares (720p when it declares none). */
function offeredSizes(model: CatalogModel): Array<{ size: string; params: Record<string, string> }> {
  const ratios = valuesOf(paramOf(model, 'aspect_ratio')).map(String);
  const resolutions = valuesOf(paramOf(model, 'resolution')).map(String);
  return ratios.flatMap((aspect_ratio) =>
    (resolutions.length > 0 ? resolutions : ['']).map((resolution) => {
      const { width, height } = videoDimensions(aspect_ratio, resolution);
      const params: Record<string, string> = resolution ? { aspect_ratio, resolution } : { aspect_ratio };
      return { size: `${width}x${height}`, params };
    }),
  );
}

function videoParams(model: CatalogModel, body: CreateVideo, imageUrl: string | null): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  if (body.seconds !== undefined) params.duration = body.seconds;
  if (body.size !== undefined) {
    const offered = offeredSizes(model);
    const match = offered.find((o) => o.size === body.size);
    if (!match) throw AppError.validation('size', `must be one of ${offered.map((o) => o.size).join(', ')}`);
    Object.assign(params, match.params);
  }
  if (imageUrl) params.image_url = imageUrl;
  return params;
}

/** The form's fields as the JSON body would have them (`input_reference[image_url]` → `input_reference.image_url`). */
function formBody(ctx: AppContext): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const name of Object.keys((ctx.request.body ?? {}) as Record<string, unknown>)) {
    // Names that would reach an object's prototype are no field of this form.
    if (/(^|\[)(__proto__|constructor|prototype)(\]|$)/.test(name)) continue;
    const value = formField(ctx, name);
    const nested = /^input_reference\[(\w+)\]$/.exec(name);
    if (nested) body.input_reference = { ...(body.input_reference as object | undefined), [nested[1] as string]: value };
    else body[name] = value;
  }
  return body;
}

async function createVideo(ctx: AppContext): Promise<void> {
  const multipart = ctx.is('multipart/form-data') !== false;
  const body = multipart ? validate(CreateVideo, formBody(ctx)) : parseBody(ctx, CreateVideo);
  const model = requireModel(ctx, body.model, 'video');
  let imageUrl = body.input_reference?.image_url ?? null;
  let fileHash: string | null = null;
  if (multipart) {
    const image = await uploadedImage(ctx, 'input_reference', false);
    if (image) {
      const stored = await ctx.container.storage.put('uploads', image.bytes, image.type.contentType, image.type.extension);
      imageUrl = `${ctx.container.config.publicBaseUrl}/files/${stored.key}`;
      fileHash = crypto.createHash('sha256').update(image.bytes).digest('hex');
    }
  }
  const request: GenerateRequest = { model: body.model, prompt: body.prompt, params: {}, topLevel: videoParams(model, body, imageUrl) };
  // A replay is told apart by the fields and an uploaded image's bytes (its stored copy has a new key each time).
  const options = { ...generationOptions(ctx, fileHash ? { ...body, input_reference: fileHash } : body), category: 'video' as const };
  const started = await withProtocolNames(PROTOCOL_NAMES, () => ctx.container.generations.start(callerOf(ctx), request, options));
  if (started.limits) setRateLimitHeaders(ctx, started.limits);
  // Failed before it ever ran (the content policy at acceptance): OpenAI refuses such a request
  // rather than make a failed job, and so does its replay.
  if (started.generation.status === 'failed' && started.generation.startedAt === null) throw failedGenerationError(started.generation);
  ctx.body = presentVideo(started.generation, await videoFacts(ctx, started.generation));
}

/** The clip's length and size (as made once completed, as asked before), and when its files expire under the caller's plan. */
async function videoFacts(ctx: AppContext, generation: Generation): Promise<VideoFacts> {
  let metadata: Record<string, unknown> = {};
  try {
    metadata = JSON.parse(generation.resultMetadata ?? '{}') as Record<string, unknown>;
  } catch {
    // no metadata: the request's params say it
  }
  const { params } = await ctx.container.generations.requestOf(generation);
  const duration = typeof metadata.duration === 'number' ? metadata.duration : params.duration;
  let size = '';
  if (typeof metadata.width === 'number' && typeof metadata.height === 'number') size = `${metadata.width}x${metadata.height}`;
  else {
    try {
      const { width, height } = videoDimensions(String(params.aspect_ratio ?? ''), String(params.resolution ?? ''));
      size = `${width}x${height}`;
    } catch {
      // a resolution the frame-size rule does not know: no size to show until it is made
    }
  }
  const retentionDays = callerOf(ctx).plan.retentionDays;
  const expiresAt = generation.status === 'completed' && retentionDays !== null ? Math.floor(generation.createdAt.getTime() / 1000) + retentionDays * 86_400 : null;
  return { seconds: duration === undefined || duration === null ? '' : String(duration), size, expiresAt };
}

/** The caller's video generation `raw` names; another user's, or one that is not a video, is 404. */
async function videoOf(ctx: AppContext, raw: string | undefined): Promise<Generation> {
  const { generation } = await ctx.container.generations.poll(callerOf(ctx).user.id, parseVideoId(raw));
  if (generation.category !== 'video') throw new AppError('not_found');
  return generation;
}

export function v1VideoRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>({ prefix: '/v1/videos' });
  router.use(requireAuth);
  const multipart = multipartBody(1);

  router.post('/', (ctx, next) => (ctx.is('multipart/form-data') ? multipart(ctx, next) : next()), createVideo);

  router.get('/', async (ctx) => {
    const query = validate(ListQuery, ctx.query);
    const page = await ctx.container.history.cursorPage(callerOf(ctx).user.id, {
      categories: ['video'],
      after: query.after ? parseVideoId(query.after) : null,
      limit: query.limit,
      order: query.order,
    });
    const videos = [];
    for (const generation of page.items) videos.push(presentVideo(generation, await videoFacts(ctx, generation)));
    ctx.body = presentVideoList(videos, page.hasMore);
  });

  router.get('/:id', async (ctx) => {
    const generation = await videoOf(ctx, ctx.params.id);
    ctx.body = presentVideo(generation, await videoFacts(ctx, generation));
  });

  router.get('/:id/content', async (ctx) => {
    const generation = await videoOf(ctx, ctx.params.id);
    const { variant } = validate(ContentQuery, ctx.query);
    if (generation.status !== 'completed') throw new AppError('not_found', { detail: `The video is not ready: it is ${generation.status === 'failed' ? 'failed' : 'still being made'}` });
    const key = variant === 'video' ? generation.resultKey : variant === 'thumbnail' ? generation.thumbnailKey : null;
    const stat = key ? await ctx.container.storage.stat(key) : null;
    if (!key || !stat) throw new AppError('not_found', { detail: `This video has no ${variant} (any more)` });
    ctx.type = stat.contentType;
    ctx.length = stat.size;
    ctx.body = ctx.container.storage.read(key);
  });

  router.delete('/:id', async (ctx) => {
    const generation = await videoOf(ctx, ctx.params.id);
    await ctx.container.history.delete(callerOf(ctx).user.id, generation.id);
    ctx.body = { id: `video_${generation.id}`, object: 'video.deleted', deleted: true };
  });

  return router;
}

const tag = 'OpenAI- and Anthropic-compatible (/v1)';
const VideoIdParam = z.object({ id: z.string().meta({ description: '`video_7` (also `7` or `gen_7`)', example: 'video_7' }) });
const VideoForm = z.object({
  model: z.string(),
  prompt: z.string(),
  seconds: z.string().optional(),
  size: z.string().optional(),
  input_reference: filePart('The start image').optional(),
});

export const v1VideoRouteDocs: RouteDoc[] = [
  { method: 'post', path: '/v1/videos', tag, auth: 'user', summary: "OpenAI's video job: start one (JSON, or multipart with a start image)", headers: IdempotencyHeader, body: CreateVideo, multipart: VideoForm, bodyExample: { model: 'demo-video', prompt: 'waves at dusk', seconds: '5', size: '1280x720' }, responses: { 200: { description: 'The job (queued)', schema: Video } }, errors: V1_GENERATION_ERRORS },
  { method: 'get', path: '/v1/videos', tag, auth: 'user', summary: "The caller's video jobs, by cursor", query: ListQuery, responses: { 200: { description: 'A page of jobs', schema: VideoList } } },
  { method: 'get', path: '/v1/videos/:id', tag, auth: 'user', summary: 'A video job', params: VideoIdParam, responses: { 200: { description: 'The job as it stands', schema: Video } } },
  { method: 'get', path: '/v1/videos/:id/content', tag, auth: 'user', summary: 'The video (or its thumbnail) of a completed job', params: VideoIdParam, query: ContentQuery, responses: { 200: { description: 'The file', content: { '*/*': { schema: z.string().meta({ format: 'binary' }) } } } } },
  { method: 'delete', path: '/v1/videos/:id', tag, auth: 'user', summary: 'Delete a video job and its files', params: VideoIdParam, responses: { 200: { description: 'Deleted', schema: VideoDeleted } } },
];
