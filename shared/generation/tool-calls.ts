/**
 * What a text generation's end keeps besides its text: why it finished (and on which stop
 * sequence, when the provider said), and the tools it called, in the row's result metadata
 * (`finish_reason`, `stop_sequence`, `tool_calls`), where polling, history and every protocol's
 * presenter read them. A stream's tool calls arrive in pieces and are joined here.
 */
import { FinishReason, ProviderError, ToolCall, ToolCallDelta } from '../providers/types';

export interface TextEnd {
  finishReason: FinishReason;
  toolCalls: ToolCall[];
  /** The stop sequence that ended the text, when the provider said which (`stop_sequence`). */
  stopSequence?: string;
}

/**
 * The result metadata of a completed text generation. An answer with tool calls that says it
 * simply stopped (some compatible servers do) has still called them: its clients must answer them.
 * The stop sequence is kept only for an answer that stopped on it (not one that then called tools).
 */
export function textMetadata(end: TextEnd): Record<string, unknown> {
  if (end.toolCalls.length === 0) {
    const stopped = end.finishReason === 'stop' && end.stopSequence !== undefined;
    return stopped ? { finish_reason: 'stop', stop_sequence: end.stopSequence } : { finish_reason: end.finishReason };
  }
  return { finish_reason: end.finishReason === 'stop' ? 'tool_calls' : end.finishReason, tool_calls: end.toolCalls };
}

function isToolCall(value: unknown): value is ToolCall {
  if (typeof value !== 'object' || value === null) return false;
  const call = value as Partial<ToolCall>;
  return typeof call.id === 'string' && typeof call.function?.name === 'string' && typeof call.function.arguments === 'string';
}

/** Reads them back from the metadata (as stored as JSON); a generation from before them finished with `stop`. */
export function textEndOf(metadata: Record<string, unknown> | null): TextEnd {
  const calls = Array.isArray(metadata?.tool_calls) ? (metadata.tool_calls as unknown[]).filter(isToolCall) : [];
  const reason = metadata?.finish_reason;
  const finishReason: FinishReason = reason === 'length' || reason === 'tool_calls' || reason === 'content_filter' ? reason : 'stop';
  const stopSequence = metadata?.stop_sequence;
  return typeof stopSequence === 'string' && finishReason === 'stop' ? { finishReason, toolCalls: calls, stopSequence } : { finishReason, toolCalls: calls };
}

/** Joins the pieces of streamed tool calls, by index, into whole calls. */
export class ToolCallAssembly {
  private readonly parts = new Map<number, { id: string; name?: string; arguments: string }>();

  /**
   * Adds a piece; returns it as it is to be passed on. A call's id is fixed by its first piece:
   * a call must have one for its answer to name, so a server that sent none gets one by its
   * place, and what is streamed is what is kept.
   */
  add(piece: ToolCallDelta): ToolCallDelta {
    const known = this.parts.get(piece.index);
    const part = known ?? { id: piece.id ?? `call_${piece.index}`, arguments: '' };
    if (piece.name !== undefined) part.name = piece.name;
    if (piece.arguments !== undefined) part.arguments += piece.arguments;
    this.parts.set(piece.index, part);
    const passed: ToolCallDelta = { index: piece.index };
    if (!known) passed.id = part.id;
    if (piece.name !== undefined) passed.name = piece.name;
    if (piece.arguments !== undefined) passed.arguments = piece.arguments;
    return passed;
  }

  /** The calls in index order; one whose name never came cannot be answered, so the stream was malformed. */
  calls(provider: string): ToolCall[] {
    return [...this.parts.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, part]) => {
        if (!part.name) throw new ProviderError('unavailable', `The ${provider} provider streamed a tool call without a name`);
        return { id: part.id, type: 'function', function: { name: part.name, arguments: part.arguments } };
      });
  }
}
