import Router from '@koa/router';
import type { Container } from '../../shared/container';
import { localEngines, missingLocalTools } from '../../shared/providers/local';
import type { AppCustom, AppState } from '../context';
import type { RouteDoc } from '../openapi/registry';
import { Health, Ready } from '../openapi/schemas/records';

/** Whether each store answers a ping: the database, and Redis when configured ('embedded' without). */
async function storeStatus({ db, redis }: Container): Promise<{ db: 'ok' | 'down'; queue: 'ok' | 'down' | 'embedded'; up: boolean }> {
  const [dbStatus, queueStatus] = await Promise.all([
    db.ping().then(
      () => 'ok' as const,
      () => 'down' as const,
    ),
    redis
      ? redis.ping().then(
          (pong) => (pong === 'PONG' ? ('ok' as const) : ('down' as const)),
          () => 'down' as const,
        )
      : Promise.resolve('embedded' as const),
  ]);
  return { db: dbStatus, queue: queueStatus, up: dbStatus === 'ok' && queueStatus !== 'down' };
}

/**
 * GET /health (the spec's): 200 when every store answers, 503 otherwise; a ping each, nothing
 * else. GET /ready: whether this process should be sent requests: 503 while it starts, from
 * SIGTERM on while it drains (even with every store up), and while a store does not answer.
 */
export function healthRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>();
  router.get('/health', async (ctx) => {
    const stores = await storeStatus(ctx.container);
    ctx.status = stores.up ? 200 : 503;
    const engines = localEngines();
    // Local engines that are missing only hide their models; they do not make the service unhealthy.
    ctx.body = {
      status: stores.up ? 'ok' : 'unavailable',
      db: stores.db,
      queue: stores.queue,
      engines: Object.fromEntries(Object.entries(engines).map(([name, path]) => [name, path !== null])),
      missing_tools: missingLocalTools(),
    };
  });
  router.get('/ready', async (ctx) => {
    const state = ctx.container.readiness.state;
    if (state !== 'ready') {
      ctx.status = 503;
      ctx.body = { status: state };
      return;
    }
    const stores = await storeStatus(ctx.container);
    ctx.status = stores.up ? 200 : 503;
    ctx.body = { status: stores.up ? 'ready' : 'unavailable', db: stores.db, queue: stores.queue };
  });
  return router;
}

export const healthRouteDocs: RouteDoc[] = [
  {
    method: 'get',
    path: '/ready',
    tag: 'Service',
    auth: 'none',
    summary: 'Whether this process should be sent requests (for a load balancer)',
    description: '503 while it starts, from SIGTERM on while it drains, and while a store does not answer.',
    responses: { 200: { description: 'Ready', schema: Ready }, 503: { description: 'Starting, draining, or a store is down', schema: Ready } },
  },
  { method: 'get', path: '/health', tag: 'Service', auth: 'none', summary: 'Whether the stores answer, and which local engines were found', responses: { 200: { description: 'Healthy', schema: Health }, 503: { description: 'A store is down', schema: Health } } },
];
