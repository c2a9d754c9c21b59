/**
 * A generate request as the domain sees it, and its normalization per category into the stored
 * `GenerationInput`: the messages or prompt or text, plus the normalized params.
 */
import crypto from 'node:crypto';
import { z } from 'zod';
import type { CatalogModel } from '../catalog/types';
import { AppError, FieldError } from '../errors';
import type { ChatMessage } from '../providers/types';
import { MAX_SEED, normalizeParams, paramSpecs } from './params';

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
  /** Set once an assistant's model, system prompt and default params have been applied. */
  assistant?: { id: string; systemPrompt: string };
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
}

export const MAX_PROMPT_LENGTH = 8000;

const ContentPartSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string().max(1_000_000) }),
  z.object({ type: z.literal('image_url'), image_url: z.object({ url: z.string().max(8 * 1024 * 1024) }) }),
]);
const MessageSchema = z.object({
  role: z.enum(['system', 'user', 'assistant']),
  content: z.union([z.string().max(1_000_000), z.array(ContentPartSchema).min(1).max(50)]),
});
const MessagesSchema = z.array(MessageSchema).min(1, 'must not be empty').max(1000);

function messageText(message: ChatMessage): string {
  return typeof message.content === 'string'
    ? message.content
    : message.content.map((p) => (p.type === 'text' ? p.text : '')).join(' ');
}

function parseMessages(raw: unknown, field: string, model: CatalogModel): ChatMessage[] {
  const parsed = MessagesSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw AppError.validation([field, ...(issue?.path ?? [])].join('.'), issue?.message ?? 'is invalid');
  }
  const messages = parsed.data as ChatMessage[];
  if (!model.config.supports_vision) {
    const withImage = messages.findIndex((m) => Array.isArray(m.content) && m.content.some((p) => p.type === 'image_url'));
    if (withImage >= 0) throw AppError.validation(`${field}.${withImage}.content`, 'this model does not accept images');
  }
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
      const maxContext = typeof model.config.max_context === 'number' ? model.config.max_context : null;
      const characters = messages.reduce((n, m) => n + messageText(m).length, 0);
      // About four characters a token: a request that cannot fit the context is refused up front.
      if (maxContext && characters > maxContext * 4) {
        errors.push({ field: 'messages', message: `too long for this model's context of ${maxContext} tokens` });
      }
      if (errors.length) throw new AppError('validation_failed', { errors });
      const lastUser = [...messages].reverse().find((m) => m.role === 'user');
      return { prompt: lastUser ? messageText(lastUser) : null, messages, params };
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
