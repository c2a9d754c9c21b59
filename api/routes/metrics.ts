import Router from '@koa/router';
import { z } from 'zod';
import { AppError } from '../../shared/errors';
import { bearerMatches } from '../../shared/observability/metrics-auth';
import type { AppCustom, AppState } from '../context';
import type { RouteDoc } from '../openapi/registry';

/**
 * GET /metrics: this process's Prometheus metrics (text exposition), for `Authorization: Bearer
 * <METRICS_TOKEN>` only. Without METRICS_TOKEN the route does not exist (404); a missing or wrong
 * token is 401. In `npm start` (every role in one process) these are all of the process's.
 */
export function metricsRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>();
  router.get('/metrics', async (ctx) => {
    const { config, metrics } = ctx.container;
    const token = config.metrics.token;
    if (token === undefined) throw new AppError('not_found');
    const authorization = ctx.get('authorization');
    if (!bearerMatches(authorization, token)) throw new AppError(authorization ? 'invalid_token' : 'not_authenticated');
    const { contentType, text } = await metrics.exposition();
    ctx.set('Cache-Control', 'no-store');
    ctx.type = contentType;
    ctx.body = text;
  });
  return router;
}

export const metricsRouteDocs: RouteDoc[] = [
  {
    method: 'get',
    path: '/metrics',
    tag: 'Service',
    auth: 'operator',
    summary: "This process's Prometheus metrics (with METRICS_TOKEN; 404 without it)",
    responses: { 200: { description: 'The text exposition', content: { 'text/plain': { schema: z.string() }, 'application/openmetrics-text': { schema: z.string() } } } },
  },
];
