/**
 * Generations in both shapes (api/presenters/generation.ts): every answer carries the union of
 * shape A and shape B names; only `id` differs (integer in A, `gen_<n>` in B). History items,
 * the ledger, and the stream's events.
 */
import { z } from 'zod';
import { presentHistoryItem, presentStreamDelta, presentStreamEnd, presentStreamStart } from '../../presenters/generation';
import { Timestamp } from './account';
import { CATEGORIES } from '../../../shared/catalog/types';
import type { GenerationStatus } from '../../../shared/db/entities/generation';
import { everyValueOf, PresenterMatches } from './shape';

const Status = z.enum(everyValueOf<GenerationStatus>()(['pending', 'completed', 'failed'])).meta({ id: 'GenerationStatus' });
export const Category = z.enum(CATEGORIES).meta({ id: 'Category' });
const JsonObject = z.record(z.string(), z.unknown());

function generation(id: z.ZodType) {
  return z.strictObject({
    id,
    status: Status,
    model_slug: z.string(),
    model: z.string().meta({ description: 'Shape B name of model_slug' }),
    category: Category,
    type: Category.meta({ description: 'Shape B name of category' }),
    result_text: z.string().nullable().meta({ description: 'Text, transcript or tool text' }),
    content: z.string().nullable().optional().meta({ description: 'Text generations: the generated text' }),
    text: z.string().nullable().optional().meta({ description: 'Speech-to-text: the transcript' }),
    result_url: z.string().nullable().meta({ description: 'The result file (image, video, audio)' }),
    url: z.string().nullable(),
    thumbnail_url: z.string().nullable(),
    error: z.string().nullable(),
    tokens_spent: z.number().int().meta({ description: '0 while pending and when failed' }),
    tokens_used: z.number().int(),
    processing_ms: z.number().int().nullable(),
    result_metadata: JsonObject.nullable().meta({ description: 'width/height, duration, language, …' }),
    created_at: Timestamp.nullable(),
    completed_at: Timestamp.nullable(),
    progress: z.number().int().optional().meta({ description: 'While pending, 0–100' }),
    eta_seconds: z.number().int().optional().meta({ description: 'While pending, when the model gives a hint' }),
    seed: z.number().int().optional().meta({ description: 'Image, video and music: the seed used' }),
    usage: JsonObject.optional().meta({ description: "The provider's usage (prompt_tokens, completion_tokens, total_tokens); informational, not billed" }),
    duration_seconds: z.number().optional(),
    duration: z.number().optional().meta({ description: 'Video' }),
    width: z.number().int().optional().meta({ description: 'Video' }),
    height: z.number().int().optional().meta({ description: 'Video' }),
    characters: z.number().int().optional().meta({ description: 'Speech: characters synthesized' }),
    language: z.string().optional(),
    balance_remaining: z.number().int().optional().meta({ description: 'Subscription plus bonus tokens after the request' }),
  });
}

export const GenerationA = generation(z.number().int().meta({ example: 7 })).meta({
  id: 'GenerationA',
  description: 'Shape A: integer id (the /generate family for images, video, music and tools; /tools, /inpaint, /stt)',
  example: { id: 7, status: 'pending', model_slug: 'demo-video', model: 'demo-video', category: 'video', type: 'video', result_text: null, result_url: null, url: null, thumbnail_url: null, error: null, tokens_spent: 0, tokens_used: 0, processing_ms: null, result_metadata: null, created_at: '2026-11-24T23:00:00.000Z', completed_at: null, progress: 0, seed: 42, balance_remaining: 35 },
});

export const GenerationB = generation(z.string().regex(/^gen_[0-9]+$/).meta({ example: 'gen_7' })).meta({
  id: 'GenerationB',
  description: 'Shape B: `gen_<n>` id (text, speech and speech-to-text by URL; /generate/status/{id})',
  example: { id: 'gen_8', status: 'completed', model_slug: 'demo-text', model: 'demo-text', category: 'text', type: 'text', result_text: 'The sea is wide.', content: 'The sea is wide.', result_url: null, url: null, thumbnail_url: null, error: null, tokens_spent: 1, tokens_used: 1, processing_ms: 12, result_metadata: null, created_at: '2026-11-24T23:00:00.000Z', completed_at: '2026-11-24T23:00:00.012Z', usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 }, balance_remaining: 49 },
});

