/**
 * One adapter for every OpenAI-compatible API (OpenAI itself, OpenRouter, Groq, Together, a
 * llama.cpp server, Ollama, vLLM): chat completions (plain and SSE-streamed, with tools, response
 * formats and stop sequences passed through when asked: chat-wire.ts), image generations,
 * speech and transcriptions, under `{baseUrl}`. Stateless: each call carries what it needs;
 * requests go through a keep-alive pool per origin (undici), or through a `fetch` when one is injected. Failures are ProviderErrors:
 * 429 → rate_limited (with Retry-After), a content-policy 400 → refused (the provider's message),
 * other 4xx → bad_request, 5xx and network errors → unavailable, aborts and timeouts → timeout.
 */
import sharp from 'sharp';
import { audioDuration } from '../../media/audio-duration';
import { findFfmpeg } from '../../media/executables';
import { IMAGE_FORMATS } from '../../media/image-format';
import { sniffAudio } from '../../media/sniff';
import { wavDuration } from '../../media/wav';
import {
  CallOptions,
  ImageRequest,
  ImageResult,
  ProviderAdapter,
  ProviderError,
  SpeechRequest,
  SpeechResult,
  TextChunk,
  TextRequest,
  TextResult,
  TranscriptionRequest,
  TranscriptionResult,
  Usage,
} from '../types';
import { isRecord } from '../upstream-http';
import { chatBody, finishReasonFrom, matchedStopFrom, toolCallDeltasFrom, toolCallsFrom } from './chat-wire';
import { Upstream, UpstreamOptions } from './http';
import { languageCode } from './languages';
import { sseData } from './sse';

export const OPENAI_PROVIDER_NAME = 'openai';
export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';

export interface OpenAIProviderOptions extends UpstreamOptions {
  /** Where ffmpeg is (to measure mp3/ogg speech); defaults to `findFfmpeg()`. Null: estimate. */
  ffmpeg?: () => string | null;
}

/** Our speech formats → the API's `response_format` (its `opus` is Ogg/Opus) and the file we store. */
const SPEECH_FORMATS = {
  mp3: { responseFormat: 'mp3', contentType: 'audio/mpeg', extension: 'mp3' },
  wav: { responseFormat: 'wav', contentType: 'audio/wav', extension: 'wav' },
  ogg: { responseFormat: 'opus', contentType: 'audio/ogg', extension: 'ogg' },
} as const;

function usageFrom(value: unknown): Usage | null {
  if (!isRecord(value)) return null;
  const prompt = typeof value.prompt_tokens === 'number' ? value.prompt_tokens : 0;
  const completion = typeof value.completion_tokens === 'number' ? value.completion_tokens : 0;
  const total = typeof value.total_tokens === 'number' ? value.total_tokens : prompt + completion;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: total };
}

function firstChoice(value: unknown): Record<string, unknown> | null {
  if (!isRecord(value) || !Array.isArray(value.choices)) return null;
  const choice: unknown = value.choices[0];
  return isRecord(choice) ? choice : null;
}

/** Models whose transcription endpoint answers only `json`/`text` (OpenAI's gpt-4o transcribers). */
function jsonOnlyTranscriber(model: string): boolean {
  return /^gpt-4o.*transcribe/i.test(model);
}

