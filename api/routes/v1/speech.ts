/**
 * POST /v1/audio/speech: OpenAI's speech endpoint over our speech generations, answered with the
 * audio bytes in the asked format. `voice` is one of the model's voices, or an OpenAI voice name
 * the model maps to one of its own (`config.openai_voices` in the catalog); `response_format`
 * mp3 and wav are what the model makes, opus (Ogg/Opus), aac, flac and pcm (24 kHz 16-bit mono)
 * are re-encoded from the model's audio with ffmpeg (refused when this server has none).
 */
import Router from '@koa/router';
import { z } from 'zod';
import type { CatalogModel } from '../../../shared/catalog/types';
import { AppError } from '../../../shared/errors';
import type { GenerateRequest } from '../../../shared/generation/input';
import { isOggOpus, TranscodedAudio, transcodeAudio } from '../../../shared/media/audio-transcode';
import { findFfmpeg } from '../../../shared/media/executables';
import { AppContext, AppCustom, AppState, callerOf } from '../../context';
import { generationOptions, parseBody } from '../../http';
import { requireAuth } from '../../middleware/auth';
import { clientGone } from '../../sse';
import { completedGeneration, paramOf, requiredString, requireModel, valuesOf, withProtocolNames } from './media-common';
import type { RouteDoc } from '../../openapi/registry';
import { IdempotencyHeader } from '../../openapi/schemas/params';
import { V1_GENERATION_ERRORS } from '../../openapi/schemas/v1-requests';

const SPEECH_FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const;
type SpeechFormat = (typeof SPEECH_FORMATS)[number];

/** OpenAI's built-in voice names: a model that knows none of them must map them or refuse them. */
const OPENAI_VOICES = new Set(['alloy', 'ash', 'ballad', 'coral', 'echo', 'fable', 'onyx', 'nova', 'sage', 'shimmer', 'verse', 'marin', 'cedar']);

const SpeechBody = z.looseObject({
  model: requiredString(200).min(1, 'is required'),
  input: requiredString(100_000),
  voice: z.union([z.string().min(1).max(200), z.looseObject({ id: z.string().min(1).max(200) })], { message: 'must be a voice name or {"id": …}' }),
  instructions: z.string().max(10_000).nullish(),
  response_format: z.enum(SPEECH_FORMATS, { message: `must be one of ${SPEECH_FORMATS.join(', ')}` }).nullish(),
  speed: z.number({ message: 'must be a number' }).nullish(),
  stream_format: z.literal('audio', { message: 'only audio is supported (not sse)' }).nullish(),
});

/** Our params' names as OpenAI's speech request calls them. */
const PROTOCOL_NAMES = { text: 'input', voice_id: 'voice', format: 'response_format' };

const CONTENT_TYPES: Record<SpeechFormat, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/opus',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

/** How long re-encoding one answer may take. */
const TRANSCODE_TIMEOUT_MS = 60_000;

/** The voice the model is asked for; see the module comment. */
function voiceFor(model: CatalogModel, asked: string): string {
  const spec = paramOf(model, 'voice_id');
  const listed = Array.isArray(model.config.voices) ? model.config.voices.map(String) : [];
  const own = [...new Set([...valuesOf(spec).map(String), ...listed])];
  if (own.includes(asked)) return asked;
  const aliases = model.config.openai_voices;
  const mapped = aliases && typeof aliases === 'object' ? (aliases as Record<string, unknown>)[asked] : undefined;
  if (typeof mapped === 'string') return mapped;
  // A model that takes any voice id of its provider (a voice of an ElevenLabs library): anything
  // but an OpenAI name it does not know is one.
  if (spec?.type === 'string' && !OPENAI_VOICES.has(asked)) return asked;
  throw AppError.validation('voice', own.length > 0 ? `this model's voices are ${own.join(', ')}` : 'this model does not know this voice');
}

/** The formats the model makes (the catalog's `config.formats`; every speech engine makes these three). */
function formatsOf(model: CatalogModel): string[] {
  return Array.isArray(model.config.formats) ? model.config.formats.map(String) : ['mp3', 'wav', 'ogg'];
}

