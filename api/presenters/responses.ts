/**
 * Our text generations in the shape of OpenAI's Responses API (/v1/responses): the response
 * object, `resp_<generation id>`, whose `output` is the assistant message `msg_<id>` (one
 * `output_text` part) when the answer has text, then a `function_call` item `fc_<id>_<n>` per tool
 * it called (its `call_id` is the call's id, which a `function_call_output` answers). A reply cut
 * at `max_output_tokens` (the domain's finish reason `length`) or by a content filter is
 * `incomplete`, saying why. The streamed events are in responses-events.ts.
 *
 * What the request said that the generation row does not hold (the model as the client named it,
 * the instructions, `store`, metadata, the previous response, the tools, tool choice and text
 * format to echo) is the ResponseRecord, kept with the generation's input
 * (StartOptions.protocol) so that a later GET or chain presents it again.
 */
import { z } from 'zod';
import type { Generation } from '../../shared/db/entities';
import type { FailureKind, ProtocolRecord } from '../../shared/generation/types';
import type { ToolCall } from '../../shared/providers/types';
import { parseJson } from './generation';
import { chatEndOf, usageOf } from './openai';

const ResponseRecordSchema = z.object({
  api: z.literal('responses'),
  model: z.string(),
  instructions: z.string().nullable(),
  store: z.boolean(),
  previous_response_id: z.string().nullable(),
  metadata: z.record(z.string(), z.string()),
  temperature: z.number().nullable(),
  max_output_tokens: z.number().nullable(),
  // Echoed as asked. Optional: a response stored before tools were taken has none, and must still read.
  tools: z.array(z.unknown()).optional(),
  tool_choice: z.unknown().optional(),
  text: z.looseObject({ format: z.unknown() }).optional(),
});
export type ResponseRecord = z.infer<typeof ResponseRecordSchema>;

/** The record of a generation made through /v1/responses; null for any other generation. */
export function responseRecordOf(protocol: ProtocolRecord | null): ResponseRecord | null {
  const parsed = ResponseRecordSchema.safeParse(protocol);
  return parsed.success ? parsed.data : null;
}

export function responseId(generation: Pick<Generation, 'id'>): string {
  return `resp_${generation.id}`;
}

/** The generation id in `resp_<id>`; null for anything else. */
export function generationIdOfResponse(raw: string): number | null {
  const match = /^resp_([1-9][0-9]{0,9})$/.exec(raw);
  const id = match ? Number(match[1]) : NaN;
  return Number.isSafeInteger(id) && id <= 2_147_483_647 ? id : null;
}

export function messageId(generation: Pick<Generation, 'id'>): string {
  return `msg_${generation.id}`;
}

const seconds = (date: Date): number => Math.floor(date.getTime() / 1000);

export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed' | 'cancelled';

function failureKindOf(generation: Generation): FailureKind | null {
  const failure = parseJson(generation.resultMetadata)?.failure;
  return typeof failure === 'string' ? (failure as FailureKind) : null;
}

/** Why a completed generation's answer is incomplete, in OpenAI's words; null when it ended of itself (or to call tools). */
function incompleteReasonOf(generation: Generation): 'max_output_tokens' | 'content_filter' | null {
  if (generation.status !== 'completed') return null;
  const { finishReason } = chatEndOf(generation);
  return finishReason === 'length' ? 'max_output_tokens' : finishReason === 'content_filter' ? 'content_filter' : null;
}

function statusOf(generation: Generation): ResponseStatus {
  if (generation.status === 'pending') return 'in_progress';
  if (generation.status === 'completed') return incompleteReasonOf(generation) ? 'incomplete' : 'completed';
  return failureKindOf(generation) === 'cancelled' ? 'cancelled' : 'failed';
}

/**
 * Why a response failed, in the codes of OpenAI's `ResponseError`: a refused prompt is
 * `invalid_prompt`, a busy provider `rate_limit_exceeded` (clients wait and retry), anything else
 * `server_error`.
 */
function errorOf(generation: Generation): { code: 'invalid_prompt' | 'rate_limit_exceeded' | 'server_error'; message: string } {
  const kind = failureKindOf(generation);
  const code = kind === 'refused' || kind === 'content_policy' ? 'invalid_prompt' : kind === 'rate_limited' ? 'rate_limit_exceeded' : 'server_error';
  return { code, message: generation.error ?? 'The response failed' };
}