export function createOpenAIProvider(options: OpenAIProviderOptions): ProviderAdapter {
  const upstream = new Upstream({ ...options, name: options.name ?? OPENAI_PROVIDER_NAME });
  const ffmpeg = options.ffmpeg ?? findFfmpeg;
  const name = upstream.name;

  function malformed(what: string): ProviderError {
    return new ProviderError('unavailable', `The ${name} provider sent a malformed ${what} response`);
  }

  async function complete(request: TextRequest, call: CallOptions): Promise<TextResult> {
    const response = await upstream.postJson('/chat/completions', chatBody(request, false), call.signal);
    const json = await upstream.readJson(response, call.signal);
    if (isRecord(json) && json.error !== undefined && json.error !== null) throw upstream.inlineError(json.error);
    const choice = firstChoice(json);
    const message = choice && isRecord(choice.message) ? choice.message : null;
    if (!message) throw malformed('chat');
    if (typeof message.refusal === 'string' && message.refusal !== '') throw new ProviderError('refused', upstream.scrub(message.refusal));
    const content = typeof message.content === 'string' ? message.content : '';
    const toolCalls = toolCallsFrom(message);
    if (!toolCalls) throw malformed('chat');
    if (choice?.finish_reason === 'content_filter' && content === '' && toolCalls.length === 0) {
      throw new ProviderError('refused', `The ${name} provider withheld the answer under its content policy`);
    }
    const finishReason = finishReasonFrom(choice?.finish_reason) ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop');
    const usage = usageFrom(isRecord(json) ? json.usage : null) ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
    const stopSequence = choice && finishReason === 'stop' ? matchedStopFrom(choice, request.stop) : undefined;
    return { content, toolCalls, finishReason, ...(stopSequence !== undefined ? { stopSequence } : {}), usage };
  }

  async function* stream(request: TextRequest, call: CallOptions): AsyncGenerator<TextChunk> {
    const response = await upstream.postJson('/chat/completions', chatBody(request, true), call.signal, 'text/event-stream');
    let usage: Usage | null = null;
    let done = false;
    let finished = false;
    try {
      for await (const data of sseData(response.chunks(), call.signal)) {
        if (data.trim() === '[DONE]') {
          done = true;
          break;
        }
        let chunk: unknown;
        try {
          chunk = JSON.parse(data);
        } catch {
          throw malformed('streaming');
        }
        if (!isRecord(chunk)) continue;
        if (chunk.error !== undefined && chunk.error !== null) throw upstream.inlineError(chunk.error);
        usage = usageFrom(chunk.usage) ?? usage;
        const choice = firstChoice(chunk);
        if (!choice) continue;
        const delta = isRecord(choice.delta) ? choice.delta : null;
        if (delta && typeof delta.refusal === 'string' && delta.refusal !== '') throw new ProviderError('refused', upstream.scrub(delta.refusal));
        if (delta && typeof delta.content === 'string' && delta.content !== '') yield { delta: delta.content };
        const pieces = delta ? toolCallDeltasFrom(delta) : [];
        if (!pieces) throw malformed('streaming');
        for (const piece of pieces) yield { toolCall: piece };
        if (choice.finish_reason === 'content_filter') throw new ProviderError('refused', `The ${name} provider stopped the answer under its content policy`);
        const finish = finishReasonFrom(choice.finish_reason);
        if (finish) {
          finished = true;
          const stopSequence = finish === 'stop' ? matchedStopFrom(choice, request.stop) : undefined;
          yield stopSequence !== undefined ? { finish, stopSequence } : { finish };
        }
      }
    } catch (error) {
      throw upstream.transportError(error, call.signal);
    }
    if (call.signal.aborted) throw upstream.transportError(call.signal.reason, call.signal);
    if (!done && !finished) throw new ProviderError('unavailable', `The ${name} provider's stream ended early`);
    if (usage) yield { usage };
  }

  async function generateImage(request: ImageRequest, call: CallOptions): Promise<ImageResult> {
    const body: Record<string, unknown> = {
      model: request.upstreamModel,
      prompt: request.prompt,
      n: 1,
      size: `${request.width}x${request.height}`,
      quality: request.quality,
      response_format: 'b64_json',
    };
    if (request.style !== null) body.style = request.style;
    // Not part of OpenAI's API; compatible hosts of open-weights models (Together, DeepInfra) take it.
    if (request.negativePrompt !== null) body.negative_prompt = request.negativePrompt;
    const response = await upstream.postJson('/images/generations', body, call.signal);
    const json = await upstream.readJson(response, call.signal);
    const item: unknown = isRecord(json) && Array.isArray(json.data) ? json.data[0] : undefined;
    if (!isRecord(item)) throw malformed('image');
    let source: Buffer;
    if (typeof item.b64_json === 'string' && item.b64_json !== '') source = Buffer.from(item.b64_json, 'base64');
    else if (typeof item.url === 'string' && item.url !== '') source = await upstream.download(item.url, call.signal);
    else throw malformed('image');
    const format = IMAGE_FORMATS[request.format];
    let converted: { data: Buffer; info: sharp.OutputInfo };
    try {
      const image = sharp(source);
      const encoded = request.format === 'webp' ? image.webp({ quality: 90 }) : request.format === 'png' ? image.png() : image.jpeg({ quality: 92 });
      converted = await encoded.toBuffer({ resolveWithObject: true });
    } catch {
      throw new ProviderError('unavailable', `The ${name} provider returned an image that could not be decoded`);
    }
    return {
      file: { bytes: converted.data, contentType: format.contentType, extension: format.extension },
      width: converted.info.width,
      height: converted.info.height,
      seed: request.seed,
    };
  }

  async function synthesize(request: SpeechRequest, call: CallOptions): Promise<SpeechResult> {
    const format = SPEECH_FORMATS[request.format];
    const response = await upstream.postJson(
      '/audio/speech',
      { model: request.upstreamModel, input: request.text, voice: request.voice, speed: request.speed, response_format: format.responseFormat },
      call.signal,
      '*/*',
    );
    const bytes = await upstream.readBytes(response, call.signal);
    if (bytes.length === 0) throw malformed('speech');
    const duration = await audioDuration(bytes, ffmpeg(), call.signal);
    return { file: { bytes, contentType: format.contentType, extension: format.extension }, durationSeconds: duration.seconds };
  }

  async function transcribeAs(request: TranscriptionRequest, responseFormat: 'verbose_json' | 'json', call: CallOptions): Promise<unknown> {
    // The endpoint decides the format by the file name; bytes not recognised go as mp3, the most common upload.
    const kind = sniffAudio(request.audio) ?? { extension: 'mp3', contentType: 'audio/mpeg' };
    const form = new FormData();
    form.append('file', new Blob([request.audio], { type: kind.contentType }), `audio.${kind.extension}`);
    form.append('model', request.upstreamModel);
    if (request.language !== null) form.append('language', request.language);
    form.append('response_format', responseFormat);
    const response = await upstream.postForm('/audio/transcriptions', form, call.signal);
    return upstream.readJson(response, call.signal);
  }

  async function transcribe(request: TranscriptionRequest, call: CallOptions): Promise<TranscriptionResult> {
    let json: unknown;
    if (jsonOnlyTranscriber(request.upstreamModel)) {
      json = await transcribeAs(request, 'json', call);
    } else {
      try {
        json = await transcribeAs(request, 'verbose_json', call);
      } catch (error) {
        // A server that does not do verbose_json for this model says so in a 400: ask for json.
        if (!(error instanceof ProviderError && error.kind === 'bad_request' && /response_format|verbose_json/i.test(error.message))) throw error;
        json = await transcribeAs(request, 'json', call);
      }
    }
    if (!isRecord(json) || typeof json.text !== 'string') throw malformed('transcription');
    const language = typeof json.language === 'string' && json.language !== '' ? languageCode(json.language) : (request.language ?? 'und');
    let durationSeconds: number;
    const usage = json.usage;
    if (typeof json.duration === 'number') durationSeconds = json.duration;
    else if (isRecord(usage) && usage.type === 'duration' && typeof usage.seconds === 'number') durationSeconds = usage.seconds;
    else durationSeconds = wavDuration(request.audio) ?? (await audioDuration(request.audio, ffmpeg(), call.signal)).seconds;
    return { text: json.text.trim(), language, durationSeconds };
  }

  return {
    name,
    text: { complete, stream },
    image: { generate: generateImage },
    speech: { synthesize },
    transcription: { transcribe },
  };
}
