/**
 * What is for sale (GET /billing/products) and what a redemption gave (POST /billing/redeem).
 * Prices are an amount in the currency's minor units with its ISO 4217 code (Stripe's form), and
 * whole Telegram Stars.
 */
import type { Payment, User } from '../../shared/db/entities';
import type { PlanName, PlanTable } from '../../shared/plans';
import type { PlanProduct, ProductTable, TokenPack } from '../../shared/payments/products';
import type { CheckoutLink } from '../../shared/payments/stripe/checkout';
import type { EventOutcome } from '../../shared/payments/stripe/webhook';
import { presentBalance } from './account';
import { iso } from './dates';

export function presentTokenPack(pack: TokenPack) {
  return { id: pack.id, name: pack.displayName, tokens: pack.tokens, price_stars: pack.priceStars, price: { amount: pack.price.amount, currency: pack.price.currency } };
}

export function presentPlanProduct(product: PlanProduct, plans: PlanTable) {
  const plan = plans.get(product.plan);
  return {
    id: product.id,
    plan: plan.name,
    name: plan.displayName,
    token_limit: plan.tokenLimit,
    period: 'month' as const,
    price_stars: product.priceStars,
    price: { amount: product.price.amount, currency: product.price.currency },
  };
}

export function presentProducts(products: ProductTable, plans: PlanTable) {
  return {
    token_packs: products.tokenPacks().map(presentTokenPack),
    plans: products.plans().map((p) => presentPlanProduct(p, plans)),
  };
}

/** A redemption: what the code gave, and the balance after it (as GET /user/balance shows it). */
export function presentRedemption(payment: Payment, user: User, plans: PlanTable, effectivePlan: PlanName) {
  return {
    kind: payment.kind,
    tokens_added: payment.tokens,
    plan: payment.plan,
    plan_until: iso(payment.planUntil),
    balance: presentBalance(user, plans.get(effectivePlan)),
  };
}

/** A Stripe Checkout Session: its id, and the payment page to send the buyer to. */
export function presentCheckout(link: CheckoutLink) {
  return { id: link.id, url: link.url };
}

/** Stripe reads only the status; the outcome is for whoever looks at the delivery in its dashboard. */
export function presentStripeReceipt(outcome: EventOutcome) {
  return { received: true, outcome };
}
