/** Webhooks: decisions.md "Other records" (the spec's planned feature, built). */
import Router from '@koa/router';
import { z } from 'zod';
import { WEBHOOK_EVENTS } from '../../shared/webhooks';
import { AppCustom, AppState, callerOf } from '../context';
import { parseBody, parseId, validate } from '../http';
import { requireAuth } from '../middleware/auth';
import { presentDelivery, presentWebhook } from '../presenters/webhook';
import type { RouteDoc } from '../openapi/registry';
import { pageOf } from '../openapi/schemas/generation';
import { IdParam } from '../openapi/schemas/params';
import { Delivery, Webhook, WebhookList } from '../openapi/schemas/records';

const CreateBody = z.object({
  url: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).max(2048),
  events: z.array(z.enum(WEBHOOK_EVENTS)).min(1, 'needs at least one event').max(10).default([...WEBHOOK_EVENTS]),
});
const PageQuery = z.object({
  page: z.coerce.number().int().min(1).max(100_000).default(1),
  limit: z.coerce.number().int().min(1).max(100).default(20),
});

export function webhookRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>({ prefix: '/api/v2/webhooks' });
  router.use(requireAuth);

  router.post('/', async (ctx) => {
    const body = parseBody(ctx, CreateBody);
    const hook = await ctx.container.webhooks.create(callerOf(ctx).user.id, body.url, body.events);
    ctx.status = 201;
    ctx.body = presentWebhook(hook, true);
  });

  router.get('/', async (ctx) => {
    const hooks = await ctx.container.webhooks.list(callerOf(ctx).user.id);
    ctx.body = { webhooks: hooks.map((h) => presentWebhook(h, false)), total: hooks.length };
  });

  router.delete('/:id', async (ctx) => {
    await ctx.container.webhooks.delete(callerOf(ctx).user.id, parseId(ctx.params.id));
    ctx.status = 204;
  });

  router.get('/:id/deliveries', async (ctx) => {
    const q = validate(PageQuery, ctx.query);
    const page = await ctx.container.webhooks.deliveries(callerOf(ctx).user.id, parseId(ctx.params.id), q.page, q.limit);
    ctx.body = { ...page, items: page.items.map(presentDelivery) };
  });

  router.post('/:id/test', async (ctx) => {
    const delivery = await ctx.container.webhooks.ping(callerOf(ctx).user.id, parseId(ctx.params.id));
    ctx.body = presentDelivery(delivery);
  });

  router.post('/:id/enable', async (ctx) => {
    const hook = await ctx.container.webhooks.enable(callerOf(ctx).user.id, parseId(ctx.params.id));
    ctx.body = presentWebhook(hook, false);
  });

  return router;
}

const tag = 'Webhooks';

export const webhookRouteDocs: RouteDoc[] = [
  { method: 'post', path: '/api/v2/webhooks', tag, auth: 'user', summary: 'Register a URL for generation events (signed with the secret in this answer)', body: CreateBody, bodyExample: { url: 'https://example.com/hooks/gensvc', events: ['generation.completed'] }, responses: { 201: { description: 'The webhook, with its secret', schema: Webhook } }, errors: ['limit_reached'] },
  { method: 'get', path: '/api/v2/webhooks', tag, auth: 'user', summary: "The caller's webhooks", responses: { 200: { description: 'Webhooks', schema: WebhookList } } },
  { method: 'delete', path: '/api/v2/webhooks/:id', tag, auth: 'user', summary: 'Delete a webhook', params: IdParam, responses: { 204: { description: 'Deleted' } } },
  { method: 'get', path: '/api/v2/webhooks/:id/deliveries', tag, auth: 'user', summary: 'The delivery log of a webhook', params: IdParam, query: PageQuery, responses: { 200: { description: 'A page of deliveries', schema: pageOf(Delivery, 'DeliveryPage') } } },
  { method: 'post', path: '/api/v2/webhooks/:id/enable', tag, auth: 'user', summary: 'Turn a disabled webhook back on', description: 'Clears `disabled_at` and the failure streak (`failing_since`); deliveries of new events resume. An active webhook is answered as it is.', params: IdParam, responses: { 200: { description: 'The webhook, active', schema: Webhook } } },
  { method: 'post', path: '/api/v2/webhooks/:id/test', tag, auth: 'user', summary: 'Send a test ping', params: IdParam, responses: { 200: { description: 'The delivery', schema: Delivery } } },
];
