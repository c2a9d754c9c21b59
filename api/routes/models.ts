/** The priced model catalog: spec 4.6, 4.9. No authentication needed. */
import Router from '@koa/router';
import { z } from 'zod';
import { CATEGORIES } from '../../shared/catalog/types';
import { PlanNameSchema } from '../../shared/plans';
import { splitRequestBody } from '../../shared/generation/input';
import { AppCustom, AppState } from '../context';
import { parseBody, validate } from '../http';
import { presentModel } from '../presenters/model';

const ListQuery = z.object({
  category: z.enum(CATEGORIES).optional(),
  min_plan: PlanNameSchema.optional(),
});

export function modelRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>({ prefix: '/api/v2/models' });

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
    const { generations, catalog } = ctx.container;
    const model = generations.model(ctx.params.slug);
    const body = parseBody(ctx, z.record(z.string(), z.unknown()));
    const request = splitRequestBody({ ...body, model: model.slug });
    const params = generations.quoteParams(model, request);
    const listing = catalog.listing(model);
    ctx.body = {
      model: model.slug,
      token_cost: params.price,
      min_token_cost: listing.minTokenCost,
      max_token_cost: listing.maxTokenCost,
      params: params.params,
    };
  });

  return router;
}
