/**
 * Stripe's webhook (`POST /api/v2/providers/stripe/webhook`): a signed event in, at most one
 * effect out. The signature (Stripe-Signature over the raw bytes, STRIPE_WEBHOOK_SECRET, five
 * minutes' tolerance on our clock) is checked first; nothing is read from an event that fails it.
 *
 * - `checkout.session.completed` / `checkout.session.async_payment_succeeded`, paid: a token pack
 *   is credited under the session id, keeping its PaymentIntent for a refund; a plan's first month
 *   is credited under the session's first invoice id, the same key `invoice.paid` of that invoice
 *   uses, so whichever of the two arrives first credits and the other is a duplicate.
 * - `invoice.paid` of a subscription we sold (`subscription_create`, `subscription_cycle`): a
 *   month, credited under the invoice id; a renewal extends the plan the account has running.
 * - `customer.subscription.deleted`: recorded; the plan runs to its expiry, and no invoice comes.
 * - `charge.refunded`, refunded in full: the payment the charge paid for is reversed (a partial
 *   refund is recorded and leaves the purchase standing). The payment is found by the charge's
 *   PaymentIntent: in our record of one-off payments, else by asking Stripe which invoice or
 *   Checkout Session it paid. A refund of a payment not credited yet is refused with a retryable
 *   503 and not recorded, so Stripe delivers it again once the payment is in.
 * - Anything else, or an object our checkout did not make: 200, ignored, nothing written.
 *
 * Each event at most once: the event's row (unique event id) is written in the same transaction
 * as the credit or reversal it makes; a redelivered event finds its row and writes nothing, and
 * one delivered many times at once credits once (the payment's unique key, then the event's).
 */
import Stripe from 'stripe';
import type { Clock } from '../../clock';
import type { Database } from '../../db/database';
import { StripeEvent } from '../../db/entities';
import { isDuplicateKey } from '../../db/errors';
import { AppError, isAppError } from '../../errors';
import type { Logger } from '../../log';
import type { PaymentCredit, Payments, Purchase } from '../payments';
import { providerFailure } from './client';
import { ChargeObject, CheckoutSessionObject, EventEnvelope, InvoiceObject, invoiceMetadata, ourPurchase, parseObject, SubscriptionObject } from './objects';
import { refundTargetOf } from './refund-target';

/** What processing an event did (the webhook's answer, and the event row's `outcome`). */
export type EventOutcome =
  | 'credited'
  | 'duplicate'
  | 'not_credited'
  | 'awaiting_payment'
  | 'reversed'
  | 'already_reversed'
  | 'partial_refund'
  | 'subscription_ended'
  | 'ignored'
  | 'already_processed';

type Effect =
  | { kind: 'credit'; purchase: Purchase; paymentIntent: string | null }
  | { kind: 'reverse'; externalId: string; userId: number | null }
  | { kind: 'record'; outcome: EventOutcome; userId: number | null }
  | { kind: 'ignore' };

/** Invoices that pay a month of a subscription; others (prorations of a change made in the dashboard, manual ones) are not a product of ours. */
const MONTHLY_BILLING_REASONS = new Set(['subscription_create', 'subscription_cycle']);

