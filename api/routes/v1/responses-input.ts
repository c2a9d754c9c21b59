/**
 * A Responses API request as we read it: the body's schema, what we refuse up front (a clear 400
 * naming the parameter, before anything is held or sent upstream), and its `input` items as the
 * chat messages a text generation takes: messages, and the function calls of earlier turns with
 * their outputs (an assistant message's `tool_calls`, then `tool` messages answering them by
 * `call_id`). Fields clients send that change nothing here (top_p, user, reasoning, include,
 * truncation, parallel_tool_calls, …) are accepted and ignored.
 */
import { z } from 'zod';
import { AppError } from '../../../shared/errors';
import type { ChatMessage, ContentPart, ToolCall } from '../../../shared/providers/types';

/** A chat message as a text generation takes it (the domain validates it again, for every way in). */
export type ChatTurn = ChatMessage;

export const ResponsesBody = z.looseObject({
  model: z.string().min(1, 'is required').max(200),
  input: z.union([z.string(), z.array(z.unknown()).min(1, 'must not be empty').max(1000)], { message: 'must be a string or an array of input items' }),
  instructions: z.string().max(1_000_000).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  max_output_tokens: z.number().int().min(1).max(200_000).nullish(),
  stream: z.boolean().nullish(),
  store: z.boolean().nullish(),
  previous_response_id: z.string().max(200).nullish(),
  // OpenAI's limits: 16 pairs, keys up to 64 characters, values up to 512.
  metadata: z
    .record(z.string().max(64, 'keys must be at most 64 characters'), z.string().max(512, 'values must be strings of at most 512 characters'))
    .refine((m) => Object.keys(m).length <= 16, 'must have at most 16 pairs')
    .nullish(),
  // Read item by item (responses-tools.ts), so that a refusal names the tool as OpenAI does: tools[i].type.
  tools: z.array(z.unknown()).nullish(),
  tool_choice: z.unknown().optional(),
  text: z.looseObject({ format: z.looseObject({ type: z.string() }).nullish() }).nullish(),
  background: z.boolean().nullish(),
  conversation: z.unknown().optional(),
  prompt: z.unknown().optional(),
});
export type ResponsesBody = z.infer<typeof ResponsesBody>;

