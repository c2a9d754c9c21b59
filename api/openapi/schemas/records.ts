/**
 * The catalog (models, prices), assistants, schedules, webhooks, billing and /health as their
 * presenters and routes answer them.
 */
import { z } from 'zod';
import { presentAssistant, presentInstalledAssistant } from '../../presenters/assistant';
import { presentCheckout, presentPlanProduct, presentProducts, presentRedemption, presentStripeReceipt, presentTokenPack } from '../../presenters/billing';
import { presentModel, presentPrice } from '../../presenters/model';
import { presentSchedule } from '../../presenters/schedule';
import { presentDelivery, presentWebhook } from '../../presenters/webhook';
import { Balance, PlanName, Timestamp } from './account';
import { CATEGORIES } from '../../../shared/catalog/types';
import type { DeliveryStatus } from '../../../shared/db/entities/webhook';
import type { EventOutcome } from '../../../shared/payments/stripe/webhook';
import { everyValueOf, PresenterMatches } from './shape';

const JsonObject = z.record(z.string(), z.unknown());

const description = z.string().optional();
export const ParamSpec = z
  .union([
    z.strictObject({ type: z.literal('enum'), values: z.array(z.string()), default: z.string().optional(), description }),
    z.strictObject({ type: z.literal('integer'), min: z.number().optional(), max: z.number().optional(), values: z.array(z.number()).optional(), default: z.number().optional(), nullable: z.boolean().optional(), description }),
    z.strictObject({ type: z.literal('number'), min: z.number().optional(), max: z.number().optional(), default: z.number().optional(), description }),
    z.strictObject({ type: z.literal('string'), max_length: z.number().optional(), min_length: z.number().optional(), default: z.string().optional(), description }),
    z.strictObject({ type: z.literal('boolean'), default: z.boolean().optional(), description }),
    z.strictObject({ type: z.literal('url'), description }),
  ])
  .meta({ id: 'ParamSpec', description: "One of the model's params: what the form for it takes" });

export const Model = z
  .strictObject({
    slug: z.string(),
    name: z.string(),
    category: z.enum(CATEGORIES),
    provider: z.string(),
    token_cost: z.number().int().meta({ description: 'The price with default params' }),
    min_token_cost: z.number().int(),
    max_token_cost: z.number().int(),
    is_free: z.boolean().meta({ description: 'Available on the free (Starter) plan' }),
    min_plan: PlanName,
    description_en: z.string(),
    supports_streaming: z.boolean(),
    config: JsonObject.meta({ description: 'sizes, formats, quality_options, supports_vision, supports_tools, max_context, …' }),
    is_async: z.boolean().meta({ description: 'Answers `pending` first; poll it' }),
    aliases: z.array(z.string()),
    params: z.record(z.string(), ParamSpec),
  })
  .meta({ id: 'Model' });

export const ModelList = z.strictObject({ models: z.array(Model), total: z.number().int() }).meta({ id: 'ModelList' });
export const AverageTime = z.strictObject({ slug: z.string(), avg_time_ms: z.number().int().nullable(), samples: z.number().int() }).meta({ id: 'AverageTime' });
export const Price = z
  .strictObject({ model: z.string(), token_cost: z.number().int(), min_token_cost: z.number().int(), max_token_cost: z.number().int(), params: JsonObject.meta({ description: 'The params as normalized (defaults filled in)' }) })
  .meta({ id: 'Price' });

export const Assistant = z
  .strictObject({ id: z.string(), name: z.string(), description: z.string(), model: z.string(), category: z.string(), installs: z.number().int(), rating: z.number() })
  .meta({ id: 'Assistant' });
export const InstalledAssistant = Assistant.extend({ system_prompt: z.string(), default_params: JsonObject, user_rating: z.number().int().nullable(), installed_at: Timestamp.nullable() }).meta({ id: 'InstalledAssistant' });
export const MarketplacePage = z.strictObject({ assistants: z.array(Assistant), total: z.number().int(), page: z.number().int(), limit: z.number().int() }).meta({ id: 'MarketplacePage' });
export const InstalledAssistants = z.strictObject({ assistants: z.array(InstalledAssistant), total: z.number().int() }).meta({ id: 'InstalledAssistants' });
export const AssistantRating = z.strictObject({ id: z.string(), user_rating: z.number().int(), rating: z.number(), installs: z.number().int() }).meta({ id: 'AssistantRating' });

export const Schedule = z
  .strictObject({
    id: z.number().int(),
    name: z.string(),
    cron: z.string(),
    model: z.string(),
    prompt: z.string(),
    params: JsonObject,
    is_active: z.boolean(),
    timezone: z.string(),
    next_run_at: Timestamp.nullable(),
    last_run_at: Timestamp.nullable(),
    last_generation_id: z.number().int().nullable(),
    last_error: z.string().nullable(),
    created_at: Timestamp.nullable(),
    updated_at: Timestamp.nullable(),
  })
  .meta({ id: 'Schedule' });
