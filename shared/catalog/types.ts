/**
 * The model catalog's shape. The catalog is data (product/catalog.json or CATALOG_PATH); these
 * types are what the loader turns it into after validation.
 */
import type { PlanName } from '../plans';

export const CATEGORIES = ['text', 'image', 'video', 'tts', 'stt', 'music', 'tool'] as const;
export type Category = (typeof CATEGORIES)[number];

/** One declared parameter of a model: the generic validator builds its zod schema from this. */
export type ParamSpec =
  | { type: 'enum'; values: string[]; default?: string; description?: string }
  | { type: 'integer'; min?: number; max?: number; values?: number[]; default?: number; nullable?: boolean; description?: string }
  | { type: 'number'; min?: number; max?: number; default?: number; description?: string }
  | { type: 'string'; max_length?: number; min_length?: number; default?: string; description?: string }
  | { type: 'boolean'; default?: boolean; description?: string }
  | { type: 'url'; description?: string };

/**
 * A price rule: tokens = ceil((base + Σ rate·value(param)) × Π multiplier(value(param))).
 * Per-unit terms price seconds of video or music; multipliers price sizes, quality, resolution.
 */
export interface PriceRule {
  base: number;
  per_unit?: Array<{ param: string; rate: number }>;
  multipliers?: Array<{ param: string; values: Record<string, number> }>;
}

export interface ModelConfig {
  sizes?: string[];
  formats?: string[];
  quality_options?: string[];
  supports_negative_prompt?: boolean;
  supports_vision?: boolean;
  /** Text: the model takes `tools` / `tool_choice` and tool-call conversations (passed to its upstream). */
  supports_tools?: boolean;
  /** Text: the model takes a `response_format` of `json_object` or `json_schema`. */
  supports_response_format?: boolean;
  max_context?: number;
  [extra: string]: unknown;
}

export interface CatalogModel {
  slug: string;
  name: string;
  category: Category;
  /** Provider adapter name (e.g. `local`, `openai`); the model is offered only when it is configured. */
  provider: string;
  /** The provider's own model id. */
  upstreamModel: string;
  minPlan: PlanName;
  descriptionEn: string;
  aliases: string[];
  /** Runs inside the request (true) or is queued and polled (false). */
  sync: boolean;
  supportsStreaming: boolean;
  timeoutSeconds: number;
  /** Hint on pending responses of asynchronous models. */
  etaSeconds: number | null;
  config: ModelConfig;
  params: Record<string, ParamSpec>;
  price: PriceRule;
  /** Other provider names to try, in order, when this one is unavailable. */
  fallbacks: Array<{ provider: string; upstreamModel: string }>;
  /** Free-text label shown in docs: what the model really is (e.g. "demo", "classic algorithm"). */
  kind: string | null;
}
