/**
 * A Responses API request as we read it: the body's schema, what we refuse up front (a clear 400
 * naming the parameter, before anything is held or sent upstream), and its `input` items as the
 * chat messages a text generation takes. Fields clients send that change nothing here (top_p,
 * user, reasoning, include, truncation, …) are accepted and ignored.
 */
import { z } from 'zod';
import { AppError } from '../../../shared/errors';

/** A chat message as a text generation takes it (the domain validates it again, for every way in). */
export type ChatPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };
export interface ChatTurn {
  role: 'system' | 'user' | 'assistant';
  content: string | ChatPart[];
}

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
  tools: z.array(z.looseObject({ type: z.string() })).nullish(),
  tool_choice: z.unknown().optional(),
  text: z.looseObject({ format: z.looseObject({ type: z.string() }).nullish() }).nullish(),
  background: z.boolean().nullish(),
  conversation: z.unknown().optional(),
  prompt: z.unknown().optional(),
});
export type ResponsesBody = z.infer<typeof ResponsesBody>;

const FUNCTION_TOOLS = new Set(['function', 'custom']);

/** What this server cannot do yet, refused by name rather than silently ignored. */
export function refuseUnsupported(body: ResponsesBody): void {
  const tool = body.tools?.[0];
  if (tool) {
    throw AppError.validation(
      'tools',
      FUNCTION_TOOLS.has(tool.type) ? 'tool calls are not supported yet' : `the built-in tool ${tool.type} is not offered by this server`,
    );
  }
  if (body.tool_choice !== undefined && body.tool_choice !== null && body.tool_choice !== 'auto' && body.tool_choice !== 'none') {
    throw AppError.validation('tool_choice', 'no tools can be called here: only "auto" or "none"');
  }
  const format = body.text?.format?.type;
  if (format !== undefined && format !== 'text') throw AppError.validation('text.format', `only "text" is supported, not ${format}`);
  if (body.background === true) throw AppError.validation('background', 'background responses are not supported: stream the response instead');
  if (body.conversation !== undefined && body.conversation !== null) throw AppError.validation('conversation', 'conversations are not supported: continue with previous_response_id');
  if (body.prompt !== undefined && body.prompt !== null) throw AppError.validation('prompt', 'prompt templates are not supported');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const ROLES: Record<string, ChatTurn['role']> = { user: 'user', system: 'system', developer: 'system', assistant: 'assistant' };

function textOf(part: Record<string, unknown>, field: string, where: string): string {
  const text = part[field];
  if (typeof text !== 'string') throw AppError.validation(`${where}.${field}`, 'must be a string');
  return text;
}

/** One content part of a user, system or developer message. */
function inputPart(part: unknown, role: ChatTurn['role'], where: string): ChatPart {
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

function turnOf(item: unknown, where: string): ChatTurn {
  if (!isRecord(item)) throw AppError.validation(where, 'must be an input item (a message)');
  if (item.type !== undefined && item.type !== 'message') {
    const kind = String(item.type);
    throw AppError.validation(`${where}.type`, /call/.test(kind) ? 'tool calls are not supported yet' : `${kind} items are not supported: send messages`);
  }
  const role = typeof item.role === 'string' ? ROLES[item.role] : undefined;
  if (!role) throw AppError.validation(`${where}.role`, 'must be user, system, developer or assistant');
  const content = item.content;
  if (typeof content === 'string') return { role, content };
  if (!Array.isArray(content) || content.length === 0) throw AppError.validation(`${where}.content`, 'must be a string or a non-empty array of content parts');
  if (role === 'assistant') return { role, content: assistantText(content, `${where}.content`) };
  return { role, content: content.map((part, j) => inputPart(part, role, `${where}.content[${j}]`)) };
}

/** `input` as chat messages: a string is one user message; items are messages (developer counts as system). */
export function turnsOfInput(input: ResponsesBody['input']): ChatTurn[] {
  if (typeof input === 'string') return [{ role: 'user', content: input }];
  return input.map((item, i) => turnOf(item, `input[${i}]`));
}

/** The domain names what it checks by its own fields: these are the Responses API's names for them. */
function responsesField(field: string): string {
  if (field === 'messages' || field.startsWith('messages.')) return 'input';
  if (field === 'max_tokens' || field === 'params.max_tokens') return 'max_output_tokens';
  if (field === 'params.temperature') return 'temperature';
  return field;
}

/** A refusal of the domain, its fields named as the client sent them. */
export function inResponsesTerms(error: unknown): unknown {
  if (!(error instanceof AppError) || !error.errors) return error;
  const errors = error.errors.map((e) => ({ ...e, field: responsesField(e.field) }));
  return new AppError(error.code, { detail: error.detail, errors, extra: error.extra, headers: error.headers });
}