export class StripeWebhook {
  constructor(
    private readonly secret: string | undefined,
    private readonly client: Stripe | undefined,
    private readonly db: Database,
    private readonly payments: Pick<Payments, 'creditOfPurchase' | 'creditIn' | 'reverseIn'>,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** Verifies and processes one delivery; throws the catalogue's refusals (400 signature, 422 shape, 503 retry). */
  async receive(payload: Buffer, signature: string): Promise<EventOutcome> {
    if (!this.secret) throw new AppError('feature_disabled', { detail: 'The Stripe webhook is not configured on this server (STRIPE_WEBHOOK_SECRET)' });
    const event = parseObject(EventEnvelope, this.verify(payload, signature, this.secret), 'event');
    if (await this.db.repo(StripeEvent).existsBy({ eventId: event.id })) return 'already_processed';
    const object = event.data.object;
    const objectId = typeof object.id === 'string' ? object.id.slice(0, 255) : null;
    const effect = await this.effectOf(event);
    const outcome = await this.apply(event, objectId, effect);
    if (outcome !== 'ignored') this.log.info({ eventId: event.id, type: event.type, objectId, outcome }, 'stripe event processed');
    return outcome;
  }

  private verify(payload: Buffer, signature: string, secret: string): unknown {
    try {
      return Stripe.webhooks.constructEvent(payload, signature, secret, undefined, undefined, this.clock().getTime());
    } catch (error) {
      if (error instanceof Stripe.errors.StripeSignatureVerificationError) {
        const reason = /tolerance/i.test(error.message) ? 'timestamp outside the tolerance' : /No stripe-signature header/i.test(error.message) ? 'missing' : 'no valid signature';
        throw new AppError('invalid_stripe_signature', { detail: `Invalid Stripe-Signature: ${reason}` });
      }
      if (error instanceof SyntaxError) throw new AppError('malformed_request');
      throw AppError.validation('event', error instanceof Error ? error.message : 'not a webhook event');
    }
  }

  private async effectOf(event: EventEnvelope): Promise<Effect> {
    const object = event.data.object;
    switch (event.type) {
      case 'checkout.session.completed':
      case 'checkout.session.async_payment_succeeded': {
        const session = parseObject(CheckoutSessionObject, object, 'data.object');
        const ours = ourPurchase(session.metadata);
        if (!ours) return { kind: 'ignore' };
        if (session.payment_status !== 'paid' && session.payment_status !== 'no_payment_required') return { kind: 'record', outcome: 'awaiting_payment', userId: ours.userId };
        const paid = { amount: session.amount_total ?? 0, currency: session.currency ?? '' };
        if (session.mode === 'payment') return { kind: 'credit', purchase: { provider: 'stripe', externalId: session.id, ...ours, paid }, paymentIntent: session.payment_intent };
        // A subscription's first month is its first invoice: credited under the invoice's id.
        if (session.mode === 'subscription' && session.invoice) return { kind: 'credit', purchase: { provider: 'stripe', externalId: session.invoice, ...ours, paid }, paymentIntent: null };
        return { kind: 'ignore' };
      }
      case 'invoice.paid': {
        const invoice = parseObject(InvoiceObject, object, 'data.object');
        const ours = ourPurchase(invoiceMetadata(invoice));
        if (!ours) return { kind: 'ignore' };
        if (!MONTHLY_BILLING_REASONS.has(invoice.billing_reason ?? '')) {
          this.log.warn({ eventId: event.id, invoice: invoice.id, billingReason: invoice.billing_reason, userId: ours.userId }, 'stripe: a paid invoice is not a month of a plan: not credited (settle it by hand)');
          return { kind: 'record', outcome: 'not_credited', userId: ours.userId };
        }
        const paid = { amount: invoice.amount_paid, currency: invoice.currency };
        return { kind: 'credit', purchase: { provider: 'stripe', externalId: invoice.id, ...ours, paid }, paymentIntent: null };
      }
      case 'customer.subscription.deleted': {
        const subscription = parseObject(SubscriptionObject, object, 'data.object');
        const ours = ourPurchase(subscription.metadata);
        return ours ? { kind: 'record', outcome: 'subscription_ended', userId: ours.userId } : { kind: 'ignore' };
      }
      case 'charge.refunded': {
        const charge = parseObject(ChargeObject, object, 'data.object');
        if (!charge.payment_intent) return { kind: 'ignore' };
        let target;
        try {
          target = await refundTargetOf(charge.payment_intent, this.db, this.client);
        } catch (error) {
          throw providerFailure(error, this.log, 'finding the payment of a refunded charge');
        }
        if (!target) return { kind: 'ignore' };
        // A partial refund is a gesture (a discount after the fact): the purchase stands.
        if (!charge.refunded) return { kind: 'record', outcome: 'partial_refund', userId: target.userId };
        return { kind: 'reverse', externalId: target.externalId, userId: target.userId };
      }
      default:
        return { kind: 'ignore' };
    }
  }

  private async apply(event: EventEnvelope, objectId: string | null, effect: Effect): Promise<EventOutcome> {
    const now = this.clock();
    const row = (outcome: EventOutcome, userId: number | null, paymentExternalId: string | null = null, paymentIntent: string | null = null) => ({
      eventId: event.id,
      type: event.type,
      objectId,
      userId,
      outcome,
      paymentExternalId,
      paymentIntent,
      createdAt: now,
    });
    switch (effect.kind) {
      case 'ignore':
        return 'ignored';
      case 'record':
        return this.record(row(effect.outcome, effect.userId));
      case 'credit': {
        const { purchase, paymentIntent } = effect;
        try {
          const credit: PaymentCredit = this.payments.creditOfPurchase(purchase);
          await this.db.transaction(async (em) => {
            await this.payments.creditIn(em, credit, now);
            await em.getRepository(StripeEvent).insert(row('credited', purchase.userId, purchase.externalId, paymentIntent));
          });
          return 'credited';
        } catch (error) {
          if (isAppError(error) && error.code === 'not_found') {
            this.log.warn({ eventId: event.id, userId: purchase.userId, productId: purchase.productId, externalId: purchase.externalId, err: error.detail }, 'stripe: a payment could not be credited: refund it by hand');
            return this.record(row('not_credited', purchase.userId, purchase.externalId, paymentIntent));
          }
          if (!isDuplicateKey(error)) throw error;
          // Credited already: by another event of the same payment, or by this event delivered at the same time.
          return this.record(row('duplicate', purchase.userId, purchase.externalId, paymentIntent));
        }
      }
      case 'reverse': {
        try {
          const status = await this.db.transaction(async (em) => {
            const reversal = await this.payments.reverseIn(em, { provider: 'stripe', externalId: effect.externalId, refundReference: event.id }, now);
            if (reversal.status !== 'not_found') await em.getRepository(StripeEvent).insert(row(reversal.status, effect.userId, effect.externalId));
            return reversal.status;
          });
          if (status === 'not_found') throw new AppError('payment_not_yet_credited');
          return status;
        } catch (error) {
          if (!isDuplicateKey(error)) throw error;
          return 'already_processed';
        }
      }
    }
  }

  /** The event's row alone; `already_processed` when it is there already (the same event at the same time). */
  private async record(values: Omit<StripeEvent, 'id'>): Promise<EventOutcome> {
    try {
      await this.db.transaction((em) => em.getRepository(StripeEvent).insert(values));
      return values.outcome as EventOutcome;
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      return 'already_processed';
    }
  }
}
