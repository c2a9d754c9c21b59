/**
 * GET /api/v2/openapi.json: the OpenAPI 3.1 document of every route, generated from the route
 * modules' RouteDocs (api/openapi/). Built once per app, on first request.
 */
import Router from '@koa/router';
import { z } from 'zod';
import type { AppCustom, AppState } from '../context';
import { buildOpenApiDocument, OpenApiDocument } from '../openapi/document';
import { OPENAPI_DOC_PATH } from '../openapi/paths';
import type { RouteDoc } from '../openapi/registry';

/** The contract's version (the `/api/v2` of the paths), as the document's `info.version`. */
export const API_VERSION = '2.0.0';
export const OPENAPI_PATH = OPENAPI_DOC_PATH;

export function openApiRoutes(docs: RouteDoc[]): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>();
  let document: OpenApiDocument | null = null;
  router.get(OPENAPI_PATH, async (ctx) => {
    document ??= buildOpenApiDocument(docs, { version: API_VERSION, serverUrl: ctx.container.config.publicBaseUrl });
    // Small, and it changes with a deploy: revalidated, never served stale.
    ctx.set('Cache-Control', 'no-cache');
    ctx.body = document;
  });
  return router;
}

export const openApiRouteDocs: RouteDoc[] = [
  {
    method: 'get',
    path: OPENAPI_PATH,
    tag: 'Service',
    auth: 'none',
    summary: 'This document (OpenAPI 3.1), generated from the zod schemas the routes validate with',
    responses: { 200: { description: 'The document', schema: z.looseObject({ openapi: z.string(), info: z.looseObject({ title: z.string(), version: z.string() }), paths: z.record(z.string(), z.unknown()) }) } },
  },
];
