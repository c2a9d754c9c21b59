/**
 * What the /v1 media routes (images, speech, transcriptions, videos) share: finding the model a
 * request names before anything is stored or mapped, naming our params as the protocol does in
 * the errors the domain raises about them, and the completed generation a synchronous answer needs.
 */
import { z } from 'zod';
import type { CatalogModel, Category, ParamSpec } from '../../../shared/catalog/types';
import { AppError } from '../../../shared/errors';
import { paramSpecs } from '../../../shared/generation/params';
import type { Generation } from '../../../shared/db/entities';
import type { Started } from '../../../shared/generation/types';
import { AppContext, callerOf } from '../../context';
import { setRateLimitHeaders } from '../../middleware/auth';
import { failedGenerationError } from '../../presenters/openai';
import { clientGone } from '../../sse';

/** A string field the request must have: "is required" when absent, "must be a string" when something else. */
export function requiredString(max: number) {
  return z.string({ error: (issue) => (issue.input === undefined || issue.input === null ? 'is required' : 'must be a string') }).max(max, `must be at most ${max} characters`);
}

/**
 * The offered model `slug` names, of `category`, that the caller's plan may use: refused in the
 * order /api/v2 refuses (unknown 404, another category 400 on `model`, above the plan 403), before
 * a protocol field is mapped onto its params or an upload is stored.
 */
export function requireModel(ctx: AppContext, slug: string | undefined, category: Category): CatalogModel {
  const model = ctx.container.generations.model(slug);
  if (model.category !== category) throw AppError.validation('model', `must be a ${category} model`);
  if (!ctx.container.plans.allows(callerOf(ctx).plan.name, model.minPlan)) throw new AppError('insufficient_plan');
  return model;
}

/** The model's declared param `name`, if it has one. */
export function paramOf(model: CatalogModel, name: string): ParamSpec | undefined {
  return paramSpecs(model)[name];
}

/** The values an enum (or integer list) param takes; empty for a free one. */
export function valuesOf(spec: ParamSpec | undefined): Array<string | number> {
  if (!spec) return [];
  if (spec.type === 'enum') return spec.values;
  if (spec.type === 'integer' && spec.values) return spec.values;
  return [];
}

/**
 * Runs `work` (a call into the domain), renaming the fields of a validation error from our param
 * names to the protocol's (`voice_id` → `voice`), so the error's `param` is what the client sent.
 */
export async function withProtocolNames<T>(names: Record<string, string>, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!(error instanceof AppError) || !error.errors) throw error;
    const errors = error.errors.map((e) => {
      const ours = e.field.replace(/^params\./, '');
      return names[ours] ? { ...e, field: names[ours] } : e;
    });
    throw new AppError(error.code, { detail: error.detail, errors, extra: error.extra, headers: error.headers });
  }
}

/**
 * The completed generation a protocol that answers with the result needs: the limit headers set,
 * a pending one (a queued model, or a replay of a request still running) waited for within the
 * model's timeout, a failed one thrown as the protocol's error, and one still pending past the
 * timeout a 504 (it goes on, and ends in history as any other).
 */
export async function completedGeneration(ctx: AppContext, model: CatalogModel, started: Started): Promise<Generation> {
  if (started.limits) setRateLimitHeaders(ctx, started.limits);
  let generation = started.generation;
  if (generation.status === 'pending') {
    const waited = await ctx.container.generations.awaitEnd(callerOf(ctx).user.id, generation.id, { timeoutMs: model.timeoutSeconds * 1000, signal: clientGone(ctx) });
    generation = waited.generation;
  }
  if (generation.status === 'pending') {
    throw new AppError('upstream_timeout', {
      detail: `The result was not ready within ${model.timeoutSeconds} s; generation gen_${generation.id} goes on and will be in your history`,
    });
  }
  if (generation.status === 'failed') throw failedGenerationError(generation);
  return generation;
}
