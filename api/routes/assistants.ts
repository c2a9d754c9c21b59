/** The assistants marketplace and the user's installed assistants: spec 2.7, 4.10; decisions.md. */
import Router from '@koa/router';
import { z } from 'zod';
import type { Assistant, AssistantStats } from '../../shared/assistants';
import { AppCustom, AppState, callerOf } from '../context';
import { parseBody, validate } from '../http';
import { requireAuth } from '../middleware/auth';
import { presentAssistant, presentInstalledAssistant } from '../presenters/assistant';
import type { RouteDoc } from '../openapi/registry';
import { AssistantIdParam } from '../openapi/schemas/params';
import { Assistant as AssistantSchema, AssistantRating, InstalledAssistants, MarketplacePage } from '../openapi/schemas/records';

const MarketplaceQuery = z.object({
  page: z.coerce.number().int().min(1).max(100_000).default(1),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  search: z.string().max(100).optional(),
  category: z.string().max(64).optional(),
});
const RateBody = z.object({ rating: z.number().int('must be an integer').min(1, 'must be 1 to 5').max(5, 'must be 1 to 5') });

export function assistantRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>({ prefix: '/api/v2/assistants' });
  router.use(requireAuth);

  router.get('/marketplace', async (ctx) => {
    const q = validate(MarketplaceQuery, ctx.query);
    const page = await ctx.container.assistants.marketplace(q);
    ctx.body = { assistants: page.items.map((i) => presentAssistant(i.assistant, i.stats)), total: page.total, page: q.page, limit: q.limit };
  });

  router.post('/marketplace/:id/install', async (ctx) => {
    const created = await ctx.container.assistants.install(callerOf(ctx).user.id, ctx.params.id);
    const assistant = ctx.container.assistants.find(ctx.params.id) as Assistant;
    const stats = (await ctx.container.assistants.stats([assistant.id])).get(assistant.id) as AssistantStats;
    ctx.status = created ? 201 : 200;
    ctx.body = presentAssistant(assistant, stats);
  });

  router.get('/', async (ctx) => {
    const { assistants } = ctx.container;
    const installed = await assistants.installed(callerOf(ctx).user.id);
    const stats = await assistants.stats(installed.map((i) => i.assistant.id));
    ctx.body = {
      assistants: installed.map(({ assistant, install }) => presentInstalledAssistant(assistant, stats.get(assistant.id) as AssistantStats, install)),
      total: installed.length,
    };
  });

  router.delete('/:id', async (ctx) => {
    await ctx.container.assistants.uninstall(callerOf(ctx).user.id, ctx.params.id);
    ctx.status = 204;
  });

  router.post('/:id/rate', async (ctx) => {
    const body = parseBody(ctx, RateBody);
    const stats = await ctx.container.assistants.rate(callerOf(ctx).user.id, ctx.params.id, body.rating);
    ctx.body = { id: ctx.params.id, user_rating: body.rating, rating: stats.rating, installs: stats.installs };
  });

  return router;
}

const tag = 'Assistants';

export const assistantRouteDocs: RouteDoc[] = [
  { method: 'get', path: '/api/v2/assistants/marketplace', tag, auth: 'user', summary: 'The marketplace: search and page', query: MarketplaceQuery, responses: { 200: { description: 'A page of assistants', schema: MarketplacePage } } },
  { method: 'post', path: '/api/v2/assistants/marketplace/:id/install', tag, auth: 'user', summary: 'Install an assistant', params: AssistantIdParam, responses: { 201: { description: 'Installed', schema: AssistantSchema }, 200: { description: 'Already installed', schema: AssistantSchema } } },
  { method: 'get', path: '/api/v2/assistants', tag, auth: 'user', summary: "The caller's installed assistants", responses: { 200: { description: 'Installed assistants', schema: InstalledAssistants } } },
  { method: 'delete', path: '/api/v2/assistants/:id', tag, auth: 'user', summary: 'Uninstall an assistant', params: AssistantIdParam, responses: { 204: { description: 'Uninstalled' } } },
  { method: 'post', path: '/api/v2/assistants/:id/rate', tag, auth: 'user', summary: 'Rate an installed assistant 1–5', params: AssistantIdParam, body: RateBody, bodyExample: { rating: 4 }, responses: { 200: { description: 'The rating and the new average', schema: AssistantRating } } },
];
