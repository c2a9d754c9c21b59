/**
 * POST /v1/messages: Anthropic's Messages API over our generations, so Anthropic's SDKs and
 * Claude Code can use any text model of the catalog. The request becomes a text generation like
 * any other (plan gate, limits and their headers, hold and capture, history, ledger,
 * Idempotency-Key, content policy, webhooks); the answer is a Message, or with `stream: true`
 * Anthropic's named server-sent events, billed exactly like our own streams (a client that goes
 * away is not charged). Tool use and stop sequences go through the domain's text options: the
 * request's `tools`, `tool_choice`, `tool_use` / `tool_result` turns and `stop_sequences` are read
 * in messages-request.ts, the model's tool calls come back as `tool_use` blocks with `stop_reason:
 * "tool_use"`, streamed as Anthropic streams them (presenters/anthropic-stream.ts). Errors take
 * Anthropic's shape (presenters/errors.ts).
 *
 * Credentials: `x-api-key` (what the SDKs send for an API key) or `Authorization: Bearer`.
 * `anthropic-version` is accepted and not required: there is one version of this wire format
 * here, and refusing a request without it would only break hand-written clients (the SDKs and
 * Claude Code always send it). `anthropic-beta` is ignored, as is Claude Code's `?beta=true`.
 */
import Router from '@koa/router';
import { z } from 'zod';
import type { RouteDoc } from '../../openapi/registry';
import { IdempotencyHeader } from '../../openapi/schemas/params';
import { AnthropicMessage } from '../../openapi/schemas/v1';
import { AnthropicHeaders, V1_GENERATION_ERRORS } from '../../openapi/schemas/v1-requests';
import type { Generation } from '../../../shared/db/entities';
import { AppError } from '../../../shared/errors';
import type { StreamEnd, StreamPart } from '../../../shared/generation/types';
import { AppContext, AppCustom, AppState, callerOf } from '../../context';
import { generationOptions, parseBody } from '../../http';
import { requireAuth, setRateLimitHeaders } from '../../middleware/auth';
import { AnthropicEvent, messageEndEvents, messageStartEvent, presentMessage } from '../../presenters/anthropic';
import { MessageBlocks, wholeParts } from '../../presenters/anthropic-stream';
import { presentError } from '../../presenters/errors';
import { chatEndOf, failedGenerationError } from '../../presenters/openai';
import { clientGone, EventStream, pipeEvents } from '../../sse';
import { anthropicFields } from './anthropic-fields';
import { generateRequestOf, MessagesBody } from './messages-request';

/**
 * A generation that is not being run by this request (a replay, or one refused at once): its
 * result, or the error it ended with. A replay of a request still running has no result yet.
 */
function finished(generation: Generation): Generation {
  if (generation.status === 'failed') throw failedGenerationError(generation);
  if (generation.status !== 'completed') throw new AppError('idempotent_request_in_progress');
  return generation;
}

async function* liveEvents(ctx: AppContext, body: MessagesBody, generation: Generation, deltas: AsyncGenerator<StreamPart, StreamEnd>): AsyncGenerator<AnthropicEvent> {
  yield messageStartEvent(generation, body.model);
  const blocks = new MessageBlocks();
  let next = await deltas.next();
  while (!next.done) {
    yield* blocks.part(next.value);
    next = await deltas.next();
  }
  const ended = next.value.generation;
  if (ended.status !== 'completed') {
    // The stream has answered 200 already: Anthropic's clients read an `error` event as the failure.
    yield { event: 'error', data: presentError('anthropic', failedGenerationError(ended), ctx.state.requestId).body };
    return;
  }
  yield* blocks.end();
  yield* messageEndEvents(ended, body.max_tokens);
}

/** A completed generation streamed whole (a replay of a streamed request): the same events, one delta a block. */
async function* wholeEvents(body: MessagesBody, generation: Generation): AsyncGenerator<AnthropicEvent> {
  yield messageStartEvent(generation, body.model);
  const blocks = new MessageBlocks();
  for (const part of wholeParts(generation.resultText ?? '', chatEndOf(generation).toolCalls)) yield* blocks.part(part);
  yield* blocks.end();
  yield* messageEndEvents(generation, body.max_tokens);
}

export function v1MessageRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>({ prefix: '/v1/messages' });
  router.use(requireAuth);

  router.post('/', async (ctx) => {
    // Anthropic's SDKs read it as the response's `_request_id`.
    ctx.set('request-id', ctx.state.requestId);
    const body = parseBody(ctx, MessagesBody);
    const { request, origins } = generateRequestOf(body);
    const options = { ...generationOptions(ctx, body), category: 'text' as const };
    const { generations } = ctx.container;
    // What the domain refuses at acceptance names the fields of the domain's request: named back here.
    const named = (error: unknown) => Promise.reject(anthropicFields(error, origins));
    if (request.stream) {
      const streamed = await generations.stream(callerOf(ctx), request, options, clientGone(ctx)).catch(named);
      if (streamed.limits) setRateLimitHeaders(ctx, streamed.limits);
      const events = streamed.deltas ? liveEvents(ctx, body, streamed.generation, streamed.deltas) : wholeEvents(body, finished(streamed.generation));
      pipeEvents(new EventStream(ctx), events, (error) => ctx.container.log.error({ err: error }, 'stream writer failed'));
      return;
    }
    const started = await generations.start(callerOf(ctx), request, options).catch(named);
    if (started.limits) setRateLimitHeaders(ctx, started.limits);
    ctx.body = presentMessage(finished(started.generation), body.model, body.max_tokens);
  });

  return router;
}

export const v1MessageRouteDocs: RouteDoc[] = [
  {
    method: 'post',
    path: '/v1/messages',
    tag: 'OpenAI- and Anthropic-compatible (/v1)',
    auth: 'user',
    summary: "Anthropic's Messages (Claude Code, Anthropic's SDKs)",
    description: "Errors in Anthropic's shape. `stream: true` answers Anthropic's named events (message_start … message_stop).",
    headers: z.object({ ...AnthropicHeaders.shape, ...IdempotencyHeader.shape }),
    body: MessagesBody,
    bodyExample: { model: 'demo-text', max_tokens: 200, messages: [{ role: 'user', content: 'Hello' }] },
    responses: { 200: { description: 'The message, or its events', schema: AnthropicMessage, content: { 'text/event-stream': {} } } },
    errors: V1_GENERATION_ERRORS,
  },
];
