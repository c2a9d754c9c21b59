/**
 * POST /v1/responses and GET /v1/responses/{id}: OpenAI's Responses API over our text
 * generations. A request becomes a generation like any other (plan gate, limits and their
 * headers, hold and capture, history, ledger, Idempotency-Key, content policy, webhooks); the
 * answer is a response object, or with `stream: true` the Responses event stream, billed exactly
 * like our own streams (a client that goes away is not charged). Function tools, tool choice and
 * `text.format` go to the domain (responses-tools.ts), which refuses what the model does not
 * declare before anything is held; the calls come back as `function_call` items.
 *
 * `previous_response_id` continues an earlier response of the caller's: the new generation is
 * sent the earlier one's messages (as kept with it, without its instructions, which OpenAI does
 * not carry over), its answer as an assistant message with the tools it called, then the new
 * input (whose `function_call_output` items answer those calls by `call_id`: a Codex loop). What
 * the request said beyond the messages (model name, instructions, store, metadata, tools) is kept
 * with the generation (presenters/responses.ts, ResponseRecord). A `store: false` response is
 * neither retrievable nor continuable (404), as at OpenAI; it is still a generation in history
 * and the ledger.
 */
import Router from '@koa/router';
import { AppError } from '../../../shared/errors';
import type { Generation } from '../../../shared/db/entities';
import type { GenerateRequest } from '../../../shared/generation/input';
import type { StartOptions, StreamEnd, StreamPart } from '../../../shared/generation/types';
import { AppContext, AppCustom, AppState, callerOf } from '../../context';
import { generationOptions, parseBody } from '../../http';
import { requireAuth, setRateLimitHeaders } from '../../middleware/auth';
import { failedGenerationError } from '../../presenters/openai';
import { generationIdOfResponse, presentResponse, ResponseRecord, responseRecordOf } from '../../presenters/responses';
import { partsOf, ResponseEvent, ResponseEvents } from '../../presenters/responses-events';
import { clientGone, EventStream, pipeEvents } from '../../sse';
import { ChatTurn, inResponsesTerms, refuseUnsupported, ResponsesBody, turnsOfInput } from './responses-input';
import { ResponsesToolOptions, toolOptionsOf } from './responses-tools';
import { z } from 'zod';
import type { RouteDoc } from '../../openapi/registry';
import { IdempotencyHeader } from '../../openapi/schemas/params';
import { ResponseObject } from '../../openapi/schemas/v1';
import { V1_GENERATION_ERRORS } from '../../openapi/schemas/v1-requests';

function previousNotFound(raw: string): AppError {
  // OpenAI's own words and code for it, which clients (Codex among them) recognise.
  return new AppError('not_found', {
    detail: `Previous response with id '${raw}' not found.`,
    errors: [{ field: 'previous_response_id', message: `Previous response with id '${raw}' not found.` }],
  });
}

/**
 * The conversation so far of `previous_response_id`: the caller's own stored, completed response
 * (anyone else's, an unknown id or a `store: false` one is the same 404).
 */
async function earlierTurns(ctx: AppContext, raw: string): Promise<ChatTurn[]> {
  const id = generationIdOfResponse(raw);
  if (id === null) throw previousNotFound(raw);
  const conversation = await ctx.container.generations.conversation(callerOf(ctx).user.id, id).catch((error: unknown) => {
    throw error instanceof AppError && error.code === 'not_found' ? previousNotFound(raw) : error;
  });
  const record = responseRecordOf(conversation.protocol);
  if (!record || !record.store) throw previousNotFound(raw);
  const { generation, messages, toolCalls } = conversation;
  if (generation.status !== 'completed') {
    throw AppError.validation('previous_response_id', `response ${raw} ${generation.status === 'pending' ? 'is still in progress' : 'failed'}: only a completed response can be continued`);
  }
  // Its instructions went first (see requestOf); they are not carried over.
  const first = messages[0];
  const withoutInstructions = record.instructions !== null && first?.role === 'system' && first.content === record.instructions ? messages.slice(1) : messages;
  // Its answer, with the calls it made: the new input's function_call_output items answer them.
  const text = generation.resultText ?? '';
  const answer: ChatTurn = toolCalls.length > 0 ? { role: 'assistant', content: text === '' ? null : text, tool_calls: toolCalls } : { role: 'assistant', content: text };
  return [...withoutInstructions, answer];
}

function recordOf(body: ResponsesBody, tools: ResponsesToolOptions): ResponseRecord {
  return {
    ...tools.echo,
    api: 'responses',
    model: body.model,
    // An empty instruction is none: nothing is sent for it, and nothing is dropped from a chain.
    instructions: body.instructions ? body.instructions : null,
    store: body.store ?? true,
    previous_response_id: body.previous_response_id ?? null,
    metadata: body.metadata ?? {},
    temperature: body.temperature ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
  };
}

