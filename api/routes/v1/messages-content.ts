/**
 * An Anthropic conversation as the domain's messages (OpenAI's chat shape):
 *
 * - `text` blocks are text parts, `image` blocks (base64 or url) the vision parts of a model with
 *   vision;
 * - an assistant's `tool_use` blocks are its message's tool calls, the `input` object written as
 *   the call's JSON arguments, the id read back to the upstream's (anthropic-tool-ids.ts);
 * - a user's `tool_result` blocks are `tool` messages answering those calls, placed before the
 *   rest of the user's message, as OpenAI's wire needs them right after the calls. Their content is
 *   text (a string, or text blocks joined); `is_error: true` reaches the model as the words
 *   "Error: " before it (neither the domain's tool messages nor OpenAI's wire carry the flag); an
 *   image a tool returned (Claude Code's Read of a picture, a screenshot) is not passed on (the
 *   domain's tool messages are text, as OpenAI's are): the model reads a note saying an image was
 *   left out, rather than the turn being refused mid-task;
 * - an assistant's `thinking` / `redacted_thinking` blocks (Claude Code sends earlier turns'
 *   thinking back) are dropped: our models write none, and Anthropic's own API leaves earlier
 *   turns' thinking out of what the model reads.
 *
 * Anthropic's own rules for tool turns are checked here, naming the block, so an upstream never
 * refuses them after the price was held: every `tool_use` is answered by a `tool_result` in the
 * next message, every `tool_result` answers a `tool_use` of the message before, and a message's
 * `tool_result` blocks come before its other content.
 */
import { z } from 'zod';
import { AppError } from '../../../shared/errors';
import { ToolNameSchema } from '../../../shared/generation/text-options';
import type { ChatMessage, ContentPart, ToolCall } from '../../../shared/providers/types';
import { callIdOf } from '../../presenters/anthropic-tool-ids';
import { parsedAt } from './anthropic-fields';

/** Anthropic's image formats (its `media_type` of a base64 image). */
const IMAGE_MEDIA_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] as const;

export const Block = z.looseObject({ type: z.string() });
type Block = z.infer<typeof Block>;
export interface AnthropicMessage {
  role: 'user' | 'assistant' | 'system';
  content: string | Block[];
}

export const TextBlock = z.looseObject({ type: z.literal('text'), text: z.string({ message: 'must be a string' }).max(1_000_000) });
const ImageSource = z.discriminatedUnion(
  'type',
  [
    z.looseObject({
      type: z.literal('base64'),
      media_type: z.enum(IMAGE_MEDIA_TYPES, { message: `must be one of ${IMAGE_MEDIA_TYPES.join(', ')}` }),
      data: z.string().min(1, 'must not be empty').max(8 * 1024 * 1024),
    }),
    z.looseObject({ type: z.literal('url'), url: z.string().min(1, 'must not be empty').max(8 * 1024 * 1024) }),
  ],
  { message: 'must be a base64 or url source (the Files API is not offered)' },
);
const ImageBlock = z.looseObject({ type: z.literal('image'), source: ImageSource });
// Ids up to 1024: an upstream's id carried in Anthropic's alphabet is longer than the id itself.
const ToolUseId = z.string({ message: 'is required' }).min(1, 'must not be empty').max(1024);
const ToolUseBlock = z.looseObject({
  type: z.literal('tool_use'),
  id: ToolUseId,
  name: ToolNameSchema,
  input: z.record(z.string(), z.unknown(), { message: 'must be an object' }),
});
const ToolResultBlock = z.looseObject({
  type: z.literal('tool_result'),
  tool_use_id: ToolUseId,
  content: z.union([z.string().max(1_000_000), z.array(Block).max(50)], { message: 'must be a string or an array of content blocks' }).nullish(),
  is_error: z.boolean({ message: 'must be true or false' }).nullish(),
});

/** One text or image block as the domain's content part (other blocks are refused, naming them). */
function contentPart(block: Block, field: string): ContentPart {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: parsedAt(TextBlock, block, field).text };
    case 'image': {
      const { source } = parsedAt(ImageBlock, block, field);
      return { type: 'image_url', image_url: { url: source.type === 'base64' ? `data:${source.media_type};base64,${source.data}` : source.url } };
    }
    case 'tool_use':
      throw AppError.validation(`${field}.type`, 'tool_use blocks belong in an assistant message');
    case 'tool_result':
      throw AppError.validation(`${field}.type`, 'tool_result blocks belong in a user message');
    default:
      throw AppError.validation(`${field}.type`, `${block.type} blocks are not supported (text and image are, and tool_use / tool_result in tool turns)`);
  }
}

