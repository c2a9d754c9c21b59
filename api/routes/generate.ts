/** POST /generate and reading generations back: spec 4.1, 4.5, 6.2; decisions.md. */
import Router from '@koa/router';
import { z } from 'zod';
import { GenerateBody, GenerateRequest, splitRequestBody } from '../../shared/generation/input';
import { parseGenerationId } from '../../shared/generation/service';
import type { StartOptions, StreamEnd, StreamPart } from '../../shared/generation/types';
import { AppContext, AppCustom, AppState, callerOf } from '../context';
import { generationOptions, parseBody } from '../http';
import { requireAuth, setRateLimitHeaders } from '../middleware/auth';
import {
  idShapeForCategory,
  presentContext,
  presentGeneration,
  presentStreamDelta,
  presentStreamEnd,
  presentStreamStart,
} from '../presenters/generation';
import { clientGone, EventStream, pipeEvents } from '../sse';
import type { RouteDoc } from '../openapi/registry';
import { GenerationA, GenerationB, GenerationEventStream } from '../openapi/schemas/generation';
import { GenerationIdParam, IdempotencyHeader } from '../openapi/schemas/params';

/**
 * A streamed generation as the contract's events: generation_start, content_delta…, generation_end.
 * The contract has no tool calls (this route asks for none), so only text is sent.
 */
async function* streamEvents(start: StreamEnd, deltas: AsyncGenerator<StreamPart, StreamEnd>) {
  yield { event: 'generation_start', data: presentStreamStart(start.generation) };
  let next = await deltas.next();
  while (!next.done) {
    if (typeof next.value === 'string') yield { event: 'content_delta', data: presentStreamDelta(start.generation, next.value) };
    next = await deltas.next();
  }
  yield { event: 'generation_end', data: presentStreamEnd(next.value) };
}

async function stream(ctx: AppContext, request: GenerateRequest, options: StartOptions): Promise<void> {
  const streamed = await ctx.container.generations.stream(callerOf(ctx), request, options, clientGone(ctx));
  if (streamed.limits) setRateLimitHeaders(ctx, streamed.limits);
  if (!streamed.deltas) {
    // A replay (or a request refused at once) answers as JSON.
    ctx.body = presentGeneration(streamed.generation, 'B', presentContext(ctx.container, streamed.balance));
    return;
  }
  pipeEvents(new EventStream(ctx), streamEvents(streamed, streamed.deltas), (error) => ctx.container.log.error({ err: error }, 'stream writer failed'));
}

export function generateRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>({ prefix: '/api/v2/generate' });
  router.use(requireAuth);

  router.post('/', async (ctx) => {
    const body = parseBody(ctx, GenerateBody);
    const request = splitRequestBody(body);
    const options = generationOptions(ctx, body);
    if (request.stream === true) return stream(ctx, request, options);
    // A synchronous generation runs to its end even if the client goes away: it is charged only
    // when it completes, and its result stays in history.
    const started = await ctx.container.generations.start(callerOf(ctx), request, options);
    if (started.limits) setRateLimitHeaders(ctx, started.limits);
    ctx.body = presentGeneration(started.generation, idShapeForCategory(started.model.category), presentContext(ctx.container, started.balance));
  });

  router.get('/status/:id', async (ctx) => {
    const polled = await ctx.container.generations.poll(callerOf(ctx).user.id, parseGenerationId(ctx.params.id));
    ctx.body = presentGeneration(polled.generation, 'B', presentContext(ctx.container, polled.balance));
  });

  router.get('/:id', async (ctx) => {
    const polled = await ctx.container.generations.poll(callerOf(ctx).user.id, parseGenerationId(ctx.params.id));
    ctx.body = presentGeneration(polled.generation, 'A', presentContext(ctx.container, polled.balance));
  });

  router.post('/:id/cancel', async (ctx) => {
    const cancelled = await ctx.container.generations.cancel(callerOf(ctx).user.id, parseGenerationId(ctx.params.id));
    ctx.body = presentGeneration(cancelled.generation, 'A', presentContext(ctx.container, cancelled.balance));
  });

  return router;
}

const tag = 'Generations';
const eitherShape = z.union([GenerationA, GenerationB]);

export const generateRouteDocs: RouteDoc[] = [
  {
    method: 'post',
    path: '/api/v2/generate',
    tag,
    auth: 'user',
    summary: 'Generate: text, image, video, speech, speech-to-text by URL, music or an image tool',
    description:
      'Text, speech and speech-to-text answer in shape B (`gen_<n>`), the others in shape A. Synchronous models answer `completed` (or `failed`, uncharged); queued ones (video, music, slow image families) answer `pending` at once: poll GET /api/v2/generate/{id}. Text with `stream: true` answers server-sent events. Every accepted request is 200.',
    headers: IdempotencyHeader,
    body: GenerateBody,
    bodyExample: { model: 'demo-text', prompt: 'Tell me about the sea' },
    responses: {
      200: {
        description: 'The generation, in shape A or B by category; or, streamed, the events',
        schema: eitherShape,
        content: { 'text/event-stream': { schema: GenerationEventStream } },
      },
    },
    errors: ['insufficient_tokens', 'insufficient_plan', 'rate_limited', 'not_found', 'feature_disabled', 'idempotent_request_in_progress'],
  },
  { method: 'get', path: '/api/v2/generate/status/:id', tag, auth: 'user', summary: 'Poll a generation (shape B)', params: GenerationIdParam, responses: { 200: { description: 'The generation as it stands', schema: GenerationB } } },
  { method: 'get', path: '/api/v2/generate/:id', tag, auth: 'user', summary: 'Poll a generation (shape A)', params: GenerationIdParam, responses: { 200: { description: 'The generation as it stands', schema: GenerationA } } },
  { method: 'post', path: '/api/v2/generate/:id/cancel', tag, auth: 'user', summary: 'Cancel a pending generation (its hold is released)', params: GenerationIdParam, responses: { 200: { description: 'The generation as it now stands (`failed`, "Cancelled", if it was pending)', schema: GenerationA } } },
];
