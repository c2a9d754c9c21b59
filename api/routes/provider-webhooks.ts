/**
 * Webhooks from upstream providers: Replicate posts the finished prediction to
 * `POST /api/v2/providers/replicate/webhook`, signed by the Standard Webhooks scheme. A valid one
 * wakes the job polling that prediction (in this process or, over Redis, in a worker); it never
 * finishes a job itself, so the signature check guards only against needless polls.
 *
 * Stripe posts payment events to `POST /api/v2/providers/stripe/webhook`, signed in its
 * Stripe-Signature header over the bytes as sent; shared/payments/stripe/webhook.ts verifies and
 * processes them (2xx: done, or nothing to do; 400 bad signature; 503 a refund to retry later).
 */
import Router from '@koa/router';
import { z } from 'zod';
import { isRecord } from '../../shared/providers/upstream-http';
import { verifyWebhook } from '../../shared/providers/replicate/webhook';
import { AppError } from '../../shared/errors';
import type { AppContext, AppCustom, AppState } from '../context';
import type { RouteDoc } from '../openapi/registry';
import { StripeReceipt } from '../openapi/schemas/records';
import { presentStripeReceipt } from '../presenters/billing';

const MAX_BODY_BYTES = 1024 * 1024;

/** Paths the JSON body parser leaves alone (api/app.ts): these routes read their bytes. */
export const PROVIDER_WEBHOOKS_PREFIX = '/api/v2/providers/';

/** The body as sent: the signature covers these bytes, not the parsed JSON. */
async function rawBody(ctx: AppContext): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new AppError('payload_too_large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

export function providerWebhookRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>();
  router.post(`${PROVIDER_WEBHOOKS_PREFIX}replicate/webhook`, async (ctx) => {
    const { config, predictionSignals, log } = ctx.container;
    if (!config.replicateWebhook) throw new AppError('feature_disabled', { detail: 'Replicate webhooks are not configured on this server (REPLICATE_WEBHOOK_SECRET)' });
    const body = (await rawBody(ctx)).toString('utf8');
    const verdict = verifyWebhook(config.replicateWebhook.secret, { id: ctx.get('webhook-id') || undefined, timestamp: ctx.get('webhook-timestamp') || undefined, signature: ctx.get('webhook-signature') || undefined }, body);
    if (!verdict.ok) {
      log.warn({ reason: verdict.reason }, 'replicate webhook refused');
      throw new AppError('invalid_webhook_signature', { detail: `Invalid webhook signature: ${verdict.reason}` });
    }
    let prediction: unknown;
    try {
      prediction = JSON.parse(body);
    } catch {
      throw new AppError('malformed_request');
    }
    if (!isRecord(prediction) || typeof prediction.id !== 'string' || prediction.id === '') throw AppError.validation('id', 'must be the prediction id');
    await predictionSignals.notify(prediction.id);
    ctx.status = 204;
  });
  router.post(`${PROVIDER_WEBHOOKS_PREFIX}stripe/webhook`, async (ctx) => {
    const outcome = await ctx.container.stripeWebhook.receive(await rawBody(ctx), ctx.get('stripe-signature'));
    ctx.body = presentStripeReceipt(outcome);
  });
  return router;
}

const SignatureHeaders = z.object({
  'webhook-id': z.string().meta({ description: 'Standard Webhooks message id' }),
  'webhook-timestamp': z.string().meta({ description: 'Unix seconds; more than 5 minutes off is refused' }),
  'webhook-signature': z.string().meta({ description: '`v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{raw body}">`, keyed with REPLICATE_WEBHOOK_SECRET' }),
});
const Prediction = z.looseObject({ id: z.string().min(1), status: z.string().optional() }).meta({ description: "Replicate's prediction, as it posts it" });

export const providerWebhookRouteDocs: RouteDoc[] = [
  {
    method: 'post',
    path: `${PROVIDER_WEBHOOKS_PREFIX}replicate/webhook`,
    tag: 'Service',
    auth: 'signature',
    summary: "Replicate's webhook: a finished prediction (signed)",
    description: 'Posted by Replicate when REPLICATE_WEBHOOK_SECRET is set; wakes the job that polls the prediction.',
    headers: SignatureHeaders,
    body: Prediction,
    responses: { 204: { description: 'Accepted' } },
    errors: ['invalid_webhook_signature'],
  },
  {
    method: 'post',
    path: `${PROVIDER_WEBHOOKS_PREFIX}stripe/webhook`,
    tag: 'Service',
    auth: 'signature',
    summary: "Stripe's webhook: payment events (signed)",
    description: 'Checkout completions credit a payment once; refunds and disputes reverse it. A refund notified before its payment is 503, which Stripe retries.',
    headers: z.object({ 'Stripe-Signature': z.string().meta({ description: '`t=<unix seconds>,v1=<hex HMAC-SHA256 of "{t}.{raw body}">`, keyed with STRIPE_WEBHOOK_SECRET' }) }),
    body: z.looseObject({ id: z.string(), type: z.string() }).meta({ description: "Stripe's event, as it posts it" }),
    responses: { 200: { description: 'Processed (or nothing to do)', schema: StripeReceipt } },
    errors: ['invalid_stripe_signature', 'payment_not_yet_credited'],
  },
];
