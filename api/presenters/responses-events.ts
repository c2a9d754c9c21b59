/**
 * The server-sent events of a streamed response (/v1/responses with `stream: true`), each named
 * by its type and numbered by `sequence_number` from 0, in the order OpenAI sends them:
 * `response.created`, `response.in_progress`; then each output item in turn, opened with
 * `response.output_item.added` when its first piece arrives and closed when the next one opens
 * (or at the end):
 *
 * - the message: `response.content_part.added` (its output_text part), a
 *   `response.output_text.delta` per piece, `response.output_text.done`,
 *   `response.content_part.done`, `response.output_item.done`;
 * - a function call: `response.function_call_arguments.delta` per piece of its arguments,
 *   `response.function_call_arguments.done`, `response.output_item.done`;
 *
 * and last `response.completed` (or `response.incomplete`, cut at `max_output_tokens`) with the
 * usage. A response that fails ends with `response.failed` carrying the error instead (the
 * partial output is not kept, so its output is empty, as a later GET shows it).
 */
import type { Generation } from '../../shared/db/entities';
import type { StreamPart } from '../../shared/generation/types';
import {
  functionCallItem,
  functionCallItemId,
  ItemStatus,
  messageId,
  OutputItem,
  outputMessage,
  outputOf,
  outputText,
  presentResponse,
  ResponseRecord,
} from './responses';
import { chatEndOf } from './openai';

/** One server-sent event: `event:` is its type, `data:` the event with that type in it. */
export interface ResponseEvent {
  event: string;
  data: { type: string; sequence_number: number } & Record<string, unknown>;
}

/** An output item being streamed: the message (its text so far) or a call (its arguments so far). */
type Streaming =
  | { kind: 'message'; id: string; index: number; text: string; closed: boolean }
  | { kind: 'call'; id: string; index: number; callIndex: number; callId: string; name: string; arguments: string; closed: boolean };

export class ResponseEvents {
  private sequence = 0;
  /** The items in the order they opened: that order is their output_index. */
  private readonly items: Streaming[] = [];
  /** Calls by the domain's call index; a call whose name has not come yet waits here with its arguments. */
  private readonly calls = new Map<number, Streaming & { kind: 'call' }>();
  private readonly waiting = new Map<number, { callId: string; arguments: string }>();

  constructor(
    private readonly generation: Generation,
    private readonly record: ResponseRecord,
  ) {}

  private event(type: string, fields: Record<string, unknown>): ResponseEvent {
    return { event: type, data: { type, sequence_number: this.sequence++, ...fields } };
  }

  start(): ResponseEvent[] {
    const response = presentResponse(this.generation, this.record, { asStarted: true });
    return [this.event('response.created', { response }), this.event('response.in_progress', { response })];
  }

  /** A piece of the answer: text for the message, or a piece of a call. */
  part(part: StreamPart): ResponseEvent[] {
    if (typeof part === 'string') return this.text(part);
    const known = this.calls.get(part.index);
    if (known) return this.argumentsPiece(known, part.arguments ?? '');
    // The first piece of a call has its id (the domain gives every call one); its name opens the item.
    const waiting = this.waiting.get(part.index) ?? { callId: part.id ?? `call_${part.index}`, arguments: '' };
    waiting.arguments += part.arguments ?? '';
    if (part.name === undefined) {
      this.waiting.set(part.index, waiting);
      return [];
    }
    this.waiting.delete(part.index);
    const call = { kind: 'call' as const, id: functionCallItemId(this.generation, part.index), index: this.items.length, callIndex: part.index, callId: waiting.callId, name: part.name, arguments: '', closed: false };
    const events = this.open(call, functionCallItem(this.generation, part.index, { id: call.callId, function: { name: call.name, arguments: '' } }, 'in_progress'));
    this.calls.set(part.index, call);
    return [...events, ...this.argumentsPiece(call, waiting.arguments)];
  }

