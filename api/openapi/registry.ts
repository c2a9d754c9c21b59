/**
 * What each router module says about its routes, for the OpenAPI document (api/openapi/document.ts):
 * the same zod schemas the handlers validate with (path params, query, body), the response
 * schemas of api/openapi/schemas/, who may call it, and the error codes it may answer beyond the
 * ones its kind of route always can (errors.ts adds those). A route module exports a `RouteDoc[]`
 * next to its router; api/app.ts hands them all to the document, and test/openapi.test.ts fails
 * while the documented routes and the routers' table differ.
 */
import type { z } from 'zod';
import type { ErrorCode } from '../../shared/errors';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/**
 * Who may call a route: nobody in particular (`none`); anyone, with credentials checked when sent
 * (`optional`); a signed-in user by access token or API key (`user`); an access token only, never a
 * key (`session`, the routes behind `sessionOnly`); the refresh cookie or body token (`refresh`);
 * an upstream provider's signature (`signature`); the operator's METRICS_TOKEN (`operator`).
 */
export type RouteAuth = 'none' | 'optional' | 'user' | 'session' | 'refresh' | 'signature' | 'operator';

export interface DocumentedResponse {
  description: string;
  /** The JSON body; omitted for an empty answer (204). */
  schema?: z.ZodType;
  /** Other content types the route answers with (server-sent events, audio, text). */
  content?: Record<string, { schema?: z.ZodType; description?: string }>;
  example?: unknown;
}

export interface RouteDoc {
  method: HttpMethod;
  /** The router's path, prefix included, as the route table reads it (`/api/v2/keys/:id`). */
  path: string;
  summary: string;
  description?: string;
  tag: string;
  auth: RouteAuth;
  params?: z.ZodObject;
  query?: z.ZodObject;
  /** Request headers the route reads (Idempotency-Key, anthropic-version, webhook signatures). */
  headers?: z.ZodObject;
  body?: z.ZodType;
  /** A multipart/form-data body: its fields (files as `z.file()`-like string binaries). */
  multipart?: z.ZodObject;
  bodyExample?: unknown;
  /** Successful answers by status. */
  responses: Record<number, DocumentedResponse>;
  /** Codes this route answers beyond the generic ones of its kind (see errors.ts). */
  errors?: ErrorCode[];
}

/** `/api/v2/keys/:id` as OpenAPI writes it: `/api/v2/keys/{id}`. */
export function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

/** The names of a route path's parameters. */
export function pathParams(path: string): string[] {
  return [...path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1] as string);
}