export type ItemStatus = 'in_progress' | 'completed' | 'incomplete';

export function outputText(text: string) {
  return { type: 'output_text' as const, annotations: [], logprobs: [], text };
}

export function outputMessage(generation: Pick<Generation, 'id'>, status: ItemStatus, content: Array<ReturnType<typeof outputText>>) {
  return { id: messageId(generation), type: 'message' as const, status, content, role: 'assistant' as const };
}

/** The id of the function_call item of a generation's `index`th call (stable, so a GET answers the same ids). */
export function functionCallItemId(generation: Pick<Generation, 'id'>, index: number): string {
  return `fc_${generation.id}_${index}`;
}

export function functionCallItem(generation: Pick<Generation, 'id'>, index: number, call: Pick<ToolCall, 'id' | 'function'>, status: ItemStatus) {
  return { id: functionCallItemId(generation, index), type: 'function_call' as const, status, arguments: call.function.arguments, call_id: call.id, name: call.function.name };
}

export type OutputItem = ReturnType<typeof outputMessage> | ReturnType<typeof functionCallItem>;

/**
 * What an ended answer's output is: its text as a message (also when it is empty and called
 * nothing: a response always says something), then its calls, in the order the model made them.
 * In an incomplete response the last item is the one that was cut.
 */
export function outputOf(generation: Generation): OutputItem[] {
  const status = statusOf(generation);
  if (status !== 'completed' && status !== 'incomplete') return [];
  const text = generation.resultText ?? '';
  const { toolCalls } = chatEndOf(generation);
  const items: OutputItem[] = [];
  if (text !== '' || toolCalls.length === 0) items.push(outputMessage(generation, 'completed', [outputText(text)]));
  toolCalls.forEach((call, index) => items.push(functionCallItem(generation, index, call, 'completed')));
  const last = items.at(-1);
  if (status === 'incomplete' && last) last.status = 'incomplete';
  return items;
}

function responseUsage(generation: Generation) {
  const usage = usageOf(generation);
  return {
    input_tokens: usage.prompt_tokens,
    input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
    output_tokens: usage.completion_tokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.total_tokens,
  };
}

/**
 * The response object of a generation as it stands (or, with `asStarted`, as it stood when it
 * began: in progress, no output yet, which is what a stream's first events carry). `output_text`
 * is not sent: OpenAI's SDKs compute it from `output`, as they do for OpenAI's own answers.
 * `parallel_tool_calls` is always true: the model may call several tools at once whatever was
 * asked (the providers here take no such switch), so it is not echoed as if it had been applied.
 */
export function presentResponse(generation: Generation, record: ResponseRecord, options: { asStarted?: boolean; output?: OutputItem[] } = {}) {
  const status = options.asStarted ? 'in_progress' : statusOf(generation);
  const answered = status === 'completed' || status === 'incomplete';
  const incomplete = status === 'incomplete' ? incompleteReasonOf(generation) : null;
  return {
    id: responseId(generation),
    object: 'response' as const,
    created_at: seconds(generation.createdAt),
    status,
    background: false,
    completed_at: status === 'completed' && generation.completedAt ? seconds(generation.completedAt) : null,
    error: status === 'failed' || status === 'cancelled' ? errorOf(generation) : null,
    incomplete_details: incomplete ? { reason: incomplete } : null,
    instructions: record.instructions,
    max_output_tokens: record.max_output_tokens,
    max_tool_calls: null,
    model: record.model,
    output: answered ? (options.output ?? outputOf(generation)) : [],
    parallel_tool_calls: true,
    previous_response_id: record.previous_response_id,
    reasoning: { effort: null, summary: null },
    service_tier: 'default',
    store: record.store,
    temperature: record.temperature,
    text: record.text ?? { format: { type: 'text' } },
    tool_choice: record.tool_choice ?? 'auto',
    tools: record.tools ?? [],
    top_p: null,
    truncation: 'disabled',
    usage: answered ? responseUsage(generation) : null,
    user: null,
    metadata: record.metadata,
  };
}
