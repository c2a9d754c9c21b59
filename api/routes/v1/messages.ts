/**
 * POST /v1/messages: Anthropic's Messages API over our generations, so Anthropic's SDKs and
 * Claude Code can use any text model of the catalog. The request becomes a text generation like
 * any other (plan gate, limits and their headers, hold and capture, history, ledger,
 * Idempotency-Key, content policy, webhooks); the answer is a Message, or with `stream: true`
 * Anthropic's named server-sent events, billed exactly like our own streams (a client that goes
 * away is not charged). Errors take Anthropic's shape (presenters/errors.ts).
 *
 * Credentials: `x-api-key` (what the SDKs send for an API key) or `Authorization: Bearer`.
 * `anthropic-version` is accepted and not required: there is one version of this wire format
 * here, and refusing a request without it would only break hand-written clients (the SDKs and
 * Claude Code always send it). `anthropic-beta` is ignored, as is Claude Code's `?beta=true`.
 */
import Router from '@koa/router';
import type { Generation } from '../../../shared/db/entities';
import { AppError } from '../../../shared/errors';
import type { StreamEnd } from '../../../shared/generation/types';
import { AppContext, AppCustom, AppState, callerOf } from '../../context';
import { generationOptions, parseBody } from '../../http';
import { requireAuth, setRateLimitHeaders } from '../../middleware/auth';
import { AnthropicEvent, messageEndEvents, messageStartEvents, presentMessage, textDeltaEvent } from '../../presenters/anthropic';
import { presentError } from '../../presenters/errors';
import { failedGenerationError } from '../../presenters/openai';
import { clientGone, EventStream, pipeEvents } from '../../sse';
import { generateRequestOf, MessagesBody } from './messages-request';
import { textParts } from '../../../shared/generation/tool-calls';

/**
 * A generation that is not being run by this request (a replay, or one refused at once): its
 * result, or the error it ended with. A replay of a request still running has no result yet.
 */
function finished(generation: Generation): Generation {
  if (generation.status === 'failed') throw failedGenerationError(generation);
  if (generation.status !== 'completed') throw new AppError('idempotent_request_in_progress');
  return generation;
}

async function* liveEvents(ctx: AppContext, body: MessagesBody, generation: Generation, deltas: AsyncGenerator<string, StreamEnd>): AsyncGenerator<AnthropicEvent> {
  yield* messageStartEvents(generation, body.model);
  let next = await deltas.next();
  while (!next.done) {
    yield textDeltaEvent(next.value);
    next = await deltas.next();
  }
  const ended = next.value.generation;
  if (ended.status !== 'completed') {
    // The stream has answered 200 already: Anthropic's clients read an `error` event as the failure.
    yield { event: 'error', data: presentError('anthropic', failedGenerationError(ended), ctx.state.requestId).body };
    return;
  }
  yield* messageEndEvents(ended, body.max_tokens);
}

/** A completed generation streamed whole (a replay of a streamed request): the same events, one delta. */
async function* wholeEvents(body: MessagesBody, generation: Generation): AsyncGenerator<AnthropicEvent> {
  yield* messageStartEvents(generation, body.model);
  if (generation.resultText) yield textDeltaEvent(generation.resultText);
  yield* messageEndEvents(generation, body.max_tokens);
}

export function v1MessageRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>({ prefix: '/v1/messages' });
  router.use(requireAuth);

  router.post('/', async (ctx) => {
    // Anthropic's SDKs read it as the response's `_request_id`.
    ctx.set('request-id', ctx.state.requestId);
    const body = parseBody(ctx, MessagesBody);
    const request = generateRequestOf(body);
    const options = { ...generationOptions(ctx, body), category: 'text' as const };
    const { generations } = ctx.container;
    if (request.stream) {
      const streamed = await generations.stream(callerOf(ctx), request, options, clientGone(ctx));
      if (streamed.limits) setRateLimitHeaders(ctx, streamed.limits);
      const events = streamed.deltas ? liveEvents(ctx, body, streamed.generation, textParts(streamed.deltas)) : wholeEvents(body, finished(streamed.generation));
      pipeEvents(new EventStream(ctx), events, (error) => ctx.container.log.error({ err: error }, 'stream writer failed'));
      return;
    }
    const started = await generations.start(callerOf(ctx), request, options);
    if (started.limits) setRateLimitHeaders(ctx, started.limits);
    ctx.body = presentMessage(finished(started.generation), body.model, body.max_tokens);
  });

  return router;
}
