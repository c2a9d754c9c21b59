/**
 * Our generations in OpenAI's wire shapes (/v1): the model list, a chat completion (with its tool
 * calls and finish reason, kept in the generation's result metadata) and its stream chunks, and a failed generation as the error OpenAI's clients expect instead of a
 * result. Ids are ours with OpenAI's prefixes (`chatcmpl-<id>`); the model is named as asked.
 */
import type { ModelListing } from '../../shared/catalog';
import type { Generation } from '../../shared/db/entities';
import { AppError, ErrorCode } from '../../shared/errors';
import type { FailureKind } from '../../shared/generation/types';
import type { FinishReason, ToolCall, ToolCallDelta, Usage } from '../../shared/providers/types';
import { TextEnd, textEndOf } from '../../shared/generation/tool-calls';
import { parseJson } from './generation';

/** When the catalog was loaded: what /v1/models gives as every model's `created`. */
const LISTED_AT = Math.floor(Date.now() / 1000);

export function presentOpenAIModel(listing: ModelListing) {
  return { id: listing.model.slug, object: 'model', created: LISTED_AT, owned_by: listing.model.provider };
}

export function presentOpenAIModels(listings: ModelListing[]) {
  return { object: 'list', data: listings.map(presentOpenAIModel) };
}

const seconds = (date: Date): number => Math.floor(date.getTime() / 1000);

export function usageOf(generation: Generation): Usage {
  const usage = parseJson(generation.usage);
  const prompt = Number(usage?.prompt_tokens ?? 0);
  const completion = Number(usage?.completion_tokens ?? 0);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: Number(usage?.total_tokens ?? prompt + completion) };
}

export function chatCompletionId(generation: Pick<Generation, 'id'>): string {
  return `chatcmpl-${generation.id}`;
}

/** Why a completed generation finished and the tools it called, as kept with it. */
export function chatEndOf(generation: Generation): TextEnd {
  return textEndOf(parseJson(generation.resultMetadata));
}

/** A tool call as a completion's message carries it. */
function presentToolCall(call: ToolCall) {
  return { id: call.id, type: 'function' as const, function: { name: call.function.name, arguments: call.function.arguments } };
}

export function presentChatCompletion(generation: Generation, model: string) {
  const { finishReason, toolCalls } = chatEndOf(generation);
  const text = generation.resultText ?? '';
  // A message that only calls tools has no content: OpenAI says null there, and clients test for it.
  const content = toolCalls.length > 0 && text === '' ? null : text;
  const message = { role: 'assistant', content, refusal: null, ...(toolCalls.length > 0 ? { tool_calls: toolCalls.map(presentToolCall) } : {}) };
  return {
    id: chatCompletionId(generation),
    object: 'chat.completion',
    created: seconds(generation.createdAt),
    model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason }],
    usage: usageOf(generation),
    system_fingerprint: null,
  };
}

/**
 * A piece of a tool call as OpenAI streams it: the first piece of a call has its id, `type` and
 * name (with empty arguments), the next ones only arguments, all under the call's index.
 */
export function presentToolCallDelta(piece: ToolCallDelta) {
  const starts = piece.id !== undefined || piece.name !== undefined;
  return {
    index: piece.index,
    ...(piece.id !== undefined ? { id: piece.id } : {}),
    ...(starts ? { type: 'function' as const } : {}),
    function: { ...(piece.name !== undefined ? { name: piece.name } : {}), arguments: piece.arguments ?? '' },
  };
}

type ChunkDelta = { role?: 'assistant'; content?: string; tool_calls?: Array<ReturnType<typeof presentToolCallDelta>> };

/** One chunk of a streamed chat completion: a delta, the end (`finish_reason`), or the usage (no choices). */
export function presentChatChunk(generation: Generation, model: string, part: { delta?: ChunkDelta; finish?: FinishReason; usage?: Usage }) {
  return {
    id: chatCompletionId(generation),
    object: 'chat.completion.chunk',
    created: seconds(generation.createdAt),
    model,
    system_fingerprint: null,
    choices: part.usage ? [] : [{ index: 0, delta: part.delta ?? {}, logprobs: null, finish_reason: part.finish ?? null }],
    ...(part.usage ? { usage: part.usage } : {}),
  };
}

const FAILURE_CODES: Record<FailureKind, ErrorCode> = {
  refused: 'generation_refused',
  content_policy: 'generation_refused',
  bad_request: 'upstream_rejected',
  rate_limited: 'upstream_rate_limited',
  unavailable: 'upstream_unavailable',
  timeout: 'upstream_timeout',
  cancelled: 'generation_cancelled',
  interrupted: 'upstream_unavailable',
  internal: 'internal_error',
};

/** A failed generation as the error the protocols answer with (their clients expect no "failed" result). */
export function failedGenerationError(generation: Generation): AppError {
  const kind = (parseJson(generation.resultMetadata)?.failure ?? 'internal') as FailureKind;
  return new AppError(FAILURE_CODES[kind] ?? 'internal_error', { detail: generation.error ?? undefined });
}
