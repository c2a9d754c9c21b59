/**
 * Our text generations in the shapes of OpenAI's Responses API (/v1/responses): the response
 * object (`resp_<generation id>`, with one assistant message `msg_<id>` holding one `output_text`
 * part) and the server-sent events of a streamed one, each named by its type and numbered by
 * `sequence_number`, in the order OpenAI sends them.
 *
 * What the request said that the generation row does not hold (the model as the client named it,
 * the instructions, `store`, metadata, the previous response) is the ResponseRecord, kept with the
 * generation's input (StartOptions.protocol) so that a later GET or chain presents it again.
 */
import { z } from 'zod';
import type { Generation } from '../../shared/db/entities';
import type { FailureKind, ProtocolRecord } from '../../shared/generation/types';
import { usageOf } from './openai';

const ResponseRecordSchema = z.object({
  api: z.literal('responses'),
  model: z.string(),
  instructions: z.string().nullable(),
  store: z.boolean(),
  previous_response_id: z.string().nullable(),
  metadata: z.record(z.string(), z.string()),
  temperature: z.number().nullable(),
  max_output_tokens: z.number().nullable(),
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

function messageId(generation: Pick<Generation, 'id'>): string {
  return `msg_${generation.id}`;
}

const seconds = (date: Date): number => Math.floor(date.getTime() / 1000);

export type ResponseStatus = 'in_progress' | 'completed' | 'failed' | 'cancelled';

function failureKindOf(generation: Generation): FailureKind | null {
  try {
    const metadata = JSON.parse(generation.resultMetadata ?? 'null') as { failure?: FailureKind } | null;
    return metadata?.failure ?? null;
  } catch {
    return null;
  }
}

function statusOf(generation: Generation): ResponseStatus {
  if (generation.status === 'pending') return 'in_progress';
  if (generation.status === 'completed') return 'completed';
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

function outputText(text: string) {
  return { type: 'output_text' as const, annotations: [], logprobs: [], text };
}

function outputMessage(generation: Generation, status: 'in_progress' | 'completed', content: Array<ReturnType<typeof outputText>>) {
  return { id: messageId(generation), type: 'message' as const, status, content, role: 'assistant' as const };
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
 */
export function presentResponse(generation: Generation, record: ResponseRecord, options: { asStarted?: boolean } = {}) {
  const status = options.asStarted ? 'in_progress' : statusOf(generation);
  const done = status === 'completed';
  return {
    id: responseId(generation),
    object: 'response' as const,
    created_at: seconds(generation.createdAt),
    status,
    background: false,
    completed_at: done && generation.completedAt ? seconds(generation.completedAt) : null,
    error: status === 'failed' || status === 'cancelled' ? errorOf(generation) : null,
    incomplete_details: null,
    instructions: record.instructions,
    max_output_tokens: record.max_output_tokens,
    max_tool_calls: null,
    model: record.model,
    output: done ? [outputMessage(generation, 'completed', [outputText(generation.resultText ?? '')])] : [],
    parallel_tool_calls: true,
    previous_response_id: record.previous_response_id,
    reasoning: { effort: null, summary: null },
    service_tier: 'default',
    store: record.store,
    temperature: record.temperature,
    text: { format: { type: 'text' } },
    tool_choice: 'auto',
    tools: [],
    top_p: null,
    truncation: 'disabled',
    usage: done ? responseUsage(generation) : null,
    user: null,
    metadata: record.metadata,
  };
}

/** One server-sent event: `event:` is its type, `data:` the event with that type in it. */
export interface ResponseEvent {
  event: string;
  data: { type: string; sequence_number: number } & Record<string, unknown>;
}

/**
 * The events of one streamed response, numbered from 0: `response.created` and
 * `response.in_progress`; with the first text, `response.output_item.added` (the assistant
 * message) and `response.content_part.added` (its output_text part); a `response.output_text.delta`
 * per piece; then `response.output_text.done`, `response.content_part.done`,
 * `response.output_item.done` and `response.completed` with the usage. A response that fails ends
 * with `response.failed` carrying the error instead (the partial text is not kept, so its output
 * is empty, as a later GET shows it).
 */
export class ResponseEvents {
  private sequence = 0;
  private text = '';
  private opened = false;

  constructor(
    private readonly generation: Generation,
    private readonly record: ResponseRecord,
  ) {}

  private event(type: string, fields: Record<string, unknown>): ResponseEvent {
    return { event: type, data: { type, sequence_number: this.sequence++, ...fields } };
  }

  private get where() {
    return { item_id: messageId(this.generation), output_index: 0, content_index: 0 };
  }

  start(): ResponseEvent[] {
    const response = presentResponse(this.generation, this.record, { asStarted: true });
    return [this.event('response.created', { response }), this.event('response.in_progress', { response })];
  }

  /** The message and its part open with the first text (or at the end, for an empty answer). */
  private open(): ResponseEvent[] {
    if (this.opened) return [];
    this.opened = true;
    return [
      this.event('response.output_item.added', { output_index: 0, item: outputMessage(this.generation, 'in_progress', []) }),
      this.event('response.content_part.added', { ...this.where, part: outputText('') }),
    ];
  }

  delta(text: string): ResponseEvent[] {
    this.text += text;
    return [...this.open(), this.event('response.output_text.delta', { ...this.where, delta: text, logprobs: [] })];
  }

  /** The end, from the generation as it ended. */
  end(ended: Generation): ResponseEvent[] {
    const response = presentResponse(ended, this.record);
    if (response.status !== 'completed') return [this.event('response.failed', { response })];
    // The stored text is the truth (what was charged for); it is what the deltas added up to.
    const text = ended.resultText ?? this.text;
    const part = outputText(text);
    return [
      ...this.open(),
      this.event('response.output_text.done', { ...this.where, text, logprobs: [] }),
      this.event('response.content_part.done', { ...this.where, part }),
      this.event('response.output_item.done', { output_index: 0, item: outputMessage(ended, 'completed', [part]) }),
      this.event('response.completed', { response }),
    ];
  }
}
