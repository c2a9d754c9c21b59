/**
 * The official Stripe client as this service uses it, and what its failures become. The client
 * talks to https://api.stripe.com unless STRIPE_API_BASE points it elsewhere (a local fake in the
 * tests, a proxy): the constructor's host, port and protocol options, nothing patched.
 */
import Stripe from 'stripe';
import { AppError } from '../../errors';
import type { Logger } from '../../log';

type StripeOptions = NonNullable<ConstructorParameters<typeof Stripe>[1]>;

/** Our keys in the metadata of sessions, subscriptions and (through them) invoices: namespaced, since a Stripe account may serve other integrations too. */
export const METADATA_USER_ID = 'gensvc_user_id';
export const METADATA_PRODUCT_ID = 'gensvc_product_id';

export function createStripeClient(secretKey: string, apiBase: string | undefined): Stripe {
  // One retry (the client adds an idempotency key to retried POSTs); a checkout waits at most 30 s.
  const options: StripeOptions = { maxNetworkRetries: 1, timeout: 30_000, telemetry: false };
  if (apiBase) {
    const url = new URL(apiBase);
    const protocol = url.protocol === 'http:' ? 'http' : 'https';
    Object.assign(options, { protocol, host: url.hostname, port: url.port || (protocol === 'http' ? 80 : 443) });
  }
  return new Stripe(secretKey, options);
}

export function isStripeError(error: unknown): error is InstanceType<typeof Stripe.errors.StripeError> {
  return error instanceof Stripe.errors.StripeError;
}

/**
 * A failed call to Stripe's API as the catalogue's 502: nothing the caller sent can fix it (the
 * request is built from the product file and the config), so the detail stays generic and the
 * operator finds Stripe's own message, type and request id in the log. Anything that is not a
 * Stripe error is a bug and goes on as it is.
 */
export function providerFailure(error: unknown, log: Logger, what: string): unknown {
  if (!isStripeError(error)) return error;
  log.warn({ type: error.type, code: error.code, status: error.statusCode, requestId: error.requestId, err: error.message }, `stripe: ${what} failed`);
  const unreachable = error.type === 'StripeConnectionError';
  return new AppError('payment_provider_error', unreachable ? { detail: 'The payment provider could not be reached; try again later' } : {});
}
