/**
 * The one price function. `priceOf` turns a model and its normalized params into tokens; the
 * generate pipeline, calculate-price and the catalog's min/max all call it, so a quoted price is
 * always the charged price.
 */
import type { CatalogModel, ParamSpec, PriceRule } from './types';

export type ParamValues = Record<string, unknown>;

function multiplierFor(values: Record<string, number>, value: unknown): number {
  if (value === undefined || value === null) return 1;
  const key = String(value);
  return Object.prototype.hasOwnProperty.call(values, key) ? (values[key] as number) : 1;
}

export function applyPriceRule(rule: PriceRule, params: ParamValues): number {
  let amount = rule.base;
  for (const term of rule.per_unit ?? []) {
    const value = Number(params[term.param] ?? 0);
    if (Number.isFinite(value)) amount += term.rate * value;
  }
  for (const factor of rule.multipliers ?? []) amount *= multiplierFor(factor.values, params[factor.param]);
  // Rounding guards against binary fractions (0.1 × 30 = 3.0000000000000004 must cost 3).
  return Math.max(0, Math.ceil(Math.round(amount * 1e6) / 1e6));
}

export function priceOf(model: CatalogModel, params: ParamValues): number {
  return applyPriceRule(model.price, params);
}

/** The values a param can take that matter for price: every choice, or the ends of a range. */
function candidateValues(spec: ParamSpec | undefined): unknown[] {
  if (!spec) return [undefined];
  switch (spec.type) {
    case 'enum':
      return spec.values;
    case 'integer':
      if (spec.values) return spec.values;
      return [spec.min ?? spec.default ?? 0, spec.max ?? spec.default ?? 0];
    case 'number':
      return [spec.min ?? spec.default ?? 0, spec.max ?? spec.default ?? 0];
    case 'boolean':
      return [true, false];
    case 'string':
      return [spec.default];
    case 'url':
      return [undefined];
  }
}

/** Cheapest and dearest price over every combination of the params the rule looks at. */
export function priceRange(model: CatalogModel): { min: number; max: number } {
  const priced = new Set<string>([
    ...(model.price.per_unit ?? []).map((t) => t.param),
    ...(model.price.multipliers ?? []).map((m) => m.param),
  ]);
  let combos: ParamValues[] = [{}];
  for (const name of priced) {
    const next: ParamValues[] = [];
    for (const value of candidateValues(model.params[name])) {
      for (const combo of combos) next.push({ ...combo, [name]: value });
    }
    combos = next;
  }
  const prices = combos.map((combo) => priceOf(model, combo));
  return { min: Math.min(...prices), max: Math.max(...prices) };
}

/** `token_cost` of the catalog: the price with every param at its default. */
export function basePrice(model: CatalogModel): number {
  const defaults: ParamValues = {};
  for (const [name, spec] of Object.entries(model.params)) {
    if ('default' in spec && spec.default !== undefined) defaults[name] = spec.default;
  }
  return priceOf(model, defaults);
}