export const ScheduleList = z.strictObject({ schedules: z.array(Schedule), total: z.number().int() }).meta({ id: 'ScheduleList' });

export const Webhook = z
  .strictObject({
    id: z.number().int(),
    url: z.string(),
    events: z.array(z.string()),
    secret: z.string().optional().meta({ description: 'Only in the answer that creates it: deliveries are signed with it' }),
    is_active: z.boolean(),
    failing_since: Timestamp.nullable(),
    disabled_at: Timestamp.nullable(),
    created_at: Timestamp.nullable(),
  })
  .meta({ id: 'Webhook' });
export const WebhookList = z.strictObject({ webhooks: z.array(Webhook), total: z.number().int() }).meta({ id: 'WebhookList' });
export const Delivery = z
  .strictObject({
    id: z.number().int(),
    event: z.string(),
    generation_id: z.number().int().nullable(),
    status: z.enum(everyValueOf<DeliveryStatus>()(['pending', 'succeeded', 'failed'])),
    attempts: z.number().int(),
    last_status_code: z.number().int().nullable(),
    last_error: z.string().nullable(),
    next_attempt_at: Timestamp.nullable(),
    created_at: Timestamp.nullable(),
    delivered_at: Timestamp.nullable(),
  })
  .meta({ id: 'WebhookDelivery' });

const Money = z.strictObject({ amount: z.number().int().meta({ description: 'In the currency’s minor units' }), currency: z.string() });
export const TokenPack = z.strictObject({ id: z.string(), name: z.string(), tokens: z.number().int(), price_stars: z.number().int(), price: Money }).meta({ id: 'TokenPack' });
export const PlanProduct = z
  .strictObject({ id: z.string(), plan: PlanName, name: z.string(), token_limit: z.number().int(), period: z.literal('month'), price_stars: z.number().int(), price: Money })
  .meta({ id: 'PlanProduct' });
export const Products = z.strictObject({ token_packs: z.array(TokenPack), plans: z.array(PlanProduct) }).meta({ id: 'Products' });
export const Redemption = z
  .strictObject({ kind: z.enum(['tokens', 'plan']), tokens_added: z.number().int(), plan: z.string().nullable(), plan_until: Timestamp.nullable(), balance: Balance })
  .meta({ id: 'Redemption' });

export const Health = z
  .strictObject({
    status: z.enum(['ok', 'unavailable']),
    db: z.enum(['ok', 'down']),
    queue: z.enum(['ok', 'down', 'embedded']),
    engines: z.record(z.string(), z.boolean()).meta({ description: 'Local engines found (ffmpeg, speech, …)' }),
    missing_tools: z.array(z.string()).meta({ description: 'Local image tools whose engine is missing (their models are not offered)' }),
  })
  .meta({ id: 'Health' });

export const Ready = z
  .strictObject({
    status: z.enum(['ready', 'unavailable', 'starting', 'draining']),
    db: z.enum(['ok', 'down']).optional(),
    queue: z.enum(['ok', 'down', 'embedded']).optional(),
  })
  .meta({ id: 'Ready' });

export const CheckoutLink = z.strictObject({ id: z.string().meta({ description: "Stripe's Checkout Session id" }), url: z.string().meta({ description: 'The payment page to send the person to' }) }).meta({ id: 'CheckoutLink' });
export const StripeReceipt = z
  .strictObject({
    received: z.literal(true),
    outcome: z.enum(everyValueOf<EventOutcome>()(['credited', 'duplicate', 'not_credited', 'awaiting_payment', 'reversed', 'already_reversed', 'partial_refund', 'subscription_ended', 'ignored', 'already_processed'])),
  })
  .meta({ id: 'StripeReceipt' });

const checks: [
  PresenterMatches<ReturnType<typeof presentModel>, typeof Model>,
  PresenterMatches<ReturnType<typeof presentPrice>, typeof Price>,
  PresenterMatches<ReturnType<typeof presentAssistant>, typeof Assistant>,
  PresenterMatches<ReturnType<typeof presentInstalledAssistant>, typeof InstalledAssistant>,
  PresenterMatches<ReturnType<typeof presentSchedule>, typeof Schedule>,
  PresenterMatches<ReturnType<typeof presentDelivery>, typeof Delivery>,
  PresenterMatches<ReturnType<typeof presentTokenPack>, typeof TokenPack>,
  PresenterMatches<ReturnType<typeof presentPlanProduct>, typeof PlanProduct>,
  PresenterMatches<ReturnType<typeof presentProducts>, typeof Products>,
  PresenterMatches<ReturnType<typeof presentRedemption>, typeof Redemption>,
  PresenterMatches<ReturnType<typeof presentCheckout>, typeof CheckoutLink>,
  PresenterMatches<ReturnType<typeof presentStripeReceipt>, typeof StripeReceipt>,
] = [true, true, true, true, true, true, true, true, true, true, true, true];
void checks;
void presentWebhook;
