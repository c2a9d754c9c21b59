/**
 * The /v1 answers in the protocols' shapes (api/presenters/openai*.ts, anthropic.ts,
 * responses.ts): what this server sends, which is a subset of what OpenAI's and Anthropic's
 * APIs document.
 */
import { z } from 'zod';
import { presentAnthropicModel, presentAnthropicModelPage, presentMessage } from '../../presenters/anthropic';
import { presentChatCompletion, presentOpenAIModel, presentOpenAIModels } from '../../presenters/openai';
import { presentVideo, presentVideoList } from '../../presenters/openai-media';
import { presentResponse } from '../../presenters/responses';
import type { FinishReason } from '../../../shared/providers/types';
import type { AnthropicStopReason } from '../../presenters/anthropic';
import type { ResponseStatus } from '../../presenters/responses';
import { everyValueOf, PresenterMatches } from './shape';

const JsonObject = z.record(z.string(), z.unknown());

export const OpenAIModel = z.strictObject({ id: z.string(), object: z.literal('model'), created: z.number().int(), owned_by: z.string() }).meta({ id: 'OpenAIModel' });
export const OpenAIModelList = z.strictObject({ object: z.literal('list'), data: z.array(OpenAIModel) }).meta({ id: 'OpenAIModelList' });

export const AnthropicModel = z
  .strictObject({ type: z.literal('model'), id: z.string(), display_name: z.string(), created_at: z.string(), max_input_tokens: z.number().int().nullable() })
  .meta({ id: 'AnthropicModel' });
export const AnthropicModelPage = z
  .strictObject({ data: z.array(AnthropicModel), has_more: z.boolean(), first_id: z.string().nullable(), last_id: z.string().nullable() })
  .meta({ id: 'AnthropicModelPage' });

const Usage = z.strictObject({ prompt_tokens: z.number().int(), completion_tokens: z.number().int(), total_tokens: z.number().int() });
const ToolCall = z.strictObject({ id: z.string(), type: z.literal('function'), function: z.strictObject({ name: z.string(), arguments: z.string() }) });

export const ChatCompletion = z
  .strictObject({
    id: z.string().meta({ example: 'chatcmpl-12' }),
    object: z.literal('chat.completion'),
    created: z.number().int(),
    model: z.string(),
    choices: z.array(
      z.strictObject({
        index: z.number().int(),
        message: z.strictObject({ role: z.literal('assistant'), content: z.string().nullable(), refusal: z.null(), tool_calls: z.array(ToolCall).optional() }),
        logprobs: z.null(),
        finish_reason: z.enum(everyValueOf<FinishReason>()(['stop', 'length', 'tool_calls', 'content_filter'])),
      }),
    ),
    usage: Usage,
    system_fingerprint: z.null(),
  })
  .meta({ id: 'ChatCompletion' });

export const AnthropicMessage = z
  .strictObject({
    id: z.string().meta({ example: 'msg_12' }),
    type: z.literal('message'),
    role: z.literal('assistant'),
    model: z.string(),
    content: z.array(
      z.union([
        z.strictObject({ type: z.literal('text'), text: z.string() }),
        z.strictObject({ type: z.literal('tool_use'), id: z.string(), name: z.string(), input: JsonObject }),
      ]),
    ),
    stop_reason: z.enum(everyValueOf<AnthropicStopReason>()(['end_turn', 'max_tokens', 'stop_sequence', 'tool_use', 'refusal'])),
    stop_sequence: z.string().nullable(),
    usage: z.strictObject({ input_tokens: z.number().int(), output_tokens: z.number().int(), cache_creation_input_tokens: z.number().int(), cache_read_input_tokens: z.number().int() }),
  })
  .meta({ id: 'AnthropicMessage' });

const OutputText = z.strictObject({ type: z.literal('output_text'), annotations: z.array(z.never()), logprobs: z.array(z.never()), text: z.string() });
const ItemStatus = z.enum(['in_progress', 'completed', 'incomplete']);
const OutputItem = z.union([
  z.strictObject({ id: z.string(), type: z.literal('message'), status: ItemStatus, content: z.array(OutputText), role: z.literal('assistant') }),
  z.strictObject({ id: z.string(), type: z.literal('function_call'), status: ItemStatus, arguments: z.string(), call_id: z.string(), name: z.string() }),
]);

