/**
 * Chat Completions on the wire: the request body we send (with `tools`, `tool_choice`,
 * `response_format` and `stop` only when the request has them, so a server that knows none of
 * them is never sent one), and the tool calls and finish reasons we read back, whole from a
 * completion or in indexed pieces from a stream.
 */
import type { ChatMessage, FinishReason, TextRequest, ToolCall, ToolCallDelta } from '../types';
import { isRecord } from '../upstream-http';

/** More calls in one answer than any model makes (OpenAI allows 128 tools): a stream naming more is malformed. */
export const MAX_TOOL_CALLS = 128;

/** A message as the API takes it: our messages already speak its shape, minus what is absent. */
function wireMessage(message: ChatMessage): Record<string, unknown> {
  const wire: Record<string, unknown> = { role: message.role, content: message.content };
  if (message.tool_calls?.length) wire.tool_calls = message.tool_calls;
  if (message.tool_call_id !== undefined) wire.tool_call_id = message.tool_call_id;
  return wire;
}

export function chatBody(request: TextRequest, stream: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: request.upstreamModel,
    // Strings and vision content parts (`text` / `image_url`) are already in the API's shape.
    messages: request.messages.map(wireMessage),
    temperature: request.temperature,
  };
  if (request.maxTokens !== null) body.max_tokens = request.maxTokens;
  if (request.stop?.length) body.stop = request.stop;
  if (request.tools?.length) body.tools = request.tools;
  if (request.toolChoice !== undefined) body.tool_choice = request.toolChoice;
  if (request.responseFormat !== undefined) body.response_format = request.responseFormat;
  if (stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return body;
}

/**
 * The finish reason as we know it. `function_call` is what servers speaking the older functions
 * API say for a tool call; a reason we do not know (or none) reads as a plain `stop`.
 */
export function finishReasonFrom(value: unknown): FinishReason | null {
  switch (value) {
    case 'stop':
    case 'length':
    case 'tool_calls':
    case 'content_filter':
      return value;
    case 'function_call':
      return 'tool_calls';
    default:
      return typeof value === 'string' ? 'stop' : null;
  }
}

/**
 * The stop sequence that ended an answer, when the server says which. OpenAI's API does not (its
 * `finish_reason` is `stop` either way, and the sequence is cut from the text, so nothing in the
 * answer tells); vLLM names it as the choice's `stop_reason` and SGLang as `matched_stop` (each a
 * token id instead when a stop token ended it). Only one of the request's own sequences counts.
 */
export function matchedStopFrom(choice: Record<string, unknown>, stop: readonly string[] | undefined): string | undefined {
  for (const value of [choice.stop_reason, choice.matched_stop]) {
    if (typeof value === 'string' && stop?.includes(value)) return value;
  }
  return undefined;
}

/** The function calls of a completed message; other kinds of tool call (custom tools) are not ours to pass on. */
export function toolCallsFrom(message: Record<string, unknown>): ToolCall[] | null {
  if (message.tool_calls === undefined || message.tool_calls === null) return [];
  if (!Array.isArray(message.tool_calls)) return null;
  const calls: ToolCall[] = [];
  for (const call of message.tool_calls as unknown[]) {
    if (!isRecord(call) || !isRecord(call.function)) return null;
    const { name, arguments: args } = call.function;
    if (typeof call.id !== 'string' || typeof name !== 'string') return null;
    calls.push({ id: call.id, type: 'function', function: { name, arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}) } });
  }
  return calls;
}

/**
 * The tool-call pieces of a streamed delta. Each names its call by `index`; a server that leaves
 * the index out (some compatible ones send each call whole, in one piece) has it taken from the
 * piece's place in the list.
 */
export function toolCallDeltasFrom(delta: Record<string, unknown>): ToolCallDelta[] | null {
  if (delta.tool_calls === undefined || delta.tool_calls === null) return [];
  if (!Array.isArray(delta.tool_calls)) return null;
  const pieces: ToolCallDelta[] = [];
  for (const [position, raw] of (delta.tool_calls as unknown[]).entries()) {
    if (!isRecord(raw)) return null;
    const index = raw.index === undefined ? position : raw.index;
    if (typeof index !== 'number' || !Number.isSafeInteger(index) || index < 0 || index >= MAX_TOOL_CALLS) return null;
    const fn = isRecord(raw.function) ? raw.function : {};
    const piece: ToolCallDelta = { index };
    if (typeof raw.id === 'string' && raw.id !== '') piece.id = raw.id;
    if (typeof fn.name === 'string' && fn.name !== '') piece.name = fn.name;
    if (typeof fn.arguments === 'string' && fn.arguments !== '') piece.arguments = fn.arguments;
    if (piece.id !== undefined || piece.name !== undefined || piece.arguments !== undefined) pieces.push(piece);
  }
  return pieces;
}
