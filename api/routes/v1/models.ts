/**
 * GET /v1/models and /v1/models/{id}: the models the caller's plan may use, in OpenAI's list
 * shape, or in Anthropic's for a client that sends `anthropic-version` (anthropic-models.ts).
 */
import Router from '@koa/router';
import { AppError } from '../../../shared/errors';
import { AppCustom, AppState, callerOf } from '../../context';
import { requireAuth } from '../../middleware/auth';
import { presentAnthropicModel } from '../../presenters/anthropic';
import { presentOpenAIModel, presentOpenAIModels } from '../../presenters/openai';
import { AnthropicPageQuery, anthropicModelPage, anthropicModels, fromAnthropicClient } from './anthropic-models';
import { z } from 'zod';
import type { RouteDoc } from '../../openapi/registry';
import { AnthropicModel, AnthropicModelPage, OpenAIModel, OpenAIModelList } from '../../openapi/schemas/v1';
import { AnthropicHeaders } from '../../openapi/schemas/v1-requests';

export function v1ModelRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>({ prefix: '/v1/models' });
  router.use(requireAuth);

  router.get('/', async (ctx) => {
    const listings = ctx.container.catalog.list({ availableAt: callerOf(ctx).plan.name });
    ctx.body = fromAnthropicClient(ctx) ? anthropicModelPage(ctx, listings) : presentOpenAIModels(listings);
  });

  router.get('/:id', async (ctx) => {
    const { catalog } = ctx.container;
    const model = catalog.find(ctx.params.id);
    // A model above the caller's plan is not theirs to use: as unknown as one that does not exist.
    if (!model || !ctx.container.plans.allows(callerOf(ctx).plan.name, model.minPlan)) throw new AppError('not_found', { detail: `Unknown model: ${ctx.params.id}` });
    if (!fromAnthropicClient(ctx)) {
      ctx.body = presentOpenAIModel(catalog.listing(model));
      return;
    }
    // As the list: an Anthropic client sees the text models only.
    const [listing] = anthropicModels([catalog.listing(model)]);
    if (!listing) throw new AppError('not_found', { detail: `Unknown model: ${ctx.params.id}` });
    ctx.body = presentAnthropicModel(listing);
  });

  return router;
}

const tag = 'OpenAI- and Anthropic-compatible (/v1)';

export const v1ModelRouteDocs: RouteDoc[] = [
  { method: 'get', path: '/v1/models', tag, auth: 'user', summary: "The models the caller's plan may use", description: "OpenAI's list; with `anthropic-version`, Anthropic's page of the text models (`limit`, `after_id`, `before_id`).", headers: AnthropicHeaders, query: AnthropicPageQuery.partial(), responses: { 200: { description: 'The models', schema: z.union([OpenAIModelList, AnthropicModelPage]) } } },
  { method: 'get', path: '/v1/models/:id', tag, auth: 'user', summary: 'One model', headers: AnthropicHeaders, params: z.object({ id: z.string().meta({ example: 'demo-text' }) }), responses: { 200: { description: 'The model', schema: z.union([OpenAIModel, AnthropicModel]) } } },
];
