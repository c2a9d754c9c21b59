/** API keys: spec 4.12, decisions.md "API keys". Managed with a session only, never with a key. */
import Router from '@koa/router';
import { z } from 'zod';
import { presentApiKey } from '../presenters/account';
import { iso } from '../presenters/dates';
import { AppError } from '../../shared/errors';
import { AppCustom, AppState, callerOf } from '../context';
import { parseBody, parseId } from '../http';
import { requireAuth, sessionOnly } from '../middleware/auth';
import type { RouteDoc } from '../openapi/registry';
import { ApiKeyCreated, ApiKeyItem } from '../openapi/schemas/account';
import { IdParam } from '../openapi/schemas/params';

const CreateKeyBody = z.object({ name: z.string().trim().min(1, 'must not be empty').max(100) });

export function keyRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>({ prefix: '/api/v2/keys' });
  router.use(requireAuth, sessionOnly);

  router.post('/', async (ctx) => {
    const caller = callerOf(ctx);
    if (!caller.plan.apiAccess) throw new AppError('insufficient_plan');
    const body = parseBody(ctx, CreateKeyBody);
    const { key, secret } = await ctx.container.apiKeys.create(caller.user.id, body.name);
    ctx.status = 201;
    ctx.body = { id: key.id, name: key.name, key: secret, created_at: iso(key.createdAt) };
  });

  router.get('/', async (ctx) => {
    const keys = await ctx.container.apiKeys.list(callerOf(ctx).user.id);
    ctx.body = {
      keys: keys.map(presentApiKey),
      total: keys.length,
    };
  });

  router.delete('/:id', async (ctx) => {
    await ctx.container.apiKeys.delete(callerOf(ctx).user.id, parseId(ctx.params.id));
    ctx.status = 204;
  });

  return router;
}

const tag = 'API keys';

export const keyRouteDocs: RouteDoc[] = [
  { method: 'post', path: '/api/v2/keys', tag, auth: 'session', summary: 'Make an API key (vip and elite plans; at most 20)', description: 'The secret is in this answer only.', body: CreateKeyBody, bodyExample: { name: 'server' }, responses: { 201: { description: 'The key, with its secret', schema: ApiKeyCreated } }, errors: ['limit_reached'] },
  { method: 'get', path: '/api/v2/keys', tag, auth: 'session', summary: "The caller's keys (never their secrets)", responses: { 200: { description: 'The keys', schema: z.strictObject({ keys: z.array(ApiKeyItem), total: z.number().int() }) } } },
  { method: 'delete', path: '/api/v2/keys/:id', tag, auth: 'session', summary: 'Revoke a key', params: IdParam, responses: { 204: { description: 'Revoked' } } },
];