function requestOf(body: ResponsesBody, earlier: ChatTurn[], input: ChatTurn[], tools: ResponsesToolOptions): GenerateRequest {
  const instructions: ChatTurn[] = body.instructions ? [{ role: 'system', content: body.instructions }] : [];
  const params: Record<string, unknown> = {};
  if (body.temperature !== null && body.temperature !== undefined) params.temperature = body.temperature;
  if (body.max_output_tokens !== null && body.max_output_tokens !== undefined) params.max_tokens = body.max_output_tokens;
  const messages = [...instructions, ...earlier, ...input];
  return { model: body.model, messages, params, topLevel: {}, stream: body.stream === true, textOptions: tools.textOptions };
}

async function* liveEvents(events: ResponseEvents, parts: AsyncGenerator<StreamPart, StreamEnd>): AsyncGenerator<ResponseEvent> {
  yield* events.start();
  let next = await parts.next();
  while (!next.done) {
    yield* events.part(next.value);
    next = await parts.next();
  }
  yield* events.end(next.value.generation);
}

/** A generation that has nothing left to stream (a replay of an Idempotency-Key) as the events of where it stands. */
async function* eventsAsItStands(events: ResponseEvents, generation: Generation): AsyncGenerator<ResponseEvent> {
  yield* events.start();
  if (generation.status === 'pending') return;
  for (const part of partsOf(generation)) yield* events.part(part);
  yield* events.end(generation);
}

async function respond(ctx: AppContext, request: GenerateRequest, options: StartOptions, record: ResponseRecord): Promise<void> {
  const { generations } = ctx.container;
  if (request.stream) {
    const streamed = await generations.stream(callerOf(ctx), request, options, clientGone(ctx));
    if (streamed.limits) setRateLimitHeaders(ctx, streamed.limits);
    // Refused at once (the content policy): an error before any event, as for a request OpenAI refuses.
    if (!streamed.deltas && streamed.generation.status === 'failed') throw failedGenerationError(streamed.generation);
    const events = new ResponseEvents(streamed.generation, record);
    const source = streamed.deltas ? liveEvents(events, streamed.deltas) : eventsAsItStands(events, streamed.generation);
    pipeEvents(new EventStream(ctx), source, (error) => ctx.container.log.error({ err: error }, 'stream writer failed'));
    return;
  }
  const started = await generations.start(callerOf(ctx), request, options);
  if (started.limits) setRateLimitHeaders(ctx, started.limits);
  // Like Chat Completions: a failed generation is the protocol's error, whose status clients act on.
  if (started.generation.status === 'failed') throw failedGenerationError(started.generation);
  ctx.body = presentResponse(started.generation, record);
}

export function v1ResponseRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>({ prefix: '/v1/responses' });
  router.use(requireAuth);

  router.post('/', async (ctx) => {
    const body = parseBody(ctx, ResponsesBody);
    refuseUnsupported(body);
    const tools = toolOptionsOf(body);
    const input = turnsOfInput(body.input);
    const previous = body.previous_response_id;
    const earlier = previous !== undefined && previous !== null ? await earlierTurns(ctx, previous) : [];
    const record = recordOf(body, tools);
    const options: StartOptions = { ...generationOptions(ctx, body), category: 'text', protocol: record };
    try {
      await respond(ctx, requestOf(body, earlier, input, tools), options, record);
    } catch (error) {
      throw inResponsesTerms(error);
    }
  });

  router.get('/:id', async (ctx) => {
    const id = generationIdOfResponse(ctx.params.id ?? '');
    if (id === null) throw new AppError('not_found');
    const conversation = await ctx.container.generations.conversation(callerOf(ctx).user.id, id);
    const record = responseRecordOf(conversation.protocol);
    // Only what was made as a stored response is one: other generations, and `store: false` ones, are not found.
    if (!record || !record.store) throw new AppError('not_found');
    ctx.body = presentResponse(conversation.generation, record);
  });

  return router;
}

const tag = 'OpenAI- and Anthropic-compatible (/v1)';

export const v1ResponseRouteDocs: RouteDoc[] = [
  {
    method: 'post',
    path: '/v1/responses',
    tag,
    auth: 'user',
    summary: "OpenAI's Responses API (Codex, the OpenAI SDKs)",
    description: '`previous_response_id` chains stored responses; `stream: true` answers the response.* events.',
    headers: IdempotencyHeader,
    body: ResponsesBody,
    bodyExample: { model: 'demo-text', input: 'Hello' },
    responses: { 200: { description: 'The response, or its events', schema: ResponseObject, content: { 'text/event-stream': {} } } },
    errors: V1_GENERATION_ERRORS,
  },
  { method: 'get', path: '/v1/responses/:id', tag, auth: 'user', summary: 'A stored response', params: z.object({ id: z.string().meta({ example: 'resp_12' }) }), responses: { 200: { description: 'The response as it stands', schema: ResponseObject } } },
];
