/** Request parsing shared by every route: JSON bodies, zod validation, ids, generation options. */
import crypto from 'node:crypto';
import { z } from 'zod';
import type { StartOptions } from '../shared/generation/types';
import { AppError, FieldError } from '../shared/errors';
import type { AppContext } from './context';

export function fieldErrors(error: z.ZodError): FieldError[] {
  return error.issues.map((issue) => ({
    field: issue.path.length > 0 ? issue.path.join('.') : '(body)',
    message: issue.message,
  }));
}

export function validate<S extends z.ZodType>(schema: S, input: unknown): z.infer<S> {
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw new AppError('validation_failed', { errors: fieldErrors(parsed.error) });
  return parsed.data;
}

/**
 * How deep a JSON body may nest. No request of the API nests more than a few levels; a body
 * nested thousands of levels deep parses, but overflows the stack of whatever serializes or walks
 * it afterwards (an Idempotency-Key's request hash, a schedule's stored params): a 500.
 */
export const MAX_JSON_DEPTH = 64;

/** Whether `value` nests deeper than `limit` (iteratively: the check itself must not overflow). */
function nestsDeeperThan(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop() as [unknown, number];
    if (typeof current !== 'object' || current === null) continue;
    if (depth > limit) return true;
    for (const child of Object.values(current)) if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
  }
  return false;
}

function hasBody(ctx: AppContext): boolean {
  const length = ctx.request.length;
  return (length !== undefined && length > 0) || ctx.get('transfer-encoding') !== '';
}

/** The JSON body validated by `schema`. An empty body counts as `{}`; any other type is 415. */
export function parseBody<S extends z.ZodType>(ctx: AppContext, schema: S): z.infer<S> {
  if (hasBody(ctx) && !ctx.is('application/json')) throw new AppError('unsupported_media_type', { detail: 'Send the body as application/json' });
  const body = ctx.request.body === undefined || ctx.request.body === null ? {} : ctx.request.body;
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw new AppError('validation_failed', { errors: [{ field: '(body)', message: 'must be a JSON object' }] });
  }
  if (nestsDeeperThan(body, MAX_JSON_DEPTH)) {
    throw new AppError('validation_failed', { errors: [{ field: '(body)', message: `must not nest more than ${MAX_JSON_DEPTH} levels deep` }] });
  }
  return validate(schema, body);
}

/** A positive integer path parameter; anything else is 404 (no such id). */
export function parseId(raw: string | undefined): number {
  if (!raw || !/^[1-9][0-9]{0,15}$/.test(raw)) throw new AppError('not_found');
  const id = Number(raw);
  if (!Number.isSafeInteger(id) || id > 2_147_483_647) throw new AppError('not_found');
  return id;
}

export const EmailSchema = z
  .string()
  .trim()
  .toLowerCase()
  .max(320, 'must be at most 320 characters')
  .pipe(z.email({ message: 'must be a valid email address' }));

export const PasswordSchema = z
  .string()
  .min(8, 'must be at least 8 characters')
  .max(1024, 'must be at most 1024 characters');

/**
 * The options of a generation request over HTTP (both /api/v2 and /v1): its Idempotency-Key, and
 * a hash of the body that tells a replay from a reused key.
 */
export function generationOptions(ctx: AppContext, body: unknown): StartOptions {
  const key = ctx.get('idempotency-key').trim();
  if (!key) return { source: 'api' };
  if (key.length > 128 || !/^[\x21-\x7e]+$/.test(key)) throw AppError.validation('Idempotency-Key', 'must be 1–128 visible ASCII characters');
  // Only a keyed request can be replayed, so only its body needs telling apart from another.
  return { source: 'api', idempotencyKey: key, requestHash: crypto.createHash('sha256').update(JSON.stringify(body)).digest('hex') };
}
