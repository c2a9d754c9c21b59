/**
 * Generations as the contract shows them. Every response carries the union of shape A and shape
 * B names (result_text/content, result_url/url, tokens_spent/tokens_used, model_slug/model,
 * category/type); only `id` differs: integer in shape A, "gen_<n>" in shape B (decisions.md).
 */
import type { Catalog } from '../../shared/catalog';
import type { Clock } from '../../shared/clock';
import type { Generation } from '../../shared/db/entities';
import type { StreamEnd } from '../../shared/generation/types';
import { requestParams } from '../../shared/generation/history';
import { iso } from './dates';

export type IdShape = 'A' | 'B';

export interface PresentContext {
  publicBaseUrl: string;
  now: Date;
  /** When known, `balance_remaining` (subscription plus bonus tokens). */
  balance?: number | null;
}

export function fileUrl(publicBaseUrl: string, key: string | null): string | null {
  return key ? `${publicBaseUrl}/files/${key}` : null;
}

/** A JSON column (metadata, usage) as an object; null when empty or not JSON. */
export function parseJson(text: string | null): Record<string, unknown> | null {
  if (!text) return null;
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return null;
  }
}

/** Shape B ids are used by text, speech and speech-to-text-by-URL responses and the status endpoint. */
export function idShapeForCategory(category: string): IdShape {
  return category === 'text' || category === 'tts' || category === 'stt' ? 'B' : 'A';
}

export function presentGeneration(generation: Generation, shape: IdShape, context: PresentContext) {
  const metadata = parseJson(generation.resultMetadata);
  const usage = parseJson(generation.usage);
  const url = fileUrl(context.publicBaseUrl, generation.resultKey);
  const completed = generation.status === 'completed';
  const pending = generation.status === 'pending';
  const body: Record<string, unknown> = {
    id: shape === 'A' ? generation.id : `gen_${generation.id}`,
    status: generation.status,
    model_slug: generation.modelSlug,
    model: generation.modelSlug,
    category: generation.category,
    type: generation.category,
    result_text: generation.resultText,
    content: generation.category === 'text' ? (generation.resultText ?? (completed ? '' : null)) : undefined,
    text: generation.category === 'stt' ? generation.resultText : undefined,
    result_url: url,
    url,
    thumbnail_url: fileUrl(context.publicBaseUrl, generation.thumbnailKey),
    error: generation.error,
    tokens_spent: generation.tokensSpent,
    tokens_used: generation.tokensSpent,
    processing_ms: pending ? null : generation.processingMs,
    result_metadata: metadata,
    created_at: iso(generation.createdAt),
    completed_at: iso(generation.completedAt),
  };
  if (pending) {
    body.progress = generation.progress;
    if (generation.etaSeconds !== null) {
      const elapsed = Math.floor((context.now.getTime() - generation.createdAt.getTime()) / 1000);
      body.eta_seconds = Math.max(1, generation.etaSeconds - Math.max(0, elapsed));
    }
  }
  if (generation.seed !== null && (generation.category === 'image' || generation.category === 'video' || generation.category === 'music')) {
    body.seed = generation.seed;
  }
  if (usage) body.usage = usage;
  if (metadata) {
    if (typeof metadata.duration === 'number') {
      body.duration_seconds = metadata.duration;
      if (generation.category === 'video') body.duration = metadata.duration;
    }
    if (generation.category === 'video') {
      if (typeof metadata.width === 'number') body.width = metadata.width;
      if (typeof metadata.height === 'number') body.height = metadata.height;
    }
    if (typeof metadata.characters === 'number') body.characters = metadata.characters;
    if (typeof metadata.language === 'string') body.language = metadata.language;
  }
  if (context.balance !== undefined && context.balance !== null) body.balance_remaining = context.balance;
  for (const key of Object.keys(body)) if (body[key] === undefined) delete body[key];
  return body;
}

export function presentHistoryItem(generation: Generation, catalog: Catalog, publicBaseUrl: string) {
  const model = catalog.find(generation.modelSlug);
  const url = fileUrl(publicBaseUrl, generation.resultKey);
  return {
    id: generation.id,
    model_slug: generation.modelSlug,
    model: generation.modelSlug,
    model_name: model?.name ?? generation.modelSlug,
    category: generation.category,
    type: generation.category,
    prompt: generation.prompt,
    status: generation.status,
    result_text: generation.resultText,
    result_url: url,
    url,
    thumbnail_url: fileUrl(publicBaseUrl, generation.thumbnailKey),
    tokens_spent: generation.tokensSpent,
    tokens_used: generation.tokensSpent,
    is_favorited: generation.isFavorited,
    user_rating: generation.userRating,
    schedule_id: generation.scheduleId,
    params: requestParams(generation),
    created_at: iso(generation.createdAt),
  };
}

/** What presenting a generation needs besides the row: where files are served, the time, the balance. */
export function presentContext(deps: { config: { publicBaseUrl: string }; clock: Clock }, balance: number): PresentContext {
  return { publicBaseUrl: deps.config.publicBaseUrl, now: deps.clock(), balance };
}

/** The stream's first event (decisions.md "Streaming"). */
export function presentStreamStart(generation: Generation) {
  return { id: `gen_${generation.id}`, model: generation.modelSlug, created_at: generation.createdAt.toISOString() };
}

export function presentStreamDelta(generation: Generation, delta: string) {
  return { id: `gen_${generation.id}`, delta };
}

/** The stream's last event: how it ended, what it cost, the balance after. */
export function presentStreamEnd({ generation, balance }: StreamEnd) {
  return {
    id: `gen_${generation.id}`,
    status: generation.status,
    content: generation.resultText ?? '',
    tokens_used: generation.tokensSpent,
    balance_remaining: balance,
    usage: parseJson(generation.usage),
    ...(generation.error ? { error: generation.error } : {}),
  };
}
