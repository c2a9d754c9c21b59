/**
 * Error bodies in the dialect of the path: our `{detail, code}` on /api/v2, OpenAI's
 * `{error: {message, type, param, code}}` on /v1, Anthropic's `{type: "error", error: {type,
 * message}}` on /v1/messages (and anywhere under /v1 for a client that sends `anthropic-version`,
 * as Anthropic's SDKs always do: GET /v1/models serves both). The statuses follow what each
 * protocol's clients act on: a bad field is 400 there (not 422), and an empty balance is
 * OpenAI's `insufficient_quota` 429 with `x-should-retry: false` (its SDKs honour that header)
 * and, as Anthropic's API answers low credit, a 400 `invalid_request_error` whose message says
 * "credit balance is too low" (the words Claude Code and other clients look for; Anthropic's
 * 402 `billing_error` is for billing set-ups, not for a balance that ran out).
 */
import type { AppError } from '../../shared/errors';

export type ErrorDialect = 'gensvc' | 'openai' | 'anthropic';

export function errorDialectOf(path: string, anthropicVersion = ''): ErrorDialect {
  if (path === '/v1/messages' || path.startsWith('/v1/messages/')) return 'anthropic';
  if (path === '/v1' || path.startsWith('/v1/')) return anthropicVersion.trim() ? 'anthropic' : 'openai';
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

/** Anthropic's documented error types by status; any other 4xx is `invalid_request_error`, any other 5xx `api_error`. */
const ANTHROPIC_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

/** Anthropic's status for one of our answers. */
function anthropicStatus(answer: AppError): number {
  // Low credit is a 400 on Anthropic's API, told apart by its message (anthropicMessage).
  if (answer.code === 'insufficient_tokens') return 400;
  // The model's provider is down (after our retry and fallbacks): Anthropic's "overloaded", which
  // its SDKs retry (and which Claude Code's --fallback-model is for).
  if (answer.code === 'upstream_unavailable') return 529;
  return protocolStatus(answer);
}

function anthropicMessage(answer: AppError): string {
  if (answer.code !== 'insufficient_tokens') return messageOf(answer);
  const { price, available } = answer.extra;
  const cost = typeof price === 'number' && typeof available === 'number' ? `: this request costs ${price} tokens and ${available} are available` : '';
  return `Your credit balance is too low${cost}. Add tokens or wait for your plan's next refill.`;
}

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
  const status = anthropicStatus(answer);
  const type = ANTHROPIC_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
  // Anthropic's SDKs read the request id from this header (`error.requestID`).
  headers['request-id'] = requestId;
  // The machine-readable reason some SDK helpers act on (`error.details.error_code`: a message thread not held).
  const details = typeof answer.extra.anthropic_error_code === 'string' ? { details: { error_code: answer.extra.anthropic_error_code } } : {};
  return { status, headers, body: { type: 'error', error: { type, message: anthropicMessage(answer), ...details }, request_id: requestId } };
}
