import Router from '@koa/router';
import { localEngines, missingLocalTools } from '../../shared/providers/local';
import type { AppCustom, AppState } from '../context';
import type { RouteDoc } from '../openapi/registry';
import { Health } from '../openapi/schemas/records';

/** GET /health: 200 when every store answers, 503 otherwise. */
export function healthRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>();
  router.get('/health', async (ctx) => {
    const { db, redis } = ctx.container;
    const dbStatus = await db.ping().then(
      () => 'ok',
      () => 'down',
    );
    let queueStatus = 'embedded';
    if (redis) {
      queueStatus = await redis.ping().then(
        (pong) => (pong === 'PONG' ? 'ok' : 'down'),
        () => 'down',
      );
    }
    const healthy = dbStatus === 'ok' && queueStatus !== 'down';
    ctx.status = healthy ? 200 : 503;
    const engines = localEngines();
    // Local engines that are missing only hide their models; they do not make the service unhealthy.
    ctx.body = {
      status: healthy ? 'ok' : 'unavailable',
      db: dbStatus,
      queue: queueStatus,
      engines: Object.fromEntries(Object.entries(engines).map(([name, path]) => [name, path !== null])),
      missing_tools: missingLocalTools(),
    };
  });
  return router;
}

export const healthRouteDocs: RouteDoc[] = [
  { method: 'get', path: '/health', tag: 'Service', auth: 'none', summary: 'Whether the stores answer, and which local engines were found', responses: { 200: { description: 'Healthy', schema: Health }, 503: { description: 'A store is down', schema: Health } } },
];
