/**
 * A generate request as the domain sees it, and its normalization per category into the stored
 * `GenerationInput`: the messages or prompt or text, plus the normalized params.
 */
import crypto from 'node:crypto';
import { z } from 'zod';
import type { CatalogModel } from '../catalog/types';
import { AppError, FieldError } from '../errors';
import type { ChatMessage, TextOptions, ToolCall } from '../providers/types';
import { MAX_SEED, normalizeParams, paramSpecs } from './params';
import { MAX_TOOLS, parseTextOptions, TextOptionsRequest, ToolNameSchema } from './text-options';

const optionalString = z.string({ message: 'must be a string' }).nullish();

/**
 * The body of a generate request as HTTP carries it (POST /api/v2/generate, calculate-price):
 * the reserved fields typed as splitRequestBody reads them; any other top-level field is a param
 * of the model (checked against the model's declared params by the domain).
 */
export const GenerateBody = z
  .looseObject({
    model: optionalString.meta({ description: 'The model slug (or alias); may be left out with an `assistant_id`', example: 'demo-text' }),
    prompt: optionalString.meta({ description: 'The user message, or what to draw, film, speak or do' }),
    params: z.record(z.string(), z.unknown(), { message: 'must be an object' }).nullish().meta({ description: "The model's params (also accepted at the top level; the same value in both is fine)" }),
    messages: z.unknown().optional().meta({ description: 'Text, messages form: OpenAI-style messages (`system`, `user`, `assistant`; content a string or text/image_url parts)' }),
    assistant_id: optionalString.meta({ description: 'An installed assistant: its model, system prompt and default params apply' }),
    stream: z.boolean({ message: 'must be true or false' }).optional().meta({ description: 'Text: answer as server-sent events' }),
    system: optionalString.meta({ description: 'Text: a leading system message' }),
    text: optionalString.meta({ description: 'Speech: the text to speak' }),
  })
  .meta({ id: 'GenerateRequest', description: "Any other top-level field is one of the model's params (size, format, duration, voice_id, temperature, …: see GET /api/v2/models/{slug})" });

/** Body fields that are not params. Everything else at the top level may be a param. */
const RESERVED = new Set(['model', 'prompt', 'params', 'messages', 'assistant_id', 'stream', 'system', 'text']);

export interface GenerateRequest {
  model?: string;
  prompt?: string;
  params?: Record<string, unknown>;
  messages?: unknown;
  assistant_id?: string;
  stream?: boolean;
  system?: string;
  text?: string;
  /** The remaining top-level fields. */
  topLevel: Record<string, unknown>;
  /** Text only: stop sequences, tools, tool choice, response format (text-options.ts checks them). */
  textOptions?: TextOptionsRequest;
  /** Set once an assistant's model, system prompt and default params have been applied. */
  assistant?: { id: string; systemPrompt: string };
}

/**
 * The account's default image size (settings' `default_image_size`) for an image request that
 * names no size, when the model offers that size; otherwise the model's own default stands.
 */
export function withDefaultImageSize(model: CatalogModel, request: GenerateRequest, size: string | null | undefined): GenerateRequest {
  if (!size || model.category !== 'image') return request;
  const spec = paramSpecs(model).size;
  if (spec?.type !== 'enum' || !spec.values.includes(size)) return request;
  if (request.topLevel.size !== undefined || request.params?.size !== undefined) return request;
  return { ...request, topLevel: { ...request.topLevel, size } };
}

/**
 * An installed assistant shapes the request: its model when the request names none, its default
 * params under the request's own, and its system prompt before the request's (decisions.md).
 */
export function applyAssistant(
  request: GenerateRequest,
  assistant: { id: string; model: string; system_prompt: string; default_params: Record<string, unknown> },
): GenerateRequest {
  const params = { ...(request.params ?? {}) };
  for (const [name, value] of Object.entries(assistant.default_params)) {
    if (params[name] === undefined && request.topLevel[name] === undefined) params[name] = value;
  }
  return { ...request, model: request.model ?? assistant.model, params, assistant: { id: assistant.id, systemPrompt: assistant.system_prompt } };
}

export function splitRequestBody(body: Record<string, unknown>): GenerateRequest {
  const topLevel: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) if (!RESERVED.has(k)) topLevel[k] = v;
  const str = (v: unknown, field: string): string | undefined => {
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string') throw AppError.validation(field, 'must be a string');
    return v;
  };
  if (body.params !== undefined && body.params !== null && (typeof body.params !== 'object' || Array.isArray(body.params))) {
    throw AppError.validation('params', 'must be an object');
  }
  if (body.stream !== undefined && typeof body.stream !== 'boolean') throw AppError.validation('stream', 'must be true or false');
  return {
    model: str(body.model, 'model'),
    prompt: str(body.prompt, 'prompt'),
    params: (body.params as Record<string, unknown> | undefined) ?? {},
    messages: body.messages,
    assistant_id: str(body.assistant_id, 'assistant_id'),
    stream: body.stream as boolean | undefined,
    system: str(body.system, 'system'),
    text: str(body.text, 'text'),
    topLevel,
  };
}

