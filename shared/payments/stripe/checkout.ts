/**
 * Buying through Stripe Checkout: a Checkout Session for one product of the file, priced from it
 * (`price_data`, so nothing has to be set up in Stripe's dashboard first). A token pack is a
 * one-off payment; a plan is a monthly subscription, renewed by Stripe until it is cancelled.
 * The account and the product travel in `client_reference_id` and our metadata on the session
 * (and, for a plan, on the subscription, whose metadata Stripe copies onto every invoice), so
 * the webhook (webhook.ts) knows what to credit to whom. Nothing is credited here: only Stripe's
 * signed notification of the payment does that.
 */
import type Stripe from 'stripe';
import type { User } from '../../db/entities';
import { AppError } from '../../errors';
import type { Logger } from '../../log';
import type { PlanTable } from '../../plans';
import type { Payments } from '../payments';
import type { Product } from '../products';
import { METADATA_PRODUCT_ID, METADATA_USER_ID, providerFailure } from './client';

export interface CheckoutLink {
  /** Stripe's `cs_…` id. */
  id: string;
  /** Where to send the buyer: Stripe's hosted payment page. */
  url: string;
}

export interface CheckoutUrls {
  success: string;
  cancel: string;
}

export class StripeCheckout {
  constructor(
    private readonly client: Stripe | undefined,
    private readonly payments: Pick<Payments, 'checkPurchase'>,
    private readonly plans: PlanTable,
    private readonly urls: CheckoutUrls,
    private readonly log: Logger,
  ) {}

  /**
   * A Checkout Session for `user` to buy `productId`: 404 for a product the file does not list,
   * 409 `plan_downgrade_not_allowed` for a plan below the one running, 502 when Stripe fails.
   */
  async create(user: User, productId: string): Promise<CheckoutLink> {
    if (!this.client) throw new AppError('feature_disabled', { detail: 'Stripe Checkout is not configured on this server (STRIPE_SECRET_KEY)' });
    const product = this.payments.checkPurchase(user, productId);
    let session: Stripe.Checkout.Session;
    try {
      session = await this.client.checkout.sessions.create(this.paramsFor(user, product));
    } catch (error) {
      throw providerFailure(error, this.log, 'creating a checkout session');
    }
    if (!session.url) throw new AppError('payment_provider_error', { detail: 'The payment provider returned a checkout session without a payment page' });
    return { id: session.id, url: session.url };
  }

  private paramsFor(user: User, product: Product): Stripe.Checkout.SessionCreateParams {
    const metadata = { [METADATA_USER_ID]: String(user.id), [METADATA_PRODUCT_ID]: product.id };
    const common = {
      client_reference_id: String(user.id),
      metadata,
      success_url: this.urls.success,
      cancel_url: this.urls.cancel,
      ...(user.email ? { customer_email: user.email } : {}),
    };
    const { amount, currency } = product.price;
    if (product.kind === 'token_pack') {
      return {
        ...common,
        mode: 'payment',
        line_items: [{ quantity: 1, price_data: { currency, unit_amount: amount, product_data: { name: product.displayName } } }],
        payment_intent_data: { metadata },
      };
    }
    return {
      ...common,
      mode: 'subscription',
      line_items: [
        {
          quantity: 1,
          price_data: { currency, unit_amount: amount, recurring: { interval: 'month' }, product_data: { name: `${this.plans.get(product.plan).displayName} plan` } },
        },
      ],
      // Copied onto the subscription, and from it onto each invoice: how a renewal finds its account.
      subscription_data: { metadata },
    };
  }
}
