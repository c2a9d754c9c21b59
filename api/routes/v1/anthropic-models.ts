/**
 * GET /v1/models for Anthropic's clients. The path is OpenAI's too, and both SDKs call it; an
 * Anthropic client always sends `anthropic-version` (OpenAI's never do), so that header picks
 * Anthropic's shape: the plan's text models (the only ones /v1/messages can use), paged by
 * `limit`, `after_id` and `before_id` as Anthropic's list is.
 */
import { z } from 'zod';
import type { ModelListing } from '../../../shared/catalog';
import { AppError } from '../../../shared/errors';
import type { AppContext } from '../../context';
import { validate } from '../../http';
import { presentAnthropicModelPage } from '../../presenters/anthropic';

export function fromAnthropicClient(ctx: AppContext): boolean {
  return ctx.get('anthropic-version').trim() !== '';
}

export const AnthropicPageQuery = z.looseObject({
  limit: z.coerce.number({ message: 'must be an integer' }).int('must be an integer').min(1, 'must be between 1 and 1000').max(1000, 'must be between 1 and 1000').default(20),
  after_id: z.string({ message: 'must be one model id' }).min(1).optional(),
  before_id: z.string({ message: 'must be one model id' }).min(1).optional(),
});

function positionOf(listings: ModelListing[], id: string, field: string): number {
  const index = listings.findIndex((listing) => listing.model.slug === id);
  if (index < 0) throw AppError.validation(field, `${id} is not a model of this list`);
  return index;
}

/** Only text models answer Anthropic's clients: /v1/messages takes no other. */
export function anthropicModels(listings: ModelListing[]): ModelListing[] {
  return listings.filter((listing) => listing.model.category === 'text');
}

export function anthropicModelPage(ctx: AppContext, listings: ModelListing[]) {
  const query = validate(AnthropicPageQuery, ctx.query);
  if (query.after_id && query.before_id) throw AppError.validation('before_id', 'cannot be combined with after_id');
  const models = anthropicModels(listings);
  if (query.before_id) {
    const end = positionOf(models, query.before_id, 'before_id');
    const start = Math.max(0, end - query.limit);
    return presentAnthropicModelPage(models.slice(start, end), start > 0);
  }
  const start = query.after_id ? positionOf(models, query.after_id, 'after_id') + 1 : 0;
  return presentAnthropicModelPage(models.slice(start, start + query.limit), start + query.limit < models.length);
}
