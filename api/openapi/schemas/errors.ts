/**
 * Error bodies as api/presenters/errors.ts writes them, in each dialect: ours (`{detail, code}`,
 * with `errors` on 422, `retry_after` on 429, `price`/`available` on 402, `error_id` on 500,
 * `reason` on a 409 of /auth/link),
 * OpenAI's under /v1 and Anthropic's on /v1/messages. The codes are the catalogue's
 * (shared/errors/index.ts); the document narrows `code` to the ones each route and status answer.
 */
import { z } from 'zod';
import { ErrorCode, errorCatalogue } from '../../../shared/errors';

export const ERROR_CODES = Object.keys(errorCatalogue) as [ErrorCode, ...ErrorCode[]];

export const FieldErrorSchema = z.strictObject({ field: z.string(), message: z.string() });

/** Our error body, with `code` limited to `codes` (all of the catalogue by default). */
export function errorBody(codes: readonly ErrorCode[] = ERROR_CODES) {
  return z.strictObject({
    detail: z.string().meta({ description: 'What went wrong, in words a person can act on' }),
    code: z.enum(codes as [ErrorCode, ...ErrorCode[]]).meta({ description: 'The catalogue code (stable; clients branch on it, never on `detail`)' }),
    errors: z.array(FieldErrorSchema).optional().meta({ description: 'On 422: every field that failed, with why' }),
    retry_after: z.number().int().optional().meta({ description: 'On 429: seconds until a retry can succeed (also the Retry-After header)' }),
    price: z.number().int().optional().meta({ description: 'On 402: what the request costs' }),
    available: z.number().int().optional().meta({ description: 'On 402: the tokens that are free to spend' }),
    error_id: z.string().optional().meta({ description: 'On 500: the id to quote (the X-Request-Id of the request)' }),
    reason: z
      .enum(['already_linked', 'telegram_account_in_use'])
      .optional()
      .meta({ description: 'On 409 identity_conflict from /auth/link: this account has a Telegram account already, or the Telegram account has generations or bonus tokens (not merged)' }),
  });
}

export const ErrorBody = errorBody().meta({ id: 'Error' });

export const OpenAIErrorBody = z
  .strictObject({
    error: z.strictObject({
      message: z.string(),
      type: z.string().meta({ description: 'invalid_request_error, authentication_error, permission_error, rate_limit_error, insufficient_quota, server_error' }),
      param: z.string().nullable(),
      code: z.string().nullable(),
    }),
  })
  .meta({ id: 'OpenAIError', description: "OpenAI's error shape (every /v1 path but /v1/messages)" });

export const AnthropicErrorBody = z
  .strictObject({
    type: z.literal('error'),
    error: z.strictObject({
      type: z.string().meta({ description: 'invalid_request_error, authentication_error, permission_error, not_found_error, request_too_large, rate_limit_error, timeout_error, overloaded_error, api_error' }),
      message: z.string(),
      details: z.strictObject({ error_code: z.string() }).optional(),
    }),
    request_id: z.string(),
  })
  .meta({ id: 'AnthropicError', description: "Anthropic's error shape (/v1/messages, and /v1 for a client that sends anthropic-version)" });
