/** GET /v1/models and /v1/models/{id}: the models the caller's plan may use, in OpenAI's list shape. */
import Router from '@koa/router';
import { AppError } from '../../../shared/errors';
import { AppCustom, AppState, callerOf } from '../../context';
import { requireAuth } from '../../middleware/auth';
import { presentOpenAIModel, presentOpenAIModels } from '../../presenters/openai';

export function v1ModelRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>({ prefix: '/v1/models' });
  router.use(requireAuth);

  router.get('/', async (ctx) => {
    ctx.body = presentOpenAIModels(ctx.container.catalog.list({ availableAt: callerOf(ctx).plan.name }));
  });

  router.get('/:id', async (ctx) => {
    const { catalog } = ctx.container;
    const model = catalog.find(ctx.params.id);
    // A model above the caller's plan is not theirs to use: as unknown as one that does not exist.
    if (!model || !ctx.container.plans.allows(callerOf(ctx).plan.name, model.minPlan)) throw new AppError('not_found', { detail: `Unknown model: ${ctx.params.id}` });
    ctx.body = presentOpenAIModel(catalog.listing(model));
  });

  return router;
}
