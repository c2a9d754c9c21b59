/**
 * Error bodies in the dialect of the path: our `{detail, code}` on /api/v2, OpenAI's
 * `{error: {message, type, param, code}}` on /v1, Anthropic's `{type: "error", error: {type,
 * message}}` on /v1/messages. The statuses follow what each protocol's clients act on: a bad
 * field is 400 there (not 422), and an empty balance is OpenAI's `insufficient_quota` 429 with
 * `x-should-retry: false` (its SDKs honour that header) and Anthropic's 402 `billing_error`.
 */
import type { AppError } from '../../shared/errors';

export type ErrorDialect = 'gensvc' | 'openai' | 'anthropic';

export function errorDialectOf(path: string): ErrorDialect {
  if (path === '/v1/messages' || path.startsWith('/v1/messages/')) return 'anthropic';
  if (path === '/v1' || path.startsWith('/v1/')) return 'openai';
  return 'gensvc';
}

export interface ErrorAnswer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** Our own validation status reads as the protocols' "bad request". */
function protocolStatus(answer: AppError): number {
  return answer.status === 422 ? 400 : answer.status;
}

function firstField(answer: AppError): string | null {
  return answer.errors?.[0]?.field ?? null;
}

/** The message with the field it names, as OpenAI's own errors read. */
function messageOf(answer: AppError): string {
  const first = answer.errors?.[0];
  return first ? `${first.field}: ${first.message}` : answer.detail;
}

function openAIType(answer: AppError, status: number): string {
  if (answer.code === 'insufficient_tokens') return 'insufficient_quota';
  if (answer.code === 'rate_limited' || answer.code === 'upstream_rate_limited') return 'rate_limit_error';
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

function openAICode(answer: AppError): string {
  switch (answer.code) {
    case 'insufficient_tokens':
      return 'insufficient_quota';
    case 'invalid_token':
      return 'invalid_api_key';
    case 'not_authenticated':
      return 'missing_api_key';
    case 'rate_limited':
      return 'rate_limit_exceeded';
    case 'generation_refused':
      return 'content_policy_violation';
    case 'not_found':
      if (firstField(answer) === 'previous_response_id') return 'previous_response_not_found';
      return answer.detail.startsWith('Unknown model') ? 'model_not_found' : 'not_found';
    default:
      return answer.code;
  }
}

const ANTHROPIC_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  504: 'timeout_error',
};

export function presentError(dialect: ErrorDialect, answer: AppError, requestId: string): ErrorAnswer {
  const headers = { ...answer.headers };
  if (dialect === 'gensvc') {
    return {
      status: answer.status,
      headers,
      body: {
        detail: answer.detail,
        code: answer.code,
        ...(answer.errors ? { errors: answer.errors } : {}),
        ...answer.extra,
        ...(answer.status === 500 ? { error_id: requestId } : {}),
      },
    };
  }
  if (dialect === 'openai') {
    const status = answer.code === 'insufficient_tokens' ? 429 : protocolStatus(answer);
    // The balance will not grow by retrying: OpenAI's SDKs skip their automatic retries on this header.
    if (answer.code === 'insufficient_tokens') headers['x-should-retry'] = 'false';
    return {
      status,
      headers,
      body: { error: { message: messageOf(answer), type: openAIType(answer, status), param: firstField(answer), code: openAICode(answer) } },
    };
  }
  const status = answer.code === 'insufficient_tokens' ? 402 : protocolStatus(answer);
  const type = ANTHROPIC_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
  return { status, headers, body: { type: 'error', error: { type, message: messageOf(answer) }, request_id: requestId } };
}
