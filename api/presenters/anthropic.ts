/**
 * Our generations in Anthropic's wire shapes (/v1/messages): a Message, with its text and the
 * tools it called as `tool_use` blocks, the opening and the end of a streamed one (its content
 * blocks in between: anthropic-stream.ts), and the model list as Anthropic's clients read it. Ids
 * are ours with Anthropic's prefix (`msg_<id>`); the model is named as asked.
 */
import type { ModelListing } from '../../shared/catalog';
import type { Generation } from '../../shared/db/entities';
import type { ToolCall } from '../../shared/providers/types';
import { toolUseId } from './anthropic-tool-ids';
import { chatEndOf, usageOf } from './openai';

export type AnthropicStopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'refusal';

/** One server-sent event: Anthropic names every event (its clients skip unnamed ones). */
export interface AnthropicEvent {
  event: string;
  data: unknown;
}

export function messageId(generation: Pick<Generation, 'id'>): string {
  return `msg_${generation.id}`;
}

/**
 * Why the message ended, from what the generation kept: cut by `max_tokens` (`length`), calling
 * tools, withheld by the provider's filter (`refusal`), or on a stop sequence when the provider
 * said which (`stop_sequence` names it; OpenAI's API never says, so a stop there reads as
 * `end_turn`: the sequence is cut from the text, and nothing else tells it from a natural end).
 * A provider that reports no finish reason of its own has cut a reply that used every token
 * `max_tokens` allowed.
 */
export function stopReasonOf(generation: Generation, maxTokens: number): { stop_reason: AnthropicStopReason; stop_sequence: string | null } {
  const end = chatEndOf(generation);
  const reason = (stop_reason: AnthropicStopReason, stop_sequence: string | null = null) => ({ stop_reason, stop_sequence });
  if (end.finishReason === 'length') return reason('max_tokens');
  if (end.toolCalls.length > 0) return reason('tool_use');
  if (end.finishReason === 'content_filter') return reason('refusal');
  if (end.stopSequence !== undefined) return reason('stop_sequence', end.stopSequence);
  return reason(usageOf(generation).completion_tokens >= maxTokens ? 'max_tokens' : 'end_turn');
}

function usage(generation: Generation) {
  const { prompt_tokens, completion_tokens } = usageOf(generation);
  // Nothing is cached here: the prompt-cache counters are truly zero.
  return { input_tokens: prompt_tokens, output_tokens: completion_tokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
}

/**
 * A call's JSON arguments as the `input` object Anthropic's clients expect. Arguments that are not
 * a JSON object (a model's slip; Anthropic's own models always write one) are an empty input,
 * which the client's check of the tool's input then reports back to the model as the tool's error.
 */
export function inputOf(args: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(args);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // Not JSON at all: as above.
  }
  return {};
}

export function toolUseBlock(call: ToolCall) {
  return { type: 'tool_use' as const, id: toolUseId(call.id), name: call.function.name, input: inputOf(call.function.arguments) };
}

/** The message's blocks: its text (kept, if empty, only when there is nothing else), then its tool uses. */
function contentOf(generation: Generation) {
  const { toolCalls } = chatEndOf(generation);
  const text = generation.resultText ?? '';
  const blocks: Array<{ type: 'text'; text: string } | ReturnType<typeof toolUseBlock>> = [];
  if (text !== '' || toolCalls.length === 0) blocks.push({ type: 'text', text });
  return [...blocks, ...toolCalls.map(toolUseBlock)];
}

export function presentMessage(generation: Generation, model: string, maxTokens: number) {
  return {
    id: messageId(generation),
    type: 'message',
    role: 'assistant',
    model,
    content: contentOf(generation),
    ...stopReasonOf(generation, maxTokens),
    usage: usage(generation),
  };
}

/** The opening of a streamed message: the empty message (its blocks follow as they come). */
export function messageStartEvent(generation: Generation, model: string): AnthropicEvent {
  const message = {
    id: messageId(generation),
    type: 'message',
    role: 'assistant',
    model,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    // Our providers count the prompt at the end; the counts come with message_delta, whose
    // usage Anthropic's clients take over the start's (it is cumulative).
    usage: { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
  };
  return { event: 'message_start', data: { type: 'message_start', message } };
}

/** The end of a streamed message that completed, after its last block: why it stopped, and its usage. */
export function messageEndEvents(generation: Generation, maxTokens: number): AnthropicEvent[] {
  const { input_tokens, output_tokens } = usage(generation);
  return [
    { event: 'message_delta', data: { type: 'message_delta', delta: stopReasonOf(generation, maxTokens), usage: { input_tokens, output_tokens } } },
    { event: 'message_stop', data: { type: 'message_stop' } },
  ];
}

/**
 * `created_at` is a model's release date, which the catalog does not have; Anthropic's API gives
 * the epoch when a release date is unknown.
 */
const UNKNOWN_RELEASE = new Date(0).toISOString();

export function presentAnthropicModel(listing: ModelListing) {
  const { model } = listing;
  return {
    type: 'model',
    id: model.slug,
    display_name: model.name,
    created_at: UNKNOWN_RELEASE,
    max_input_tokens: typeof model.config.max_context === 'number' ? model.config.max_context : null,
  };
}

/** One page of Anthropic's model list (its SDKs page on with `after_id` = `last_id` while `has_more`). */
export function presentAnthropicModelPage(page: ModelListing[], hasMore: boolean) {
  const data = page.map(presentAnthropicModel);
  return { data, has_more: hasMore, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
}