export const StreamStart = z.strictObject({ id: z.string(), model: z.string(), created_at: Timestamp }).meta({ id: 'StreamStart' });
export const StreamDelta = z.strictObject({ id: z.string(), delta: z.string() }).meta({ id: 'StreamDelta' });
export const StreamEnd = z
  .strictObject({
    id: z.string(),
    status: Status,
    content: z.string(),
    tokens_used: z.number().int(),
    balance_remaining: z.number().int(),
    usage: JsonObject.nullable(),
    error: z.string().optional(),
  })
  .meta({ id: 'StreamEnd' });

/** The body of `stream: true`: `event: generation_start|content_delta|generation_end` with these JSON data lines. */
export const GenerationEventStream = z.string().meta({
  description: 'text/event-stream: `generation_start` (StreamStart), `content_delta`… (StreamDelta), `generation_end` (StreamEnd)',
  example: 'event: generation_start\ndata: {"id":"gen_8","model":"demo-text","created_at":"2026-11-24T23:00:00.000Z"}\n\nevent: content_delta\ndata: {"id":"gen_8","delta":"The sea"}\n\nevent: generation_end\ndata: {"id":"gen_8","status":"completed","content":"The sea","tokens_used":1,"balance_remaining":49,"usage":null}\n\n',
});

export const HistoryItem = z
  .strictObject({
    id: z.number().int(),
    model_slug: z.string(),
    model: z.string(),
    model_name: z.string(),
    category: Category,
    type: Category,
    prompt: z.string().nullable(),
    status: Status,
    result_text: z.string().nullable(),
    result_url: z.string().nullable(),
    url: z.string().nullable(),
    thumbnail_url: z.string().nullable(),
    tokens_spent: z.number().int(),
    tokens_used: z.number().int(),
    is_favorited: z.boolean(),
    user_rating: z.number().int().nullable(),
    schedule_id: z.number().int().nullable(),
    params: z.record(z.string(), z.unknown()).nullable().meta({ description: 'The parameters it was asked with (defaults filled), to run it again; null for a request kept in storage (a long chat).' }),
    created_at: Timestamp.nullable(),
  })
  .meta({ id: 'HistoryItem' });

const pageFields = { total: z.number().int(), page: z.number().int(), limit: z.number().int(), pages: z.number().int() };

export const HistoryPage = z.strictObject({ items: z.array(HistoryItem), ...pageFields }).meta({ id: 'HistoryPage' });
export const Favorite = z.strictObject({ id: z.number().int(), is_favorited: z.boolean() }).meta({ id: 'Favorite' });
export const Rating = z.strictObject({ id: z.number().int(), user_rating: z.number().int().nullable() }).meta({ id: 'Rating' });

export const LedgerItem = z
  .strictObject({
    id: z.number().int(),
    amount: z.number().int().meta({ description: 'Negative: spent or taken; positive: credited' }),
    reason: z.string(),
    generation_id: z.number().int().nullable(),
    balance_after: z.number().int(),
    created_at: Timestamp.nullable(),
  })
  .meta({ id: 'LedgerEntry' });
export const LedgerPage = z.strictObject({ items: z.array(LedgerItem), ...pageFields }).meta({ id: 'LedgerPage' });

/** A page of anything with `items` (webhook deliveries). */
export function pageOf(item: z.ZodType, id: string) {
  return z.strictObject({ items: z.array(item), ...pageFields }).meta({ id });
}

const checks: [
  PresenterMatches<ReturnType<typeof presentHistoryItem>, typeof HistoryItem>,
  PresenterMatches<ReturnType<typeof presentStreamStart>, typeof StreamStart>,
  PresenterMatches<ReturnType<typeof presentStreamDelta>, typeof StreamDelta>,
  PresenterMatches<ReturnType<typeof presentStreamEnd>, typeof StreamEnd>,
] = [true, true, true, true];
void checks;
