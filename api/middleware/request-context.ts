/**
 * First in the chain: the request's id and its metrics.
 *
 * - `X-Request-Id`: a sane incoming one (at most 128 of `A-Z a-z 0-9 . _ : -`, as a proxy or a
 *   client sets it) is kept, anything else is replaced by a new UUID; every response carries it,
 *   and errors show it as their id. The request runs under it (observability/context.ts), so
 *   each log line of the request, and of the jobs and webhook deliveries it causes, carries it.
 * - The metrics: one request by method, route template (the router's matched route, never the
 *   raw path: ids would make a series each) and status, and the time until the handler returned.
 *   Unrouted requests count as `unmatched` (404) or `other` (answered outside the routers, such
 *   as the bot's webhook).
 */
import crypto from 'node:crypto';
import type { Next } from 'koa';
import { LogContext, runWithLogContext, saneRequestId } from '../../shared/observability/context';
import type { AppContext } from '../context';

interface LayerLike {
  path: unknown;
  methods: string[];
}

/** The template of the route that answered: the first matched layer registered for the method. */
export function routeTemplate(ctx: AppContext): string {
  const matched = (ctx as unknown as { matched?: LayerLike[] }).matched;
  if (matched) {
    let pathOnly: string | null = null;
    for (const layer of matched) {
      if (layer.methods.length === 0 || typeof layer.path !== 'string') continue;
      if (layer.methods.includes(ctx.method)) return layer.path;
      pathOnly ??= layer.path;
    }
    // The path exists for other methods (a 405).
    if (pathOnly !== null) return pathOnly;
  }
  return ctx.status === 404 ? 'unmatched' : 'other';
}

export function requestContext(): (ctx: AppContext, next: Next) => Promise<void> {
  return async (ctx, next) => {
    const startedAt = performance.now();
    const requestId = saneRequestId(ctx.get('x-request-id') || undefined) ?? crypto.randomUUID();
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    // The same object all along: the generation the request makes is named in it (bindGeneration).
    const context: LogContext = { requestId };
    try {
      await runWithLogContext(context, next);
    } finally {
      const { metrics, log } = ctx.container;
      const route = routeTemplate(ctx);
      const seconds = (performance.now() - startedAt) / 1000;
      metrics.httpRequest(ctx.method, route, ctx.status, seconds);
      // Outside the context (it has ended): its fields are named here.
      if (log.isLevelEnabled('debug')) log.debug({ ...context, method: ctx.method, route, status: ctx.status, ms: Math.round(seconds * 1000) }, 'request done');
    }
  };
}