/** What a tool returned, as the text of its `tool` message. */
function toolResultText(block: z.infer<typeof ToolResultBlock>, field: string): string {
  const content = block.content ?? '';
  const text =
    typeof content === 'string'
      ? content
      : content
          .map((part, k) => {
            if (part.type === 'text') return parsedAt(TextBlock, part, `${field}.content.${k}`).text;
            if (part.type === 'image') {
              const { source } = parsedAt(ImageBlock, part, `${field}.content.${k}`);
              return `[An image the tool returned (${source.type === 'base64' ? source.media_type : source.url}) is not shown: images in tool results are not passed to the model]`;
            }
            throw AppError.validation(`${field}.content.${k}.type`, `${part.type} blocks are not supported in a tool_result (text and image are)`);
          })
          .join('\n\n');
  return block.is_error ? `Error: ${text}` : text;
}

/** The domain's messages, and for each the Anthropic field it came from (for the domain's errors). */
export interface Conversation {
  messages: ChatMessage[];
  origins: string[];
}

/** Tool uses waiting for their results: each id, and the block that made it. */
type Pending = Map<string, string>;

function assistantTurn(message: AnthropicMessage, i: number, into: Conversation): Pending {
  const pending: Pending = new Map();
  if (typeof message.content === 'string') {
    into.messages.push({ role: 'assistant', content: message.content });
    into.origins.push(`messages.${i}`);
    return pending;
  }
  const parts: ContentPart[] = [];
  const calls: ToolCall[] = [];
  message.content.forEach((block, j) => {
    const field = `messages.${i}.content.${j}`;
    if (block.type === 'thinking' || block.type === 'redacted_thinking') return;
    if (block.type !== 'tool_use') {
      parts.push(contentPart(block, field));
      return;
    }
    const use = parsedAt(ToolUseBlock, block, field);
    pending.set(use.id, field);
    calls.push({ id: callIdOf(use.id), type: 'function', function: { name: use.name, arguments: JSON.stringify(use.input) } });
  });
  // A turn that was only thinking says nothing the model can read.
  if (parts.length === 0 && calls.length === 0) return pending;
  into.messages.push(calls.length > 0 ? { role: 'assistant', content: parts.length > 0 ? parts : null, tool_calls: calls } : { role: 'assistant', content: parts });
  into.origins.push(`messages.${i}`);
  return pending;
}

function userTurn(message: AnthropicMessage, i: number, pending: Pending, into: Conversation): void {
  if (typeof message.content === 'string') {
    into.messages.push({ role: message.role, content: message.content });
    into.origins.push(`messages.${i}`);
    return;
  }
  const parts: ContentPart[] = [];
  message.content.forEach((block, j) => {
    const field = `messages.${i}.content.${j}`;
    if (block.type !== 'tool_result' || message.role !== 'user') {
      parts.push(contentPart(block, field));
      return;
    }
    if (parts.length > 0) throw AppError.validation(`${field}.type`, 'tool_result blocks must come before any other content of the message');
    const result = parsedAt(ToolResultBlock, block, field);
    if (!pending.delete(result.tool_use_id)) {
      throw AppError.validation(`${field}.tool_use_id`, `answers no tool_use of the message before: ${result.tool_use_id}`);
    }
    into.messages.push({ role: 'tool', content: toolResultText(result, field), tool_call_id: callIdOf(result.tool_use_id) });
    into.origins.push(field);
  });
  if (parts.length === 0) return;
  into.messages.push({ role: message.role, content: parts });
  into.origins.push(`messages.${i}`);
}

/** Anthropic's rule: a tool_use is answered in the very next message. */
function requireAnswered(pending: Pending): void {
  for (const [id, field] of pending) throw AppError.validation(`${field}.id`, `${id} has no tool_result in the next message`);
}

export function conversationOf(messages: readonly AnthropicMessage[]): Conversation {
  const conversation: Conversation = { messages: [], origins: [] };
  let pending: Pending = new Map();
  messages.forEach((message, i) => {
    const asked = pending;
    if (message.role === 'assistant') {
      pending = assistantTurn(message, i, conversation);
    } else {
      // Answering takes each call off what was asked.
      userTurn(message, i, asked, conversation);
      pending = new Map();
    }
    requireAnswered(asked);
  });
  requireAnswered(pending);
  return conversation;
}
