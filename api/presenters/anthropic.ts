/**
 * Our generations in Anthropic's wire shapes (/v1/messages): a Message, the server-sent events
 * of a streamed one (message_start, content_block_start, ping, content_block_delta…,
 * content_block_stop, message_delta, message_stop), and the model list as Anthropic's clients
 * read it. Ids are ours with Anthropic's prefix (`msg_<id>`); the model is named as asked.
 */
import type { ModelListing } from '../../shared/catalog';
import type { Generation } from '../../shared/db/entities';
import { usageOf } from './openai';

export type AnthropicStopReason = 'end_turn' | 'max_tokens' | 'stop_sequence';

/** One server-sent event: Anthropic names every event (its clients skip unnamed ones). */
export interface AnthropicEvent {
  event: string;
  data: unknown;
}

export function messageId(generation: Pick<Generation, 'id'>): string {
  return `msg_${generation.id}`;
}

/**
 * Why the text ended. The domain reports no finish reason yet, so a reply that used every token
 * `max_tokens` allowed was cut there, and any other ended on its own. When the domain has stop
 * sequences (see stopSequenceParams), the one that ended the text is reported here.
 */
export function stopReasonOf(generation: Generation, maxTokens: number): { stop_reason: AnthropicStopReason; stop_sequence: string | null } {
  return { stop_reason: usageOf(generation).completion_tokens >= maxTokens ? 'max_tokens' : 'end_turn', stop_sequence: null };
}

function usage(generation: Generation) {
  const { prompt_tokens, completion_tokens } = usageOf(generation);
  // Nothing is cached here: the prompt-cache counters are truly zero.
  return { input_tokens: prompt_tokens, output_tokens: completion_tokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
}

export function presentMessage(generation: Generation, model: string, maxTokens: number) {
  return {
    id: messageId(generation),
    type: 'message',
    role: 'assistant',
    model,
    content: [{ type: 'text', text: generation.resultText ?? '' }],
    ...stopReasonOf(generation, maxTokens),
    usage: usage(generation),
  };
}

/** The opening of a streamed message: the empty message, its one text block, a ping. */
export function messageStartEvents(generation: Generation, model: string): AnthropicEvent[] {
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
  return [
    { event: 'message_start', data: { type: 'message_start', message } },
    { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
    { event: 'ping', data: { type: 'ping' } },
  ];
}

export function textDeltaEvent(text: string): AnthropicEvent {
  return { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } } };
}

/** The end of a streamed message that completed: why it stopped, and its usage. */
export function messageEndEvents(generation: Generation, maxTokens: number): AnthropicEvent[] {
  const { input_tokens, output_tokens } = usage(generation);
  return [
    { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
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
