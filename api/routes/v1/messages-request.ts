/**
 * An Anthropic Messages request (POST /v1/messages) read into our generate request: `system`
 * (a string or text blocks) becomes the system prompt, `messages` our chat messages with their
 * tool turns (messages-content.ts), `tools` and `tool_choice` the domain's function tools
 * (messages-tools.ts), `stop_sequences` its stop, `max_tokens` and `temperature` the text params.
 * The domain checks the options against the model (a model without `supports_tools` is a 400
 * naming `tools`) before anything is held; its refusals are named back in Anthropic's fields
 * (anthropic-fields.ts). Fields with no meaning here (`metadata`, `top_p`, `top_k`, `thinking`,
 * `context_management`, `cache_control`, `service_tier`, …) are accepted and ignored, as
 * Anthropic's clients send them freely.
 */
import { z } from 'zod';
import { AppError } from '../../../shared/errors';
import type { GenerateRequest } from '../../../shared/generation/input';
import { MAX_STOP_SEQUENCES } from '../../../shared/generation/text-options';
import { Block, conversationOf, TextBlock } from './messages-content';
import { toolChoiceOf, toolsOf } from './messages-tools';

const Content = z.union([z.string().max(1_000_000), z.array(Block).max(1000)], { message: 'must be a string or an array of content blocks' });

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
  // The domain takes at most 4 (said here in words; its own check of a list too long reads "Invalid
  // input"); it checks each, and its refusals are named back as stop_sequences.
  stop_sequences: z
    .array(z.string({ message: 'must be a string' }), { message: 'must be an array of strings' })
    .max(MAX_STOP_SEQUENCES, `must be at most ${MAX_STOP_SEQUENCES} sequences`)
    .nullish(),
  stream: z.boolean().nullish(),
  metadata: z.looseObject({ user_id: z.string().max(256).nullish() }).nullish(),
  tools: z.array(z.unknown(), { message: 'must be an array of tools' }).max(1000).nullish(),
  tool_choice: z.unknown().optional(),
  thread: z.looseObject({ type: z.string({ message: 'is required' }), previous_message_id: z.string().max(200).nullish() }, { message: 'must be an object' }).nullish(),
});
export type MessagesBody = z.infer<typeof MessagesBody>;

/**
 * Claude Code's first system block is a billing line for Anthropic (`x-anthropic-billing-header:
 * cc_version=…; cch=…;`) that changes with every request: no instruction to the model, and at the
 * very start of the prompt it would defeat the prefix caching of upstreams that cache (OpenAI's).
 */
const BILLING_LINE = 'x-anthropic-billing-header:';

function systemText(system: MessagesBody['system']): string | undefined {
  if (system === null || system === undefined) return undefined;
  const text = typeof system === 'string' ? system : system.filter((block) => !block.text.startsWith(BILLING_LINE)).map((block) => block.text).join('\n\n');
  return text.trim() === '' ? undefined : text;
}

/**
 * `thread`, the SDKs' message threads (the server keeps the conversation, and each later turn sends
 * only its new messages after `previous_message_id`; the SDK's tool runner uses them). This
 * service keeps no threads: a `create` asks nothing of it, and a `continue` is answered as
 * Anthropic answers a thread it no longer holds (404, `details.error_code: "thread_not_found"`),
 * on which the SDKs send the whole conversation again. Answered as it came, a `continue` would be
 * its last messages without the conversation before them.
 */
function refuseThreadContinue(thread: MessagesBody['thread']): void {
  if (thread?.type !== 'continue') return;
  throw new AppError('not_found', {
    detail: `thread.previous_message_id: ${thread.previous_message_id ?? '(none)'} is not held here: this service keeps no message threads, send the whole conversation`,
    extra: { anthropic_error_code: 'thread_not_found' },
  });
}

/** The generate request, and where each of its messages came from (`messages.K` → an Anthropic field). */
export function generateRequestOf(body: MessagesBody): { request: GenerateRequest; origins: string[] } {
  refuseThreadContinue(body.thread);
  const { messages, origins } = conversationOf(body.messages);
  const textOptions = { stop: body.stop_sequences ?? undefined, tools: toolsOf(body.tools), tool_choice: toolChoiceOf(body.tool_choice) };
  const params: Record<string, unknown> = { max_tokens: body.max_tokens };
  if (body.temperature !== null && body.temperature !== undefined) params.temperature = body.temperature;
  const request = { model: body.model, system: systemText(body.system), messages, params, topLevel: {}, stream: body.stream === true, textOptions };
  return { request, origins };
}
