/**
 * The content blocks of a streamed Message, as Anthropic streams them: each block opens with
 * `content_block_start`, grows by `content_block_delta`s and closes with `content_block_stop`, one
 * after another, numbered by `index`. Text comes as `text_delta`s of a text block; a tool call as
 * a `tool_use` block opened with its id, its name and an empty `input`, then its JSON arguments in
 * `input_json_delta` pieces (`partial_json`), which the SDKs join and parse into `input`.
 *
 * A block opens when its first part arrives, so a message that only calls tools has no empty text
 * block before them (Anthropic's API refuses an empty text block sent back in the conversation);
 * one that streamed nothing at all gets an empty text block, as the plain message has. The first
 * block's start is followed by a `ping`, where Anthropic's API sends it.
 */
import type { StreamPart } from '../../shared/generation/types';
import type { ToolCall, ToolCallDelta } from '../../shared/providers/types';
import { AnthropicEvent, inputOf } from './anthropic';
import { toolUseId } from './anthropic-tool-ids';

type TextStart = { type: 'text'; text: '' };
type ToolUseStart = { type: 'tool_use'; id: string; name: string; input: Record<string, never> };

export class MessageBlocks {
  private started = 0;
  private open: { kind: 'text' } | { kind: 'tool'; call: number } | null = null;
  /** Each tool call's block, by the call's index. */
  private readonly toolBlocks = new Map<number, number>();
  /** Calls whose name has not come yet (a tool_use block cannot open without it): their id and arguments so far. */
  private readonly unnamed = new Map<number, { id?: string; arguments: string }>();

  *part(part: StreamPart): Generator<AnthropicEvent> {
    if (typeof part === 'string') yield* this.text(part);
    else yield* this.toolPiece(part);
  }

  /** Closes the last block (after an empty text block, if nothing was streamed). */
  *end(): Generator<AnthropicEvent> {
    if (this.started === 0) yield* this.start({ type: 'text', text: '' }, { kind: 'text' });
    yield* this.close();
  }

  private *text(text: string): Generator<AnthropicEvent> {
    if (this.open?.kind !== 'text') yield* this.start({ type: 'text', text: '' }, { kind: 'text' });
    yield this.delta(this.started - 1, { type: 'text_delta', text });
  }

  private *toolPiece(piece: ToolCallDelta): Generator<AnthropicEvent> {
    const block = this.toolBlocks.get(piece.index);
    if (block !== undefined) {
      // Named by its index: a server that interleaves the pieces of parallel calls sends some to a
      // block already closed, and the SDKs add a delta to the block its index names.
      if (piece.arguments) yield this.delta(block, { type: 'input_json_delta', partial_json: piece.arguments });
      return;
    }
    const call = this.unnamed.get(piece.index) ?? { arguments: '' };
    if (piece.id !== undefined) call.id = piece.id;
    call.arguments += piece.arguments ?? '';
    if (piece.name === undefined) {
      this.unnamed.set(piece.index, call);
      return;
    }
    this.unnamed.delete(piece.index);
    // The domain gives every call an id on its first piece (ToolCallAssembly); `call_<index>` is its own fallback.
    const id = toolUseId(call.id ?? `call_${piece.index}`);
    yield* this.start({ type: 'tool_use', id, name: piece.name, input: {} }, { kind: 'tool', call: piece.index });
    this.toolBlocks.set(piece.index, this.started - 1);
    if (call.arguments !== '') yield this.delta(this.started - 1, { type: 'input_json_delta', partial_json: call.arguments });
  }

  private *start(block: TextStart | ToolUseStart, open: NonNullable<MessageBlocks['open']>): Generator<AnthropicEvent> {
    yield* this.close();
    const index = this.started++;
    this.open = open;
    yield { event: 'content_block_start', data: { type: 'content_block_start', index, content_block: block } };
    if (index === 0) yield { event: 'ping', data: { type: 'ping' } };
  }

  private *close(): Generator<AnthropicEvent> {
    if (this.open === null) return;
    this.open = null;
    yield { event: 'content_block_stop', data: { type: 'content_block_stop', index: this.started - 1 } };
  }

  private delta(index: number, delta: { type: 'text_delta'; text: string } | { type: 'input_json_delta'; partial_json: string }): AnthropicEvent {
    return { event: 'content_block_delta', data: { type: 'content_block_delta', index, delta } };
  }
}

/**
 * A completed answer as the parts of a stream, for a replay sent whole: its text in one piece, then
 * each call in one, its arguments as the plain message's `input` (so the SDKs assemble the same).
 */
export function wholeParts(text: string, calls: readonly ToolCall[]): StreamPart[] {
  const parts: StreamPart[] = text === '' ? [] : [text];
  calls.forEach((call, index) => parts.push({ index, id: call.id, name: call.function.name, arguments: JSON.stringify(inputOf(call.function.arguments)) }));
  return parts;
}
