/**
 * The one error middleware, first in the chain: an AppError becomes its catalogue status and
 * `{detail, code}` body; errors of the HTTP plumbing (body parser, router) map by status; any
 * other error is a bug, logged with an id and answered 500 (or 503 when a store is down).
 */
import crypto from 'node:crypto';
import type { Next } from 'koa';
import { AppError, ErrorCode, errorCatalogue } from '../../shared/errors';
import type { AppContext } from '../context';

const plumbingByStatus: Record<number, ErrorCode> = {
  400: 'malformed_request',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
};

const storeDownCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'PROTOCOL_CONNECTION_LOST',
  'ER_CON_COUNT_ERROR',
  'SQLITE_BUSY',
  'SQLITE_CANTOPEN',
]);

function isStoreDown(error: unknown): boolean {
  const e = error as { code?: string; name?: string; message?: string };
  return (
    (e.code !== undefined && storeDownCodes.has(e.code)) ||
    e.name === 'MaxRetriesPerRequestError' ||
    /Connection is closed|connect ECONNREFUSED/i.test(e.message ?? '')
  );
}

export function toAppError(error: unknown): AppError | null {
  if (error instanceof AppError) return error;
  const status = (error as { status?: number; statusCode?: number }).status ?? (error as { statusCode?: number }).statusCode;
  const expose = (error as { expose?: boolean }).expose;
  if (typeof status === 'number' && expose !== false && plumbingByStatus[status]) return new AppError(plumbingByStatus[status]);
  if (isStoreDown(error)) return new AppError('service_unavailable');
  return null;
}

export async function errorMiddleware(ctx: AppContext, next: Next): Promise<void> {
  ctx.state.requestId = crypto.randomUUID();
  ctx.set('X-Request-Id', ctx.state.requestId);
  try {
    await next();
    if (ctx.body === undefined || ctx.body === null) {
      if (ctx.status === 404) throw new AppError('not_found');
      // The routers' 405 and 501 (a method no route implements) keep their Allow header.
      if (ctx.status === 405 || ctx.status === 501) throw new AppError('method_not_allowed');
    }
  } catch (error) {
    const appError = toAppError(error);
    if (!appError || appError.status >= 500) {
      ctx.app.context.container?.log.error(
        { err: error, requestId: ctx.state.requestId, method: ctx.method, path: ctx.path },
        'request failed',
      );
    }
    const mapped = appError ?? new AppError('internal_error');
    ctx.status = mapped.status;
    for (const [name, value] of Object.entries(mapped.headers)) ctx.set(name, value);
    ctx.body = {
      detail: mapped.detail,
      code: mapped.code,
      ...(mapped.errors ? { errors: mapped.errors } : {}),
      ...mapped.extra,
      ...(mapped.status === 500 ? { error_id: ctx.state.requestId } : {}),
    };
  }
}

export { errorCatalogue };
