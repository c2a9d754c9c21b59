/**
 * The one error catalogue. Code raises `new AppError('code')`; the API maps it by code to a status
 * and the spec's text. Expected outcomes of a domain call are results; these are refusals.
 */

export const errorCatalogue = {
  malformed_request: { status: 400, detail: 'Malformed request body' },
  not_authenticated: { status: 401, detail: 'Not authenticated' },
  invalid_token: { status: 401, detail: 'Invalid or expired token' },
  invalid_credentials: { status: 401, detail: 'Invalid email or password' },
  invalid_messenger_login: { status: 401, detail: 'Invalid messenger login data' },
  invalid_identity_token: { status: 401, detail: 'Invalid identity-provider token' },
  invalid_webhook_signature: { status: 401, detail: 'Invalid webhook signature' },
  insufficient_tokens: { status: 402, detail: 'Insufficient tokens' },
  insufficient_plan: { status: 403, detail: 'Insufficient plan' },
  api_key_not_allowed: { status: 403, detail: 'Not allowed with an API key' },
  not_found: { status: 404, detail: 'Not found' },
  method_not_allowed: { status: 405, detail: 'Method not allowed' },
  email_taken: { status: 409, detail: 'Email already registered' },
  identity_conflict: {
    status: 409,
    detail: 'An account with this email exists; sign in with it first (the identity provider did not verify the email)',
  },
  payload_too_large: { status: 413, detail: 'Request body too large' },
  unsupported_media_type: { status: 415, detail: 'Unsupported content type' },
  range_not_satisfiable: { status: 416, detail: 'Range not satisfiable' },
  validation_failed: { status: 422, detail: 'Validation failed' },
  invalid_reset_token: { status: 422, detail: 'Invalid or expired reset token' },
  wrong_password: { status: 422, detail: 'Current password is incorrect' },
  limit_reached: { status: 422, detail: 'Limit reached' },
  rate_limited: { status: 429, detail: 'Rate limit exceeded' },
  // Redemption codes (POST /billing/redeem, the bot's /redeem): a wrong, expired or spent code
  // also counts against the account's attempt limit (429 rate_limited once it is used up).
  redemption_code_invalid: { status: 404, detail: 'Unknown redemption code' },
  redemption_code_expired: { status: 410, detail: 'This redemption code has expired' },
  redemption_code_spent: { status: 410, detail: 'This redemption code has been used up' },
  redemption_code_already_redeemed: { status: 409, detail: 'This account has already redeemed this code' },
  // Paying would end the better plan at once (a payment for another plan starts it now).
  plan_downgrade_not_allowed: { status: 409, detail: 'A lower plan cannot be bought while a higher plan is running' },
  // Stripe: a webhook whose Stripe-Signature does not verify (400, as Stripe's own examples answer
  // it); Stripe's API failing a checkout (nothing the client can fix); a refund notified before the
  // payment it refunds (5xx so that Stripe retries it, by which time the payment is in).
  invalid_stripe_signature: { status: 400, detail: 'Invalid Stripe-Signature' },
  payment_provider_error: { status: 502, detail: 'The payment provider failed to answer; try again later' },
  payment_not_yet_credited: { status: 503, detail: 'The payment this refund belongs to has not been credited yet; retry later' },
  // A generation that failed, as the OpenAI- and Anthropic-compatible endpoints answer it (they
  // have no "failed" result to return, only an error); the detail is the generation's error.
  generation_refused: { status: 400, detail: 'The request was refused under the content policy' },
  upstream_rejected: { status: 400, detail: "The model's provider rejected the request" },
  upstream_rate_limited: { status: 429, detail: "The model's provider is busy; try again shortly" },
  generation_cancelled: { status: 409, detail: 'The generation was cancelled' },
  // A replay (same Idempotency-Key) while the first request still runs: a protocol answer needs
  // its result, so the client is told to come back (409 is retried by Anthropic's and OpenAI's SDKs).
  idempotent_request_in_progress: { status: 409, detail: 'The first request with this Idempotency-Key is still running; retry once it has finished' },
  upstream_unavailable: { status: 502, detail: "The model's provider is unavailable" },
  upstream_timeout: { status: 504, detail: 'The model did not answer in time' },
  internal_error: { status: 500, detail: 'Internal server error' },
  feature_disabled: { status: 503, detail: 'This feature is not configured on this server' },
  service_unavailable: { status: 503, detail: 'Service unavailable' },
} as const satisfies Record<string, { status: number; detail: string }>;

export type ErrorCode = keyof typeof errorCatalogue;

export interface FieldError {
  field: string;
  message: string;
}

export interface AppErrorOptions {
  /** Overrides the catalogue text where a more specific one helps the client. */
  detail?: string;
  errors?: FieldError[];
  /** Extra body fields the contract names (e.g. `retry_after`, `price`, `available`). */
  extra?: Record<string, string | number | boolean | null>;
  headers?: Record<string, string>;
}

export class AppError extends Error {
  readonly status: number;
  readonly detail: string;
  readonly errors: FieldError[] | undefined;
  readonly extra: Record<string, string | number | boolean | null>;
  readonly headers: Record<string, string>;

  constructor(
    readonly code: ErrorCode,
    options: AppErrorOptions = {},
  ) {
    const entry = errorCatalogue[code];
    super(options.detail ?? entry.detail);
    this.name = 'AppError';
    this.status = entry.status;
    this.detail = options.detail ?? entry.detail;
    this.errors = options.errors;
    this.extra = options.extra ?? {};
    this.headers = options.headers ?? {};
  }

  static validation(field: string, message: string): AppError {
    return new AppError('validation_failed', { errors: [{ field, message }] });
  }
}

export function isAppError(error: unknown): error is AppError {
  return error instanceof AppError;
}