/**
 * The format the model is asked for: the one asked when it makes it, Ogg for Opus, and for what
 * is re-encoded the most faithful source it makes (WAV is lossless).
 */
function sourceFormat(model: CatalogModel, asked: SpeechFormat): string {
  const made = formatsOf(model);
  if (asked === 'mp3' || asked === 'wav') {
    if (!made.includes(asked)) throw AppError.validation('response_format', `this model makes ${made.join(', ')}`);
    return asked;
  }
  if (!findFfmpeg()) throw AppError.validation('response_format', `this server cannot encode ${asked} (no ffmpeg); use mp3 or wav`);
  const preferred = asked === 'opus' ? ['ogg', 'wav', 'mp3'] : ['wav', 'ogg', 'mp3'];
  const source = preferred.find((format) => made.includes(format));
  if (!source) throw AppError.validation('response_format', `this model makes ${made.join(', ')}`);
  return source;
}

/** The model's audio in the asked format (re-encoded when the model did not make it so). */
async function audioIn(ctx: AppContext, bytes: Buffer, asked: SpeechFormat): Promise<Buffer> {
  if (asked === 'mp3' || asked === 'wav' || (asked === 'opus' && isOggOpus(bytes))) return bytes;
  const ffmpeg = findFfmpeg();
  if (!ffmpeg) throw new AppError('feature_disabled', { detail: `This server cannot encode ${asked} (no ffmpeg)` });
  try {
    return await transcodeAudio(ffmpeg, bytes, asked as TranscodedAudio, AbortSignal.any([clientGone(ctx), AbortSignal.timeout(TRANSCODE_TIMEOUT_MS)]));
  } catch (error) {
    // The generation completed (it is in history in the model's own format); only this answer failed.
    ctx.container.log.warn({ err: (error as Error).message, format: asked }, 'speech could not be re-encoded');
    throw new AppError('upstream_unavailable', { detail: `The model's audio could not be encoded as ${asked}; the generation is in your history in the model's own format` });
  }
}

async function speak(ctx: AppContext): Promise<void> {
  const body = parseBody(ctx, SpeechBody);
  const model = requireModel(ctx, body.model, 'tts');
  const asked = body.response_format ?? 'mp3';
  const params: Record<string, unknown> = {
    voice_id: voiceFor(model, typeof body.voice === 'string' ? body.voice : body.voice.id),
    format: sourceFormat(model, asked),
  };
  if (body.speed !== null && body.speed !== undefined) params.speed = body.speed;
  const request: GenerateRequest = { model: body.model, text: body.input, params: {}, topLevel: params };
  const options = { ...generationOptions(ctx, body), category: 'tts' as const };
  const started = await withProtocolNames(PROTOCOL_NAMES, () => ctx.container.generations.start(callerOf(ctx), request, options));
  const generation = await completedGeneration(ctx, model, started);
  if (!generation.resultKey) throw new AppError('internal_error');
  const audio = await audioIn(ctx, await ctx.container.storage.readAll(generation.resultKey), asked);
  ctx.type = CONTENT_TYPES[asked];
  ctx.body = audio;
}

export function v1SpeechRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>({ prefix: '/v1/audio' });
  router.use(requireAuth);
  router.post('/speech', speak);
  return router;
}

const AudioBytes = z.string().meta({ format: 'binary' });

export const v1SpeechRouteDocs: RouteDoc[] = [
  {
    method: 'post',
    path: '/v1/audio/speech',
    tag: 'OpenAI- and Anthropic-compatible (/v1)',
    auth: 'user',
    summary: "OpenAI's text to speech: the audio bytes",
    headers: IdempotencyHeader,
    body: SpeechBody,
    bodyExample: { model: 'local-tts', input: 'Hello there', voice: 'slt', response_format: 'mp3' },
    responses: { 200: { description: 'The audio in the asked format', content: Object.fromEntries(Object.values(CONTENT_TYPES).map((type) => [type, { schema: AudioBytes }])) } },
    errors: V1_GENERATION_ERRORS,
  },
];
