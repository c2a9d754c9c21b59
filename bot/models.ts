/** Which models a person may use from the chat, and the default chat model of a plan. */
import type { Catalog, CatalogModel, ModelListing } from '../shared/catalog';
import type { Plan } from '../shared/plans';

export function modelsFor(catalog: Catalog, plan: Plan, category: 'text' | 'image'): ModelListing[] {
  return catalog.list({ category, availableAt: plan.name }).sort((a, b) => a.tokenCost - b.tokenCost);
}

/**
 * The chat model: the one chosen in /settings while the plan allows it, otherwise the cheapest
 * offered text model the plan allows, preferring one that streams (replies appear as they come).
 */
export function chatModel(catalog: Catalog, plan: Plan, chosen: string | null): CatalogModel | null {
  const allowed = modelsFor(catalog, plan, 'text');
  const picked = chosen ? allowed.find((l) => l.model.slug === chosen) : undefined;
  if (picked) return picked.model;
  return (allowed.find((l) => l.model.supportsStreaming) ?? allowed[0])?.model ?? null;
}

/** The option of an image model the bot offers before confirming: size or aspect ratio. */
export function imageOption(model: CatalogModel): { param: string; values: string[] } | null {
  for (const param of ['size', 'aspect_ratio']) {
    const spec = model.params[param];
    if (spec?.type === 'enum' && spec.values.length > 1) return { param, values: spec.values };
  }
  return null;
}
