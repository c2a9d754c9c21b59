/**
 * The route table of the real app, read from the routers it mounts: api/app.ts mounts each
 * router's `routes()` middleware, and @koa/router marks that middleware with its router
 * (`dispatch.router`), whose `stack` holds one Layer per route (methods, full path, param names).
 * Nothing here is written by hand, so a route added to any router shows up in the table.
 */
import { createApp } from '../../api/app';
import type { Container } from '../../shared/container';

export interface RouteEntry {
  /** The method as registered (GET routes also answer HEAD; HEAD is not listed separately). */
  method: string;
  /** The full path pattern, prefix included, e.g. `/api/v2/generate/:id`. */
  path: string;
  params: string[];
  /** `METHOD path`, the key the fuzz drivers and the IDOR sweep are indexed by. */
  key: string;
}

interface LayerLike {
  methods: string[];
  path: string | RegExp;
  paramNames: Array<{ name: string | number }>;
}

function isLayerStack(value: unknown): value is LayerLike[] {
  return Array.isArray(value) && value.every((l) => typeof l === 'object' && l !== null && Array.isArray((l as LayerLike).methods));
}

function routerStackOf(middleware: unknown): LayerLike[] | null {
  const router = (middleware as { router?: { stack?: unknown } }).router;
  return router && isLayerStack(router.stack) ? router.stack : null;
}

/** Every (method, path) the app's routers answer, in mounting order. */
export function routesOf(app: { middleware: readonly unknown[] }): RouteEntry[] {
  const routes: RouteEntry[] = [];
  for (const middleware of app.middleware) {
    const stack = routerStackOf(middleware);
    if (!stack) continue;
    for (const layer of stack) {
      // Layers without methods are `router.use(...)` middleware (requireAuth), not routes.
      if (layer.methods.length === 0) continue;
      if (typeof layer.path !== 'string') throw new Error(`a route with a RegExp path cannot be driven: ${String(layer.path)}`);
      for (const method of layer.methods) {
        if (method === 'HEAD' && layer.methods.includes('GET')) continue;
        routes.push({ method, path: layer.path, params: layer.paramNames.map((p) => String(p.name)), key: `${method} ${layer.path}` });
      }
    }
  }
  return routes;
}

/** The table of the app as the entry points build it, on this container. */
export function routeTable(container: Container): RouteEntry[] {
  return routesOf(createApp(container));
}
