/** The priced model catalog: spec 4.6, 4.9. No authentication needed. */
import Router from '@koa/router';
import { z } from 'zod';
import { CATEGORIES } from '../../shared/catalog/types';
import { PlanNameSchema } from '../../shared/plans';
import { GenerateBody, splitRequestBody } from '../../shared/generation/input';
import { AppCustom, AppState } from '../context';
import { parseBody, validate } from '../http';
import { optionalAuth } from '../middleware/auth';
import { presentModel, presentPrice } from '../presenters/model';
import type { RouteDoc } from '../openapi/registry';
import { SlugParam } from '../openapi/schemas/params';
import { AverageTime, Model, ModelList, Price } from '../openapi/schemas/records';

const ListQuery = z.object({
  category: z.enum(CATEGORIES).optional(),
  min_plan: PlanNameSchema.optional(),
});

export function modelRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>({ prefix: '/api/v2/models' });
  // Open to everyone; a caller who sends credentials is authenticated and gets the limit headers.
  router.use(optionalAuth);

  router.get('/', async (ctx) => {
    const query = validate(ListQuery, ctx.query);
    const models = ctx.container.catalog.list({ category: query.category, availableAt: query.min_plan }).map(presentModel);
    ctx.body = { models, total: models.length };
  });

  router.get('/:slug', async (ctx) => {
    const model = ctx.container.generations.model(ctx.params.slug);
    ctx.body = presentModel(ctx.container.catalog.listing(model));
  });

  router.get('/:slug/avg-time', async (ctx) => {
    const model = ctx.container.generations.model(ctx.params.slug);
    const { avgTimeMs, samples } = await ctx.container.generations.averageTime(model);
    ctx.body = { slug: model.slug, avg_time_ms: avgTimeMs, samples };
  });

  router.post('/:slug/calculate-price', async (ctx) => {
    const body = parseBody(ctx, GenerateBody);
    // A signed-in caller is quoted what /generate would charge them: their default image size applies.
    const quote = ctx.container.generations.price(splitRequestBody({ ...body, model: ctx.params.slug }), { account: ctx.state.caller?.user });
    ctx.body = presentPrice(quote, ctx.container.catalog.listing(quote.model));
  });

  return router;
}

const tag = 'Models';

export const modelRouteDocs: RouteDoc[] = [
  { method: 'get', path: '/api/v2/models', tag, auth: 'optional', summary: 'The offered models with their prices and params', description: '`min_plan=X` lists what plan X may use.', query: ListQuery, responses: { 200: { description: 'The models', schema: ModelList } } },
  { method: 'get', path: '/api/v2/models/:slug', tag, auth: 'optional', summary: 'One model', params: SlugParam, responses: { 200: { description: 'The model', schema: Model } } },
  { method: 'get', path: '/api/v2/models/:slug/avg-time', tag, auth: 'optional', summary: 'Average processing time of its completed generations', params: SlugParam, responses: { 200: { description: 'The average (null before any sample)', schema: AverageTime } } },
  { method: 'post', path: '/api/v2/models/:slug/calculate-price', tag, auth: 'optional', summary: 'The exact price of a request (same params as /generate)', params: SlugParam, body: GenerateBody, bodyExample: { size: '1792x1024', quality: 'hd' }, responses: { 200: { description: 'The price and the params as normalized', schema: Price } } },
];
