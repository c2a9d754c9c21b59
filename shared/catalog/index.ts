/**
 * The model catalog: loaded from product/catalog.json (or CATALOG_PATH), validated once at boot.
 * A model is offered only when its provider (or a fallback's) is configured; old slugs listed as
 * aliases resolve to their model.
 */
import fs from 'node:fs';
import { z } from 'zod';
import { PlanNameSchema, PlanName, PlanTable } from '../plans';
import { basePrice, priceRange } from './pricing';
import { CATEGORIES, Category, CatalogModel, ParamSpec } from './types';

export * from './types';
export { priceOf, priceRange, basePrice } from './pricing';

const ParamSpecSchema: z.ZodType<ParamSpec> = z.discriminatedUnion('type', [
  z.object({ type: z.literal('enum'), values: z.array(z.string()).min(1), default: z.string().optional(), description: z.string().optional() }),
  z.object({
    type: z.literal('integer'),
    min: z.number().int().optional(),
    max: z.number().int().optional(),
    values: z.array(z.number().int()).min(1).optional(),
    default: z.number().int().optional(),
    nullable: z.boolean().optional(),
    description: z.string().optional(),
  }),
  z.object({ type: z.literal('number'), min: z.number().optional(), max: z.number().optional(), default: z.number().optional(), description: z.string().optional() }),
  z.object({
    type: z.literal('string'),
    max_length: z.number().int().positive().optional(),
    min_length: z.number().int().min(0).optional(),
    default: z.string().optional(),
    description: z.string().optional(),
  }),
  z.object({ type: z.literal('boolean'), default: z.boolean().optional(), description: z.string().optional() }),
  z.object({ type: z.literal('url'), description: z.string().optional() }),
]);

const ModelSchema = z.object({
  slug: z.string().regex(/^[a-z0-9][a-z0-9.\-_]{0,99}$/, 'lower-case letters, digits, . - _'),
  name: z.string().min(1),
  category: z.enum(CATEGORIES),
  provider: z.string().min(1),
  upstream_model: z.string().min(1),
  min_plan: PlanNameSchema.default('free'),
  description_en: z.string().default(''),
  kind: z.string().nullable().default(null),
  aliases: z.array(z.string()).default([]),
  sync: z.boolean(),
  supports_streaming: z.boolean().default(false),
  timeout_seconds: z.number().int().positive().default(60),
  eta_seconds: z.number().int().positive().nullable().default(null),
  config: z.record(z.string(), z.unknown()).default({}),
  params: z.record(z.string(), ParamSpecSchema).default({}),
  price: z.object({
    base: z.number().min(0),
    per_unit: z.array(z.object({ param: z.string(), rate: z.number().min(0) })).optional(),
    multipliers: z.array(z.object({ param: z.string(), values: z.record(z.string(), z.number().min(0)) })).optional(),
  }),
  fallbacks: z.array(z.object({ provider: z.string(), upstream_model: z.string() })).default([]),
});

const CatalogFileSchema = z.object({ models: z.array(ModelSchema).min(1) });

export interface ModelListing {
  model: CatalogModel;
  tokenCost: number;
  minTokenCost: number;
  maxTokenCost: number;
}

export class Catalog {
  private readonly bySlug = new Map<string, CatalogModel>();
  /** Models by their upstream's own model name (`gpt-4o-mini`), in catalog order. */
  private readonly byUpstreamName = new Map<string, CatalogModel[]>();
  private readonly listings = new Map<string, ModelListing>();

  constructor(
    models: CatalogModel[],
    private readonly plans: PlanTable,
    /** Whether a provider is configured here and can serve the category. */
    private readonly canServe: (provider: string, category: Category, upstreamModel: string) => boolean,
  ) {
    for (const model of models) {
      const range = priceRange(model);
      this.listings.set(model.slug, { model, tokenCost: basePrice(model), minTokenCost: range.min, maxTokenCost: range.max });
      for (const key of [model.slug, ...model.aliases]) {
        if (this.bySlug.has(key)) throw new Error(`catalog: slug or alias "${key}" is declared twice`);
        this.bySlug.set(key, model);
      }
      for (const name of [model.upstreamModel, ...model.fallbacks.map((f) => f.upstreamModel)]) {
        this.byUpstreamName.set(name, [...(this.byUpstreamName.get(name) ?? []), model]);
      }
    }
  }

  /** True when the model's provider, or one of its fallbacks, is configured here. */
  isOffered(model: CatalogModel): boolean {
    return (
      this.canServe(model.provider, model.category, model.upstreamModel) ||
      model.fallbacks.some((f) => this.canServe(f.provider, model.category, f.upstreamModel))
    );
  }

  /**
   * The offered model for a slug or alias, or undefined. A name that is neither may be an
   * upstream's own model name (`gpt-4o-mini`, as OpenAI clients send it): the first offered
   * catalog model served by that name.
   */
  find(slugOrAlias: string): CatalogModel | undefined {
    const model = this.bySlug.get(slugOrAlias);
    if (model) return this.isOffered(model) ? model : undefined;
    return this.byUpstreamName.get(slugOrAlias)?.find((m) => this.isOffered(m));
  }

  listing(model: CatalogModel): ModelListing {
    const listing = this.listings.get(model.slug);
    if (!listing) throw new Error(`no listing for ${model.slug}`);
    return listing;
  }

  /** Offered models, optionally of one category and available at a plan (min_plan ≤ plan). */
  list(filter: { category?: Category; availableAt?: PlanName } = {}): ModelListing[] {
    return [...this.listings.values()].filter(
      ({ model }) =>
        this.isOffered(model) &&
        (filter.category === undefined || model.category === filter.category) &&
        (filter.availableAt === undefined || this.plans.allows(filter.availableAt, model.minPlan)),
    );
  }

  all(): CatalogModel[] {
    return [...this.listings.values()].map((l) => l.model);
  }
}

export function parseCatalog(raw: unknown, source: string): CatalogModel[] {
  const parsed = CatalogFileSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.slice(0, 10).map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`Catalog ${source} is invalid: ${problems}`);
  }
  return parsed.data.models.map((m) => {
    const model: CatalogModel = {
      slug: m.slug,
      name: m.name,
      category: m.category,
      provider: m.provider,
      upstreamModel: m.upstream_model,
      minPlan: m.min_plan,
      descriptionEn: m.description_en,
      kind: m.kind,
      aliases: m.aliases,
      sync: m.sync,
      supportsStreaming: m.supports_streaming,
      timeoutSeconds: m.timeout_seconds,
      etaSeconds: m.eta_seconds,
      config: m.config,
      params: m.params,
      price: m.price,
      fallbacks: m.fallbacks.map((f) => ({ provider: f.provider, upstreamModel: f.upstream_model })),
    };
    for (const term of [...(m.price.per_unit ?? []), ...(m.price.multipliers ?? [])]) {
      if (!(term.param in m.params)) throw new Error(`Catalog ${source}: ${m.slug} prices by undeclared param "${term.param}"`);
    }
    return model;
  });
}

export function loadCatalogFile(file: string): CatalogModel[] {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`Cannot read catalog ${file}: ${(error as Error).message}`);
  }
  return parseCatalog(raw, file);
}
