/** Webhooks: decisions.md "Other records" (the spec's planned feature, built). */
import Router from '@koa/router';
import { z } from 'zod';
import { WEBHOOK_EVENTS } from '../../shared/webhooks';
import { AppCustom, AppState, callerOf } from '../context';
import { parseBody, parseId, validate } from '../http';
import { requireAuth } from '../middleware/auth';
import { presentDelivery, presentWebhook } from '../presenters/webhook';

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

  return router;
}
