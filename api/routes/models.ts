/** The priced model catalog: spec 4.6, 4.9. No authentication needed. */
import Router from '@koa/router';
import { z } from 'zod';
import { CATEGORIES } from '../../shared/catalog/types';
import { PlanNameSchema } from '../../shared/plans';
import { splitRequestBody } from '../../shared/generation/input';
import { AppCustom, AppState } from '../context';
import { parseBody, validate } from '../http';
import { optionalAuth } from '../middleware/auth';
import { presentModel, presentPrice } from '../presenters/model';

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
    const body = parseBody(ctx, z.record(z.string(), z.unknown()));
    const quote = ctx.container.generations.price(splitRequestBody({ ...body, model: ctx.params.slug }));
    ctx.body = presentPrice(quote, ctx.container.catalog.listing(quote.model));
  });

  return router;
}
