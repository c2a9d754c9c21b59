/** A catalog model as spec 2.5 shows it, plus what a client needs to call it (params, async). */
import type { ModelListing } from '../../shared/catalog';
import type { CatalogModel } from '../../shared/catalog/types';
import { paramSpecs } from '../../shared/generation/params';

export function presentModel(listing: ModelListing) {
  const { model } = listing;
  return {
    slug: model.slug,
    name: model.name,
    category: model.category,
    provider: model.provider,
    token_cost: listing.tokenCost,
    min_token_cost: listing.minTokenCost,
    max_token_cost: listing.maxTokenCost,
    // Available on the free (Starter) plan.
    is_free: model.minPlan === 'free',
    min_plan: model.minPlan,
    description_en: model.descriptionEn,
    supports_streaming: model.supportsStreaming,
    config: model.config,
    is_async: !model.sync,
    aliases: model.aliases,
    params: paramSpecs(model),
  };
}

/** calculate-price: the request's price, the model's range, and the params as normalized. */
export function presentPrice(quote: { model: CatalogModel; params: Record<string, unknown>; price: number }, listing: ModelListing) {
  return {
    model: quote.model.slug,
    token_cost: quote.price,
    min_token_cost: listing.minTokenCost,
    max_token_cost: listing.maxTokenCost,
    params: quote.params,
  };
}
