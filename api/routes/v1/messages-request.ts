/**
 * An Anthropic Messages request (POST /v1/messages) read into our generate request: `system`
 * (a string or text blocks) becomes the system prompt, `messages` our chat messages (text blocks
 * as text parts, image blocks as the vision parts our text models take), `max_tokens` and
 * `temperature` the text params. Fields with no meaning here (`metadata`, `top_p`, `top_k`,
 * `thinking`, `cache_control`, `service_tier`, …) are accepted and ignored, as Anthropic's
 * clients send them freely. What the domain cannot do yet is refused with a 400 naming the
 * field, before anything is held or sent upstream: tools (tool use) and stop sequences.
 */
import { z } from 'zod';
import { AppError } from '../../../shared/errors';
import type { GenerateRequest } from '../../../shared/generation/input';
import type { ContentPart } from '../../../shared/providers/types';

/** Anthropic's image formats (its `media_type` of a base64 image). */
const IMAGE_MEDIA_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] as const;
const TOOLS_NOT_YET = 'tool use is not supported yet';

const Block = z.looseObject({ type: z.string() });
const Content = z.union([z.string().max(1_000_000), z.array(Block).max(50)], { message: 'must be a string or an array of content blocks' });

const TextBlock = z.looseObject({ type: z.literal('text'), text: z.string({ message: 'must be a string' }).max(1_000_000) });
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

/** What we read of a Messages request; `max_tokens` is required, as Anthropic requires it. */
export const MessagesBody = z.looseObject({
  model: z.string({ message: 'is required' }).min(1, 'is required').max(200),
  max_tokens: z.number({ message: 'is required' }).int('must be an integer').min(1, 'must be at least 1').max(200_000, 'must be at most 200000'),
  messages: z
    .array(z.looseObject({ role: z.enum(['user', 'assistant', 'system'], { message: 'must be user, assistant or system' }), content: Content }), { message: 'must be an array of messages' })
    .min(1, 'must not be empty')
    .max(1000),
  system: z.union([z.string().max(1_000_000), z.array(TextBlock).max(50)], { message: 'must be a string or an array of text blocks' }).nullish(),
  temperature: z.number().min(0, 'must be between 0 and 1').max(1, 'must be between 0 and 1').nullish(),
  stop_sequences: z.array(z.string({ message: 'must be a string' }), { message: 'must be an array of strings' }).max(100).nullish(),
  stream: z.boolean().nullish(),
  metadata: z.looseObject({ user_id: z.string().max(256).nullish() }).nullish(),
  tools: z.array(z.unknown(), { message: 'must be an array of tools' }).nullish(),
});
export type MessagesBody = z.infer<typeof MessagesBody>;

function parsed<S extends z.ZodType>(schema: S, value: unknown, field: string): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  throw AppError.validation([field, ...(issue?.path ?? [])].join('.'), issue?.message ?? 'is invalid');
}

/** One content block as our content part (the same index, so the domain's errors name the right block). */
function contentPart(block: z.infer<typeof Block>, field: string): ContentPart {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: parsed(TextBlock, block, field).text };
    case 'image': {
      const { source } = parsed(ImageBlock, block, field);
      return { type: 'image_url', image_url: { url: source.type === 'base64' ? `data:${source.media_type};base64,${source.data}` : source.url } };
    }
    case 'tool_use':
    case 'tool_result':
    case 'server_tool_use':
      // Tool calls plug in here once the domain has them: a tool_use block becomes the assistant
      // message's tool call, a tool_result block the tool message answering it.
      throw AppError.validation(`${field}.type`, TOOLS_NOT_YET);
    default:
      throw AppError.validation(`${field}.type`, `${block.type} blocks are not supported (text and image are)`);
  }
}

function systemText(system: MessagesBody['system']): string | undefined {
  if (system === null || system === undefined) return undefined;
  const text = typeof system === 'string' ? system : system.map((block) => block.text).join('\n\n');
  return text.trim() === '' ? undefined : text;
}

/**
 * `tools`: refused until the domain has tool calls (the tools work). A request without tools
 * (none, or an empty list) is a plain conversation, and its `tool_choice` has nothing to choose.
 */
function refuseTools(body: MessagesBody): void {
  if (body.tools && body.tools.length > 0) throw AppError.validation('tools', TOOLS_NOT_YET);
}

/**
 * `stop_sequences` as the domain's params. The domain has no stop sequences yet (they come with
 * the tools work): until then a request naming any is refused rather than answered with text that
 * runs past them. This is the one place to change when it has them, with `stopReasonOf` in
 * presenters/anthropic.ts reading which sequence ended the text.
 */
export function stopSequenceParams(stopSequences: string[] | null | undefined): Record<string, unknown> {
  if (!stopSequences || stopSequences.length === 0) return {};
  throw AppError.validation('stop_sequences', 'stop sequences are not supported yet');
}

export function generateRequestOf(body: MessagesBody): GenerateRequest {
  refuseTools(body);
  const messages = body.messages.map((message, i) => ({
    role: message.role,
    content: typeof message.content === 'string' ? message.content : message.content.map((block, j) => contentPart(block, `messages.${i}.content.${j}`)),
  }));
  const params: Record<string, unknown> = { max_tokens: body.max_tokens, ...stopSequenceParams(body.stop_sequences) };
  if (body.temperature !== null && body.temperature !== undefined) params.temperature = body.temperature;
  return { model: body.model, system: systemText(body.system), messages, params, topLevel: {}, stream: body.stream === true };
}