/** What this server cannot do, refused by name rather than silently ignored (tools: responses-tools.ts). */
export function refuseUnsupported(body: ResponsesBody): void {
  if (body.background === true) throw AppError.validation('background', 'background responses are not supported: stream the response instead');
  if (body.conversation !== undefined && body.conversation !== null) throw AppError.validation('conversation', 'conversations are not supported: continue with previous_response_id');
  if (body.prompt !== undefined && body.prompt !== null) throw AppError.validation('prompt', 'prompt templates are not supported');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const ROLES: Record<string, 'system' | 'user' | 'assistant'> = { user: 'user', system: 'system', developer: 'system', assistant: 'assistant' };

function textOf(part: Record<string, unknown>, field: string, where: string): string {
  const text = part[field];
  if (typeof text !== 'string') throw AppError.validation(`${where}.${field}`, 'must be a string');
  return text;
}

/** One content part of a user, system or developer message. */
function inputPart(part: unknown, role: ChatTurn['role'], where: string): ContentPart {
  if (!isRecord(part)) throw AppError.validation(where, 'must be a content part');
  switch (part.type) {
    case 'input_text':
      return { type: 'text', text: textOf(part, 'text', where) };
    case 'input_image': {
      if (role !== 'user') throw AppError.validation(`${where}.type`, 'images belong in user messages');
      if (typeof part.image_url === 'string') return { type: 'image_url', image_url: { url: part.image_url } };
      if (part.file_id !== undefined && part.file_id !== null) throw AppError.validation(`${where}.file_id`, 'file ids are not supported: send image_url (a URL or a data: URL)');
      throw AppError.validation(`${where}.image_url`, 'is required');
    }
    default:
      throw AppError.validation(`${where}.type`, typeof part.type === 'string' ? `${part.type} parts are not supported` : 'is required');
  }
}

/** An assistant message's parts (an earlier output passed back) as its text. */
function assistantText(parts: unknown[], where: string): string {
  return parts
    .map((part, j) => {
      const at = `${where}[${j}]`;
      if (!isRecord(part)) throw AppError.validation(at, 'must be a content part');
      if (part.type === 'output_text' || part.type === 'input_text') return textOf(part, 'text', at);
      if (part.type === 'refusal') return textOf(part, 'refusal', at);
      throw AppError.validation(`${at}.type`, typeof part.type === 'string' ? `${part.type} parts are not supported in assistant messages` : 'is required');
    })
    .join('');
}

/** A call's id: what its output names, so it cannot be empty. */
function callIdOf(item: Record<string, unknown>, where: string): string {
  if (typeof item.call_id !== 'string' || item.call_id === '') throw AppError.validation(`${where}.call_id`, 'is required: the id of the call, which its output names');
  return item.call_id;
}

/** A `function_call` item (a call an earlier turn made, passed back) as the call an assistant message carries. */
function functionCallOf(item: Record<string, unknown>, where: string): ToolCall {
  const callId = callIdOf(item, where);
  if (typeof item.name !== 'string') throw AppError.validation(`${where}.name`, 'is required');
  if (typeof item.arguments !== 'string') throw AppError.validation(`${where}.arguments`, 'must be a string (the JSON text of the arguments)');
  return { id: callId, type: 'function', function: { name: item.name, arguments: item.arguments } };
}

/** A `function_call_output` item as the `tool` message answering the call with that `call_id`. */
function functionOutputOf(item: Record<string, unknown>, where: string): ChatTurn {
  const callId = callIdOf(item, where);
  const output = item.output;
  if (typeof output === 'string') return { role: 'tool', tool_call_id: callId, content: output };
  if (!Array.isArray(output) || output.length === 0) throw AppError.validation(`${where}.output`, 'must be a string or a non-empty array of input_text parts');
  // A tool's answer is text to every provider here: images and files in it are refused, not dropped.
  const parts = output.map((part, j): ContentPart => {
    const at = `${where}.output[${j}]`;
    if (!isRecord(part)) throw AppError.validation(at, 'must be a content part');
    if (part.type === 'input_text') return { type: 'text', text: textOf(part, 'text', at) };
    throw AppError.validation(`${at}.type`, typeof part.type === 'string' ? `${part.type} parts are not supported in a function's output: send text` : 'is required');
  });
  return { role: 'tool', tool_call_id: callId, content: parts };
}

function turnOf(item: unknown, where: string): ChatTurn {
  if (!isRecord(item)) throw AppError.validation(where, 'must be an input item (a message, a function_call or a function_call_output)');
  if (item.type === 'function_call_output') return functionOutputOf(item, where);
  if (item.type !== undefined && item.type !== 'message') {
    // Reasoning, item references, custom and built-in tools' calls: nothing this server made or can send on.
    throw AppError.validation(`${where}.type`, `${String(item.type)} items are not supported: send messages, function_call and function_call_output items`);
  }
  const role = typeof item.role === 'string' ? ROLES[item.role] : undefined;
  if (!role) throw AppError.validation(`${where}.role`, 'must be user, system, developer or assistant');
  const content = item.content;
  if (typeof content === 'string') return { role, content };
  if (!Array.isArray(content) || content.length === 0) throw AppError.validation(`${where}.content`, 'must be a string or a non-empty array of content parts');
  if (role === 'assistant') return { role, content: assistantText(content, `${where}.content`) };
  return { role, content: content.map((part, j) => inputPart(part, role, `${where}.content[${j}]`)) };
}

/**
 * A call joins the assistant turn just before it: a response's text and its calls (or its
 * parallel calls) come back as separate items, and were one assistant message to the model.
 */
function addCall(turns: ChatTurn[], call: ToolCall): void {
  const last = turns.at(-1);
  if (last?.role === 'assistant') last.tool_calls = [...(last.tool_calls ?? []), call];
  else turns.push({ role: 'assistant', content: null, tool_calls: [call] });
}

/** `input` as chat messages: a string is one user message; items are messages (developer counts as system), calls and their outputs. */
export function turnsOfInput(input: ResponsesBody['input']): ChatTurn[] {
  if (typeof input === 'string') return [{ role: 'user', content: input }];
  const turns: ChatTurn[] = [];
  input.forEach((item, i) => {
    if (isRecord(item) && item.type === 'function_call') addCall(turns, functionCallOf(item, `input[${i}]`));
    else turns.push(turnOf(item, `input[${i}]`));
  });
  return turns;
}

/**
 * The domain names what it checks by its own fields (Chat Completions' vocabulary): these are the
 * Responses API's names for them. Messages are named `input` (they are the chain's and the
 * input's together, so an index of one is not an index of the other).
 */
function responsesField(field: string): string {
  if (field === 'messages' || field.startsWith('messages.')) return 'input';
  if (field === 'max_tokens' || field === 'params.max_tokens') return 'max_output_tokens';
  if (field === 'params.temperature') return 'temperature';
  const tool = /^tools\.(\d+)(?:\.function)?(\..+)?$/.exec(field);
  if (tool) return `tools[${tool[1]}]${tool[2] ?? ''}`;
  if (field === 'tool_choice.function.name') return 'tool_choice.name';
  if (field === 'response_format' || field === 'response_format.type') return 'text.format' + field.slice('response_format'.length);
  if (field.startsWith('response_format.json_schema.')) return `text.format.${field.slice('response_format.json_schema.'.length)}`;
  return field;
}

/** A refusal of the domain, its fields named as the client sent them. */
export function inResponsesTerms(error: unknown): unknown {
  if (!(error instanceof AppError) || !error.errors) return error;
  const errors = error.errors.map((e) => ({ ...e, field: responsesField(e.field) }));
  return new AppError(error.code, { detail: error.detail, errors, extra: error.extra, headers: error.headers });
}
