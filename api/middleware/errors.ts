/**
 * The one error middleware, first in the chain: an AppError becomes its catalogue status and
 * body (`{detail, code}`, or the OpenAI or Anthropic shape on /v1: presenters/errors.ts); errors of the HTTP plumbing (body parser, router) map by status; a store
 * that is down is 503; any other error is a bug, answered 500 with an id. How each kind is logged
 * (refusals quietly, outages throttled, bugs with their stack): request-failure-log.ts.
 */
import crypto from 'node:crypto';
import type { Next } from 'koa';
import { AppError, ErrorCode, errorCatalogue } from '../../shared/errors';
import type { Logger } from '../../shared/log';
import type { AppContext } from '../context';
import { errorDialectOf, presentError } from '../presenters/errors';
import { RequestFailureLog } from './request-failure-log';

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

/** What went wrong, and what the client is answered. */
export type Failure =
  | { kind: 'refusal'; answer: AppError }
  | { kind: 'store_down'; answer: AppError }
  | { kind: 'bug'; answer: AppError };

export function classifyFailure(error: unknown): Failure {
  if (error instanceof AppError) return { kind: 'refusal', answer: error };
  const status = (error as { status?: number; statusCode?: number }).status ?? (error as { statusCode?: number }).statusCode;
  const expose = (error as { expose?: boolean }).expose;
  const plumbing = typeof status === 'number' && expose !== false ? plumbingByStatus[status] : undefined;
  if (plumbing) return { kind: 'refusal', answer: new AppError(plumbing) };
  if (isStoreDown(error)) return { kind: 'store_down', answer: new AppError('service_unavailable') };
  return { kind: 'bug', answer: new AppError('internal_error') };
}

/** The AppError a failure is answered with; null for a bug. */
export function toAppError(error: unknown): AppError | null {
  const failure = classifyFailure(error);
  return failure.kind === 'bug' ? null : failure.answer;
}

export function errorMiddleware(log: Logger): (ctx: AppContext, next: Next) => Promise<void> {
  const failures = new RequestFailureLog(log);
  return async (ctx, next) => {
    // Set by requestContext, first in the app's chain; an app without it still answers with an id.
    if (!ctx.state.requestId) {
      ctx.state.requestId = crypto.randomUUID();
      ctx.set('X-Request-Id', ctx.state.requestId);
    }
    try {
      await next();
      if (ctx.body === undefined || ctx.body === null) {
        if (ctx.status === 404) throw new AppError('not_found');
        // The routers' 405 and 501 (a method no route implements) keep their Allow header.
        if (ctx.status === 405 || ctx.status === 501) throw new AppError('method_not_allowed');
      }
    } catch (error) {
      const failure = classifyFailure(error);
      const request = { requestId: ctx.state.requestId, method: ctx.method, path: ctx.path };
      if (failure.kind === 'refusal') failures.refusal(failure.answer, request);
      else if (failure.kind === 'store_down') failures.storeDown(error, request);
      else failures.bug(error, request);
      const answer = presentError(errorDialectOf(ctx.path, ctx.get('anthropic-version')), failure.answer, ctx.state.requestId);
      ctx.status = answer.status;
      for (const [name, value] of Object.entries(answer.headers)) ctx.set(name, value);
      ctx.body = answer.body;
    }
  };
}

export { errorCatalogue };
