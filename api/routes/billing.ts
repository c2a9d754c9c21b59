/**
 * Buying and redeeming: what is for sale (open to everyone, like the model catalog), a Stripe
 * Checkout Session for a product, and redeeming a code. Buying and redeeming need a session: an
 * API key may use the account, not spend money or codes on it (decisions.md "API keys").
 */
import Router from '@koa/router';
import { z } from 'zod';
import { presentCheckout, presentProducts, presentRedemption } from '../presenters/billing';
import { AppCustom, AppState, callerOf } from '../context';
import { parseBody } from '../http';
import { optionalAuth, requireAuth, sessionOnly } from '../middleware/auth';
import type { RouteDoc } from '../openapi/registry';
import { CheckoutLink, Products, Redemption } from '../openapi/schemas/records';

/** Long enough for a code with any separators people add; the domain decides whether it is one. */
const RedeemBody = z.object({ code: z.string().trim().min(1, 'must not be empty').max(64, 'must be at most 64 characters') });
/** A product id of the file; the domain answers 404 for one it does not list. */
const CheckoutBody = z.object({ product: z.string().min(1, 'must not be empty').max(64, 'must be at most 64 characters') });

export function billingRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>({ prefix: '/api/v2/billing' });

  // Prices are public (a pricing page shows them before sign-up); credentials, when sent, are checked.
  router.get('/products', optionalAuth, async (ctx) => {
    ctx.body = presentProducts(ctx.container.products, ctx.container.plans);
  });

  router.post('/checkout', requireAuth, sessionOnly, async (ctx) => {
    const body = parseBody(ctx, CheckoutBody);
    ctx.body = presentCheckout(await ctx.container.stripeCheckout.create(callerOf(ctx).user, body.product));
  });

  router.post('/redeem', requireAuth, sessionOnly, async (ctx) => {
    const body = parseBody(ctx, RedeemBody);
    const { users, plans, redemptionCodes } = ctx.container;
    const { payment, user } = await redemptionCodes.redeem(callerOf(ctx).user.id, body.code);
    ctx.body = presentRedemption(payment, user, plans, users.effectivePlan(user));
  });

  return router;
}

const tag = 'Billing';

export const billingRouteDocs: RouteDoc[] = [
  { method: 'get', path: '/api/v2/billing/products', tag, auth: 'optional', summary: 'What is for sale: token packs and plan months with their prices', responses: { 200: { description: 'The products', schema: Products } } },
  { method: 'post', path: '/api/v2/billing/checkout', tag, auth: 'session', summary: 'A Stripe Checkout page for a product', description: 'Credited once Stripe tells the webhook the payment succeeded.', body: CheckoutBody, bodyExample: { product: 'tokens-500' }, responses: { 200: { description: 'Where to pay', schema: CheckoutLink } }, errors: ['not_found', 'plan_downgrade_not_allowed', 'feature_disabled', 'payment_provider_error'] },
  { method: 'post', path: '/api/v2/billing/redeem', tag, auth: 'session', summary: 'Redeem a code (tokens or plan time)', description: 'Wrong, expired and spent codes count against an hourly limit (then 429).', body: RedeemBody, bodyExample: { code: 'GIFT-2026-ABCD' }, responses: { 200: { description: 'What the code gave, and the balance after', schema: Redemption } }, errors: ['redemption_code_invalid', 'redemption_code_expired', 'redemption_code_spent', 'redemption_code_already_redeemed', 'plan_downgrade_not_allowed', 'rate_limited'] },
];
