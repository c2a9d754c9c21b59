/** Webhooks: decisions.md "Other records" (the spec's planned feature, built). */
import Router from '@koa/router';
import { z } from 'zod';
import { iso } from '../../shared/accounts/present';
import type { Webhook, WebhookDelivery } from '../../shared/db/entities';
import { WEBHOOK_EVENTS } from '../../shared/webhooks';
import { AppCustom, AppState, callerOf } from '../context';
import { parseBody, parseId, validate } from '../http';
import { requireAuth } from '../middleware/auth';

const CreateBody = z.object({
  url: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).max(2048),
  events: z.array(z.enum(WEBHOOK_EVENTS)).min(1, 'needs at least one event').max(10).default([...WEBHOOK_EVENTS]),
});
const PageQuery = z.object({
  page: z.coerce.number().int().min(1).max(100_000).default(1),
  limit: z.coerce.number().int().min(1).max(100).default(20),
});

function presentWebhook(hook: Webhook, withSecret: boolean) {
  return {
    id: hook.id,
    url: hook.url,
    events: JSON.parse(hook.events) as string[],
    ...(withSecret ? { secret: hook.secret } : {}),
    is_active: hook.disabledAt === null,
    failing_since: iso(hook.failingSince),
    disabled_at: iso(hook.disabledAt),
    created_at: iso(hook.createdAt),
  };
}

function presentDelivery(d: WebhookDelivery) {
  return {
    id: d.id,
    event: d.event,
    generation_id: d.generationId,
    status: d.status,
    attempts: d.attempts,
    last_status_code: d.lastStatusCode,
    last_error: d.lastError,
    next_attempt_at: iso(d.nextAttemptAt),
    created_at: iso(d.createdAt),
    delivered_at: iso(d.deliveredAt),
  };
}

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