  private text(text: string): ResponseEvent[] {
    const open = this.items.find((item) => item.kind === 'message');
    // Text after the message was closed (a server that writes text between calls, which OpenAI's
    // do not) is left to the final response, which carries the whole text.
    if (open?.closed) return [];
    const events: ResponseEvent[] = [];
    let message = open;
    if (!message) {
      message = { kind: 'message', id: messageId(this.generation), index: this.items.length, text: '', closed: false };
      events.push(...this.openMessage(message));
    }
    message.text += text;
    events.push(this.event('response.output_text.delta', { item_id: message.id, output_index: message.index, content_index: 0, delta: text, logprobs: [] }));
    return events;
  }

  private argumentsPiece(call: Streaming & { kind: 'call' }, piece: string): ResponseEvent[] {
    // Likewise for a piece of a call that another has followed already.
    if (piece === '' || call.closed) return [];
    call.arguments += piece;
    return [this.event('response.function_call_arguments.delta', { item_id: call.id, output_index: call.index, delta: piece })];
  }

  /** An item opens when the one before it is done: OpenAI streams one item at a time. */
  private open(item: Streaming, added: OutputItem): ResponseEvent[] {
    const closing = this.items.at(-1);
    const events = closing && !closing.closed ? this.close(closing, null) : [];
    this.items.push(item);
    return [...events, this.event('response.output_item.added', { output_index: item.index, item: added })];
  }

  private openMessage(message: Streaming & { kind: 'message' }): ResponseEvent[] {
    return [
      ...this.open(message, outputMessage(this.generation, 'in_progress', [])),
      this.event('response.content_part.added', { item_id: message.id, output_index: message.index, content_index: 0, part: outputText('') }),
    ];
  }

  /** An item's done events: as streamed, or (the last one) as the ended generation has it. */
  private close(item: Streaming, final: OutputItem | null): ResponseEvent[] {
    item.closed = true;
    const status: ItemStatus = final?.status ?? 'completed';
    const where = { item_id: item.id, output_index: item.index };
    if (item.kind === 'message') {
      const text = final?.type === 'message' ? (final.content[0]?.text ?? '') : item.text;
      const part = outputText(text);
      return [
        this.event('response.output_text.done', { ...where, content_index: 0, text, logprobs: [] }),
        this.event('response.content_part.done', { ...where, content_index: 0, part }),
        this.event('response.output_item.done', { output_index: item.index, item: outputMessage(this.generation, status, [part]) }),
      ];
    }
    const args = final?.type === 'function_call' ? final.arguments : item.arguments;
    return [
      this.event('response.function_call_arguments.done', { ...where, arguments: args }),
      this.event('response.output_item.done', {
        output_index: item.index,
        item: functionCallItem(this.generation, item.callIndex, { id: item.callId, function: { name: item.name, arguments: args } }, status),
      }),
    ];
  }

  /**
   * The end, from the generation as it ended (the stored answer is the truth: what was charged
   * for, and what the pieces added up to). An answer with nothing streamed still has its message.
   */
  end(ended: Generation): ResponseEvent[] {
    const response = presentResponse(ended, this.record);
    if (response.status !== 'completed' && response.status !== 'incomplete') return [this.event('response.failed', { response })];
    const final = outputOf(ended);
    const events: ResponseEvent[] = [];
    if (!this.items.some((item) => item.kind === 'message') && final[0]?.type === 'message') {
      events.push(...this.openMessage({ kind: 'message', id: messageId(ended), index: this.items.length, text: '', closed: false }));
    }
    const last = this.items.at(-1);
    if (last && !last.closed) events.push(...this.close(last, final.find((item) => item.id === last.id) ?? null));
    // The output in the order it was streamed, which is the order of the indexes the client holds.
    const order = new Map(this.items.map((item) => [item.id, item.index]));
    const output = [...final].sort((a, b) => (order.get(a.id) ?? final.length) - (order.get(b.id) ?? final.length));
    const type = response.status === 'incomplete' ? 'response.incomplete' : 'response.completed';
    return [...events, this.event(type, { response: presentResponse(ended, this.record, { output }) })];
  }
}

/** A finished generation's answer as stream parts (a replay): its text in one piece, then each call whole. */
export function partsOf(generation: Generation): StreamPart[] {
  const parts: StreamPart[] = generation.resultText ? [generation.resultText] : [];
  chatEndOf(generation).toolCalls.forEach((call, index) => {
    parts.push({ index, id: call.id, name: call.function.name }, { index, arguments: call.function.arguments });
  });
  return parts;
}
