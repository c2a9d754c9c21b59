/** The API's answers as the dashboard reads them (README "API"; api/presenters/). */

export type Category = 'text' | 'image' | 'video' | 'tts' | 'stt' | 'music' | 'tool';
export const CATEGORIES: Category[] = ['text', 'image', 'video', 'tts', 'stt', 'music', 'tool'];
export type PlanName = 'free' | 'basic' | 'pro' | 'vip' | 'elite';
export const PLAN_ORDER: PlanName[] = ['free', 'basic', 'pro', 'vip', 'elite'];
/** The spec's plans with API access ("API keys (vip/elite)"). */
export const API_PLANS: PlanName[] = ['vip', 'elite'];

export interface User {
  id: number;
  name: string;
  email: string | null;
  plan: PlanName;
  plan_expires_at: string | null;
  token_balance: number;
  token_limit: number;
  tokens_used_this_period: number;
  rate_limit_hourly: number;
  rate_limit_daily: number;
  messenger_username: string | null;
  avatar_url: string | null;
  auth_methods: { messenger: boolean; identity_provider: boolean; email: boolean };
}

export interface Balance {
  plan: PlanName;
  token_balance: number;
  plan_tokens_remaining: number;
  bonus_tokens: number;
  held_tokens: number;
  plan_expires_at: string | null;
  next_refill_at: string | null;
}

export interface Settings {
  language: 'en' | 'ru';
  image_format: 'webp' | 'png' | 'jpeg';
  notifications_enabled: boolean;
  default_image_size: string | null;
}

export type ParamSpec =
  | { type: 'enum'; values: string[]; default?: string; description?: string }
  | { type: 'integer'; min?: number; max?: number; values?: number[]; default?: number; nullable?: boolean; description?: string }
  | { type: 'number'; min?: number; max?: number; default?: number; description?: string }
  | { type: 'string'; max_length?: number; min_length?: number; default?: string; description?: string }
  | { type: 'boolean'; default?: boolean; description?: string }
  | { type: 'url'; description?: string };

export interface Model {
  slug: string;
  name: string;
  category: Category;
  min_token_cost: number;
  max_token_cost: number;
  min_plan: PlanName;
  description_en: string | null;
  supports_streaming: boolean;
  is_async: boolean;
  params: Record<string, ParamSpec>;
}

export interface PriceQuote {
  model: string;
  token_cost: number;
  min_token_cost: number;
  max_token_cost: number;
}

export type GenerationStatus = 'pending' | 'completed' | 'failed';

export interface Generation {
  id: number | string;
  status: GenerationStatus;
  category: Category;
  model_slug: string;
  result_text: string | null;
  result_url: string | null;
  thumbnail_url: string | null;
  error: string | null;
  tokens_spent: number;
  progress?: number;
  eta_seconds?: number;
  balance_remaining?: number;
}

export interface HistoryItem {
  id: number;
  model_slug: string;
  model_name: string;
  category: Category;
  prompt: string | null;
  status: GenerationStatus;
  result_text: string | null;
  result_url: string | null;
  thumbnail_url: string | null;
  tokens_spent: number;
  is_favorited: boolean;
  user_rating: number | null;
  /** What it was asked with (defaults filled), to run it again; null when the request was kept in storage. */
  params: Record<string, unknown> | null;
  created_at: string;
}

export interface Page<T> {
  items: T[];
  total: number;
  page: number;
  limit: number;
  pages: number;
}

export interface LedgerEntry {
  id: number;
  amount: number;
  reason: string;
  generation_id: number | null;
  balance_after: number;
  created_at: string;
}

export interface ApiKey {
  id: number;
  name: string;
  prefix: string;
  last_four: string;
  created_at: string;
  last_used_at: string | null;
}

export interface CreatedKey {
  id: number;
  name: string;
  key: string;
  created_at: string;
}

export interface SessionInfo {
  id: number;
  created_at: string;
  last_used_at: string | null;
  user_agent: string | null;
  current: boolean;
}

export interface Products {
  token_packs: Array<{ id: string; name: string; tokens: number; price: { amount: number; currency: string } }>;
  plans: Array<{ id: string; plan: PlanName; name: string; token_limit: number; price: { amount: number; currency: string } }>;
}

export interface AssistantInfo {
  id: string;
  name: string;
  description: string;
  model: string;
  category: string;
  installs: number;
  rating: number | null;
  user_rating?: number | null;
  default_params?: Record<string, unknown>;
}

export interface ScheduleInfo {
  id: number;
  name: string;
  cron: string;
  model: string;
  prompt: string;
  is_active: boolean;
  timezone: string;
  next_run_at: string | null;
  last_run_at: string | null;
  last_generation_id: number | null;
  last_error: string | null;
}

export interface WebhookInfo {
  id: number;
  url: string;
  events: string[];
  secret?: string;
  is_active: boolean;
  failing_since: string | null;
  disabled_at: string | null;
  created_at: string;
}

export interface DeliveryInfo {
  id: number;
  event: string;
  generation_id: number | null;
  status: string;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  created_at: string;
  delivered_at: string | null;
}
