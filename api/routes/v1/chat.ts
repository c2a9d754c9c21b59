/**
 * POST /v1/chat/completions: OpenAI's Chat Completions over our generations. The request becomes
 * a text generation like any other (plan gate, limits and their headers, hold and capture, history,
 * ledger, Idempotency-Key, content policy, webhooks); the answer is a chat completion, or with
 * `stream: true` OpenAI's server-sent chunks ending in `data: [DONE]`, billed exactly like our
 * own streams (a client that goes away is not charged). Stop sequences, tools, tool choice, the
 * response format and tool-call conversations go to the domain, which refuses what the model does
 * not declare (400 naming the `param`) before anything is held; tool calls come back as
 * `message.tool_calls` (content null when there is no text) with `finish_reason: "tool_calls"`,
 * or streamed as OpenAI streams them.
 */
import Router from '@koa/router';
import { z } from 'zod';
import type { Generation } from '../../../shared/db/entities';
import { AppError } from '../../../shared/errors';
import type { GenerateRequest } from '../../../shared/generation/input';
import type { StreamEnd, StreamPart } from '../../../shared/generation/types';
import { AppContext, AppCustom, AppState, callerOf } from '../../context';
import { generationOptions, parseBody } from '../../http';
import { requireAuth, setRateLimitHeaders } from '../../middleware/auth';
import { presentError } from '../../presenters/errors';
import { chatEndOf, failedGenerationError, presentChatChunk, presentChatCompletion, presentToolCallDelta, usageOf } from '../../presenters/openai';
import { clientGone, EventStream, pipeEvents } from '../../sse';
import type { RouteDoc } from '../../openapi/registry';
import { IdempotencyHeader } from '../../openapi/schemas/params';
import { ChatCompletion } from '../../openapi/schemas/v1';
import { V1_GENERATION_ERRORS } from '../../openapi/schemas/v1-requests';

const Message = z.looseObject({ role: z.string() });

/** What we read of a Chat Completions request; fields we do not use (top_p, user, …) are accepted and ignored. */
const ChatBody = z.looseObject({
  model: z.string().min(1, 'is required').max(200),
  messages: z.array(Message).min(1, 'must not be empty').max(1000),
  temperature: z.number().min(0).max(2).nullish(),
  max_tokens: z.number().int().min(1).nullish(),
  max_completion_tokens: z.number().int().min(1).nullish(),
  n: z.literal(1, { message: 'only 1 choice is supported' }).nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullish(),
  // Checked by the domain against what the model declares (shared/generation/text-options.ts).
  stop: z.unknown().optional(),
  tools: z.unknown().optional(),
  tool_choice: z.unknown().optional(),
  response_format: z.unknown().optional(),
});
type ChatBody = z.infer<typeof ChatBody>;

/** OpenAI's roles in ours: a `developer` message is what older models call a system message. */
function messagesOf(body: ChatBody): unknown[] {
  return body.messages.map((message) => (message.role === 'developer' ? { ...message, role: 'system' } : message));
}

function generateRequest(body: ChatBody): GenerateRequest {
  const maxTokens = body.max_completion_tokens ?? body.max_tokens ?? undefined;
  const params: Record<string, unknown> = {};
  if (body.temperature !== null && body.temperature !== undefined) params.temperature = body.temperature;
  if (maxTokens !== undefined) params.max_tokens = maxTokens;
  const textOptions = { stop: body.stop, tools: body.tools, tool_choice: body.tool_choice, response_format: body.response_format };
  return { model: body.model, messages: messagesOf(body), params, topLevel: {}, stream: body.stream === true, textOptions };
}

/** A streamed part as the delta of its chunk: text as `content`, a tool-call piece under `tool_calls`. */
function deltaOf(part: StreamPart) {
  return typeof part === 'string' ? { content: part } : { tool_calls: [presentToolCallDelta(part)] };
}

async function* chunks(ctx: AppContext, body: ChatBody, first: StreamEnd, deltas: AsyncGenerator<StreamPart, StreamEnd>) {
  const { generation } = first;
  yield { event: null, data: presentChatChunk(generation, body.model, { delta: { role: 'assistant', content: '' } }) };
  let next = await deltas.next();
  while (!next.done) {
    yield { event: null, data: presentChatChunk(generation, body.model, { delta: deltaOf(next.value) }) };
    next = await deltas.next();
  }
  const ended = next.value.generation;
  if (ended.status !== 'completed') {
    // A stream cannot change its status any more: OpenAI's clients read an `error` chunk as the failure.
    yield { event: null, data: presentError('openai', failedGenerationError(ended), ctx.state.requestId).body };
    return;
  }
  yield { event: null, data: presentChatChunk(ended, body.model, { finish: chatEndOf(ended).finishReason }) };
  if (body.stream_options?.include_usage) yield { event: null, data: presentChatChunk(ended, body.model, { usage: usageOf(ended) }) };
  yield { event: null, data: '[DONE]' };
}

/**
 * The generation a completion can be made of: a failed one is the protocol's error, and a replay
 * of a request still running (Idempotency-Key) has no answer yet — 409, which clients retry.
 */
function finished(generation: Generation): Generation {
  if (generation.status === 'failed') throw failedGenerationError(generation);
  if (generation.status !== 'completed') throw new AppError('idempotent_request_in_progress');
  return generation;
}

export function v1ChatRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>({ prefix: '/v1/chat' });
  router.use(requireAuth);

  router.post('/completions', async (ctx) => {
    const body = parseBody(ctx, ChatBody);
    const request = generateRequest(body);
    const options = { ...generationOptions(ctx, body), category: 'text' as const };
    const { generations } = ctx.container;
    if (request.stream) {
      const streamed = await generations.stream(callerOf(ctx), request, options, clientGone(ctx));
      if (streamed.limits) setRateLimitHeaders(ctx, streamed.limits);
      if (!streamed.deltas) {
        // A replay, or refused at once (the content policy): there is nothing to stream.
        ctx.body = presentChatCompletion(finished(streamed.generation), body.model);
        return;
      }
      pipeEvents(new EventStream(ctx), chunks(ctx, body, streamed, streamed.deltas), (error) => ctx.container.log.error({ err: error }, 'stream writer failed'));
      return;
    }
    const started = await generations.start(callerOf(ctx), request, options);
    if (started.limits) setRateLimitHeaders(ctx, started.limits);
    ctx.body = presentChatCompletion(finished(started.generation), body.model);
  });

  return router;
}

export const v1ChatRouteDocs: RouteDoc[] = [
  {
    method: 'post',
    path: '/v1/chat/completions',
    tag: 'OpenAI- and Anthropic-compatible (/v1)',
    auth: 'user',
    summary: "OpenAI's Chat Completions",
    description: 'A text generation like any other (plan, limits, hold, ledger, history). `stream: true` answers chat.completion.chunk events ending in `data: [DONE]`.',
    headers: IdempotencyHeader,
    body: ChatBody,
    bodyExample: { model: 'demo-text', messages: [{ role: 'user', content: 'Hello' }] },
    responses: { 200: { description: 'The completion, or its chunks', schema: ChatCompletion, content: { 'text/event-stream': {} } } },
    errors: V1_GENERATION_ERRORS,
  },
];