export interface GenerationInput {
  prompt: string | null;
  messages?: ChatMessage[];
  /** Text to speak (tts). */
  text?: string;
  params: Record<string, unknown>;
  /** Text: the options given, as checked (kept here so a queued or retried run has them). */
  textOptions?: TextOptions;
}

export const MAX_PROMPT_LENGTH = 8000;

const TextPartSchema = z.object({ type: z.literal('text'), text: z.string().max(1_000_000) });
const ContentPartSchema = z.discriminatedUnion('type', [
  TextPartSchema,
  z.object({ type: z.literal('image_url'), image_url: z.object({ url: z.string().max(8 * 1024 * 1024) }) }),
]);
const ContentSchema = z.union([z.string().max(1_000_000), z.array(ContentPartSchema).min(1).max(50)]);
const ToolCallSchema = z.object({
  id: z.string().min(1).max(256),
  type: z.literal('function'),
  function: z.object({ name: ToolNameSchema, arguments: z.string().max(1_000_000) }),
});
/**
 * A message by its role. An assistant message may carry the tool calls it made (then its content
 * may be null or absent); a `tool` message answers one of them by id, with text.
 */
const MessageSchema = z.discriminatedUnion('role', [
  z.object({ role: z.enum(['system', 'user']), content: ContentSchema }),
  z.object({ role: z.literal('assistant'), content: ContentSchema.nullish(), tool_calls: z.array(ToolCallSchema).max(MAX_TOOLS).nullish() }),
  z.object({
    role: z.literal('tool'),
    content: z.union([z.string().max(1_000_000), z.array(TextPartSchema).min(1).max(50)]),
    tool_call_id: z.string().min(1).max(256),
  }),
]);
const MessagesSchema = z.array(MessageSchema).min(1, 'must not be empty').max(1000);
type ParsedMessage = z.infer<typeof MessageSchema>;

function messageText(message: ChatMessage): string {
  const calls = (message.tool_calls ?? []).map((call) => `${call.function.name} ${call.function.arguments}`);
  const content =
    message.content === null
      ? ''
      : typeof message.content === 'string'
        ? message.content
        : message.content.map((p) => (p.type === 'text' ? p.text : '')).join(' ');
  return [content, ...calls].filter((text) => text !== '').join(' ');
}

/** A parsed message as the domain keeps it: only the fields its role has, none left undefined. */
function chatMessage(message: ParsedMessage): ChatMessage {
  if (message.role === 'tool') return { role: 'tool', content: message.content, tool_call_id: message.tool_call_id };
  if (message.role !== 'assistant') return { role: message.role, content: message.content };
  const calls: ToolCall[] = message.tool_calls ?? [];
  return calls.length > 0 ? { role: 'assistant', content: message.content ?? null, tool_calls: calls } : { role: 'assistant', content: message.content ?? null };
}

/**
 * A conversation with tools: only for a model that declares them; an assistant message says
 * something or calls something; a tool message answers a call made earlier in the conversation
 * (an upstream would refuse it after the price was held).
 */
function checkToolTurns(messages: ChatMessage[], field: string, model: CatalogModel): void {
  const called = new Set<string>();
  messages.forEach((message, index) => {
    const usesTools = message.role === 'tool' || (message.tool_calls?.length ?? 0) > 0;
    if (usesTools && model.config.supports_tools !== true) throw AppError.validation(`${field}.${index}`, `${model.slug} does not support tools`);
    if (message.role === 'assistant' && message.content === null && !message.tool_calls) {
      throw AppError.validation(`${field}.${index}.content`, 'is required unless the message has tool_calls');
    }
    for (const call of message.tool_calls ?? []) called.add(call.id);
    if (message.role === 'tool' && !called.has(message.tool_call_id ?? '')) {
      throw AppError.validation(`${field}.${index}.tool_call_id`, 'answers no tool call of an earlier assistant message');
    }
  });
}

function parseMessages(raw: unknown, field: string, model: CatalogModel): ChatMessage[] {
  const parsed = MessagesSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw AppError.validation([field, ...(issue?.path ?? [])].join('.'), issue?.message ?? 'is invalid');
  }
  const messages = parsed.data.map(chatMessage);
  if (!model.config.supports_vision) {
    const withImage = messages.findIndex((m) => Array.isArray(m.content) && m.content.some((p) => p.type === 'image_url'));
    if (withImage >= 0) throw AppError.validation(`${field}.${withImage}.content`, 'this model does not accept images');
  }
  checkToolTurns(messages, field, model);
  return messages;
}

