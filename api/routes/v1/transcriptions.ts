/**
 * POST /v1/audio/transcriptions: OpenAI's transcription endpoint (multipart: `file`, `model`,
 * `language`, `prompt`, `response_format`, `timestamp_granularities[]`, `temperature`) over our
 * speech-to-text generations. The upload goes through the same streamed size limits and byte
 * sniffing as /api/v2/stt; the answer is json, text, verbose_json, srt or vtt. Our recognizers
 * give the text and the audio's duration, not word times: segment timestamps are one segment
 * spanning the audio, and word timestamps are refused (400) rather than invented.
 */
import crypto from 'node:crypto';
import Router from '@koa/router';
import { z } from 'zod';
import type { GenerateRequest } from '../../../shared/generation/input';
import { AppContext, AppCustom, AppState, callerOf } from '../../context';
import { generationOptions, validate } from '../../http';
import { requireAuth } from '../../middleware/auth';
import { presentTranscription, TranscriptFormat } from '../../presenters/openai-media';
import { formField, multipartBody, uploadedAudio } from '../../uploads';
import { completedGeneration, requireModel, withProtocolNames } from './media-common';
import type { RouteDoc } from '../../openapi/registry';
import { filePart, IdempotencyHeader } from '../../openapi/schemas/params';
import { Transcription, VerboseTranscription } from '../../openapi/schemas/v1';
import { V1_GENERATION_ERRORS } from '../../openapi/schemas/v1-requests';

const FORMATS = ['json', 'text', 'verbose_json', 'srt', 'vtt'] as const;

/** The form's text fields (multipart values are strings; repeated ones arrive as arrays). */
const TranscriptionFields = z.looseObject({
  model: z.string({ error: 'is required' }).min(1, 'is required').max(200),
  language: z.string().max(16).optional(),
  prompt: z.string().max(100_000).optional(),
  response_format: z.enum(FORMATS, { message: `must be one of ${FORMATS.join(', ')}` }).optional(),
  temperature: z.coerce.number({ message: 'must be a number' }).min(0, 'must be between 0 and 1').max(1, 'must be between 0 and 1').optional(),
  stream: z.enum(['false'], { message: 'streamed transcription is not supported' }).optional(),
  timestamp_granularities: z
    .array(z.enum(['segment', 'word'], { message: 'must be segment or word' }))
    .refine((asked) => !asked.includes('word'), 'word timestamps are not available from our recognizers; use segment')
    .optional(),
});

/** Our params' names as OpenAI's transcription request calls them. */
const PROTOCOL_NAMES = { audio_url: 'file' };

/** The form's fields as one object: single values as strings, `name[]` fields as arrays. */
function formFields(ctx: AppContext): Record<string, unknown> {
  const body = (ctx.request.body ?? {}) as Record<string, unknown>;
  const fields: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(body)) {
    // Names that would reach an object's prototype are no field of this form.
    if (/^(__proto__|constructor|prototype)(\[\])?$/.test(name)) continue;
    const list = Array.isArray(value) ? value : [value];
    if (name.endsWith('[]')) fields[name.slice(0, -2)] = list;
    else fields[name] = formField(ctx, name) ?? list[0];
  }
  return fields;
}

async function transcribe(ctx: AppContext): Promise<void> {
  const fields = validate(TranscriptionFields, formFields(ctx));
  const model = requireModel(ctx, fields.model, 'stt');
  const audio = await uploadedAudio(ctx, 'file');
  const stored = await ctx.container.storage.put('uploads', audio.bytes, audio.type.contentType, audio.type.extension);
  const params: Record<string, unknown> = { audio_url: `${ctx.container.config.publicBaseUrl}/files/${stored.key}` };
  if (fields.language) params.language = fields.language;
  const request: GenerateRequest = { model: fields.model, prompt: fields.prompt, params: {}, topLevel: params };
  // A replay is told apart by the form and the file's bytes (the stored copy has a new key each time).
  const fingerprint = { ...fields, file: crypto.createHash('sha256').update(audio.bytes).digest('hex') };
  const options = { ...generationOptions(ctx, fingerprint), category: 'stt' as const };
  const started = await withProtocolNames(PROTOCOL_NAMES, () => ctx.container.generations.start(callerOf(ctx), request, options));
  const generation = await completedGeneration(ctx, model, started);
  const format: TranscriptFormat = fields.response_format ?? 'json';
  const answer = presentTranscription(generation, format, fields.temperature ?? 0);
  ctx.type = answer.contentType;
  ctx.body = answer.body;
}

export function v1TranscriptionRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>({ prefix: '/v1/audio' });
  router.post('/transcriptions', requireAuth, multipartBody(1), transcribe);
  return router;
}

export const v1TranscriptionRouteDocs: RouteDoc[] = [
  {
    method: 'post',
    path: '/v1/audio/transcriptions',
    tag: 'OpenAI- and Anthropic-compatible (/v1)',
    auth: 'user',
    summary: "OpenAI's transcription of an uploaded recording",
    description: '`response_format`: json (default), text, verbose_json, srt or vtt.',
    headers: IdempotencyHeader,
    multipart: TranscriptionFields.extend({ file: filePart('The recording; at most 25 MB') }),
    responses: {
      200: {
        description: 'The transcript in the asked format',
        schema: z.union([Transcription, VerboseTranscription]),
        content: { 'text/plain': { schema: z.string() }, 'text/vtt': { schema: z.string() } },
      },
    },
    errors: V1_GENERATION_ERRORS,
  },
];