export const ResponseObject = z
  .strictObject({
    id: z.string().meta({ example: 'resp_12' }),
    object: z.literal('response'),
    created_at: z.number().int(),
    status: z.enum(everyValueOf<ResponseStatus>()(['in_progress', 'completed', 'incomplete', 'failed', 'cancelled'])),
    background: z.boolean(),
    completed_at: z.number().int().nullable(),
    error: z.strictObject({ code: z.enum(['invalid_prompt', 'rate_limit_exceeded', 'server_error']), message: z.string() }).nullable(),
    incomplete_details: z.strictObject({ reason: z.enum(['max_output_tokens', 'content_filter']) }).nullable(),
    instructions: z.string().nullable(),
    max_output_tokens: z.number().nullable(),
    max_tool_calls: z.null(),
    model: z.string(),
    output: z.array(OutputItem),
    parallel_tool_calls: z.boolean(),
    previous_response_id: z.string().nullable(),
    reasoning: z.strictObject({ effort: z.null(), summary: z.null() }),
    service_tier: z.string(),
    store: z.boolean(),
    temperature: z.number().nullable(),
    text: z.looseObject({ format: z.unknown() }),
    tool_choice: z.unknown(),
    tools: z.array(z.unknown()),
    top_p: z.null(),
    truncation: z.string(),
    usage: z
      .strictObject({
        input_tokens: z.number().int(),
        input_tokens_details: z.strictObject({ cached_tokens: z.number().int(), cache_write_tokens: z.number().int() }),
        output_tokens: z.number().int(),
        output_tokens_details: z.strictObject({ reasoning_tokens: z.number().int() }),
        total_tokens: z.number().int(),
      })
      .nullable(),
    user: z.null(),
    metadata: z.record(z.string(), z.string()),
  })
  .meta({ id: 'Response' });

export const ImagesResponse = z
  .strictObject({
    created: z.number().int(),
    data: z.array(z.union([z.strictObject({ url: z.string() }), z.strictObject({ b64_json: z.string() })])),
    output_format: z.string(),
    size: z.string().optional(),
  })
  .meta({ id: 'ImagesResponse' });

export const Transcription = z.strictObject({ text: z.string(), usage: z.strictObject({ type: z.literal('duration'), seconds: z.number().int() }) }).meta({ id: 'Transcription' });
export const VerboseTranscription = z
  .strictObject({
    task: z.literal('transcribe'),
    language: z.string(),
    duration: z.number(),
    text: z.string(),
    segments: z.array(
      z.strictObject({
        id: z.number().int(),
        seek: z.number(),
        start: z.number(),
        end: z.number(),
        text: z.string(),
        tokens: z.array(z.number()),
        temperature: z.number(),
        avg_logprob: z.number(),
        compression_ratio: z.number(),
        no_speech_prob: z.number(),
      }),
    ),
    usage: z.strictObject({ type: z.literal('duration'), seconds: z.number().int() }),
  })
  .meta({ id: 'VerboseTranscription' });

export const Video = z
  .strictObject({
    id: z.string().meta({ example: 'video_7' }),
    object: z.literal('video'),
    model: z.string(),
    status: z.enum(['queued', 'in_progress', 'completed', 'failed']),
    progress: z.number().int(),
    created_at: z.number().int(),
    completed_at: z.number().int().nullable(),
    expires_at: z.number().int().nullable(),
    error: z.strictObject({ code: z.string(), message: z.string() }).nullable(),
    prompt: z.string().nullable(),
    remixed_from_video_id: z.null(),
    seconds: z.string(),
    size: z.string(),
  })
  .meta({ id: 'Video' });
export const VideoList = z
  .strictObject({ object: z.literal('list'), data: z.array(Video), first_id: z.string().nullable(), last_id: z.string().nullable(), has_more: z.boolean() })
  .meta({ id: 'VideoList' });
export const VideoDeleted = z.strictObject({ id: z.string(), object: z.literal('video.deleted'), deleted: z.literal(true) }).meta({ id: 'VideoDeleted' });

const checks: [
  PresenterMatches<ReturnType<typeof presentOpenAIModel>, typeof OpenAIModel>,
  PresenterMatches<ReturnType<typeof presentOpenAIModels>, typeof OpenAIModelList>,
  PresenterMatches<ReturnType<typeof presentAnthropicModel>, typeof AnthropicModel>,
  PresenterMatches<ReturnType<typeof presentAnthropicModelPage>, typeof AnthropicModelPage>,
  PresenterMatches<ReturnType<typeof presentChatCompletion>, typeof ChatCompletion>,
  PresenterMatches<ReturnType<typeof presentMessage>, typeof AnthropicMessage>,
  PresenterMatches<ReturnType<typeof presentResponse>, typeof ResponseObject>,
  PresenterMatches<ReturnType<typeof presentVideo>, typeof Video>,
  PresenterMatches<ReturnType<typeof presentVideoList>, typeof VideoList>,
] = [true, true, true, true, true, true, true, true, true];
void checks;