function requirePrompt(request: GenerateRequest): string {
  const prompt = request.prompt?.trim();
  if (!prompt) throw AppError.validation('prompt', 'is required');
  if (prompt.length > MAX_PROMPT_LENGTH) throw AppError.validation('prompt', `must be at most ${MAX_PROMPT_LENGTH} characters`);
  return prompt;
}

function withSeed(params: Record<string, unknown>, model: CatalogModel): Record<string, unknown> {
  if (!('seed' in paramSpecs(model)) || params.seed !== undefined) return params;
  // The seed is chosen at acceptance, so a retried job reproduces the same output.
  return { ...params, seed: crypto.randomInt(0, MAX_SEED) };
}

/** Validates the request for the model's category; throws 422 naming the bad field. */
export function normalizeInput(model: CatalogModel, request: GenerateRequest): GenerationInput {
  const nested = request.params ?? {};
  const params = normalizeParams(model, request.topLevel, nested);
  const errors: FieldError[] = [];

  switch (model.category) {
    case 'text': {
      let messages: ChatMessage[];
      if (request.messages !== undefined) {
        messages = parseMessages(request.messages, 'messages', model);
      } else {
        const prompt = requirePrompt(request);
        const prior = nested.messages !== undefined ? parseMessages(nested.messages, 'params.messages', model) : [];
        messages = [...prior, { role: 'user', content: prompt }];
      }
      const system = [request.assistant?.systemPrompt, request.system, params.system_prompt as string | undefined].filter(
        (s): s is string => !!s && s.trim() !== '',
      );
      if (system.length > 0) messages = [{ role: 'system', content: system.join('\n\n') }, ...messages];
      if (!messages.some((m) => m.role === 'user')) errors.push({ field: 'messages', message: 'needs at least one user message' });
      const textOptions = parseTextOptions(model, request.textOptions ?? {});
      const maxContext = typeof model.config.max_context === 'number' ? model.config.max_context : null;
      // The tools' definitions are part of what the model reads.
      const toolsLength = textOptions.tools ? JSON.stringify(textOptions.tools).length : 0;
      const characters = messages.reduce((n, m) => n + messageText(m).length, toolsLength);
      // About four characters a token: a request that cannot fit the context is refused up front.
      if (maxContext && characters > maxContext * 4) {
        errors.push({ field: 'messages', message: `too long for this model's context of ${maxContext} tokens` });
      }
      if (errors.length) throw new AppError('validation_failed', { errors });
      const lastUser = [...messages].reverse().find((m) => m.role === 'user');
      const input: GenerationInput = { prompt: lastUser ? messageText(lastUser) : null, messages, params };
      // Only when some option is given: a stored input without options stays as it always was.
      if (Object.keys(textOptions).length > 0) input.textOptions = textOptions;
      return input;
    }
    case 'image':
    case 'video':
    case 'music': {
      const prompt = requirePrompt(request);
      if (params.negative_prompt !== undefined && model.category === 'image' && !model.config.supports_negative_prompt) {
        throw AppError.validation('negative_prompt', 'this model does not support a negative prompt');
      }
      return { prompt, params: withSeed(params, model) };
    }
    case 'tts': {
      const text = (request.text ?? (nested.text as string | undefined) ?? request.prompt)?.trim();
      if (!text) throw AppError.validation('text', 'is required');
      const maxLength = typeof model.config.max_text_length === 'number' ? model.config.max_text_length : 5000;
      if (text.length > maxLength) throw AppError.validation('text', `must be at most ${maxLength} characters`);
      return { prompt: text, text, params };
    }
    case 'stt': {
      if (typeof params.audio_url !== 'string') throw AppError.validation('audio_url', 'is required');
      const languages = Array.isArray(model.config.languages) ? (model.config.languages as string[]) : null;
      if (languages && typeof params.language === 'string' && !languages.includes(params.language.toLowerCase())) {
        throw AppError.validation('language', `this model only knows ${languages.join(', ')}`);
      }
      if (params.diarize === true && !model.config.supports_diarization) {
        throw AppError.validation('diarize', 'only the diarization model can label speakers');
      }
      return { prompt: request.prompt?.trim() || null, params };
    }
    case 'tool': {
      if (typeof params.image_url !== 'string') throw AppError.validation('image_url', 'is required');
      return { prompt: request.prompt?.trim().slice(0, MAX_PROMPT_LENGTH) || null, params };
    }
  }
}

/** Text every content-policy check reads: prompt, messages, system, lyrics, speech text. */
export function userTexts(input: GenerationInput): string[] {
  const texts: string[] = [];
  if (input.prompt) texts.push(input.prompt);
  if (input.text) texts.push(input.text);
  for (const m of input.messages ?? []) texts.push(messageText(m));
  for (const key of ['system_prompt', 'lyrics', 'negative_prompt']) {
    const v = input.params[key];
    if (typeof v === 'string') texts.push(v);
  }
  return texts;
}
