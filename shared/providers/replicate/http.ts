/**
 * The HTTP layer of the Replicate adapter: create, read and cancel predictions under `{baseUrl}`
 * with the bearer key, download outputs, and map every failure to a ProviderError. The key is
 * sent only to the API's own origin (never to the CDN an output URL points at, nor across a
 * redirect) and never appears in an error message.
 */
import { ProviderError } from '../types';
import { isRecord, parseRetryAfter, readErrorText, readResponseBytes, transportFailure } from '../upstream-http';

export const REPLICATE_PROVIDER_NAME = 'replicate';

export type PredictionStatus = 'starting' | 'processing' | 'succeeded' | 'failed' | 'canceled' | 'aborted';

/** The fields of a prediction object the adapter reads. */
export interface Prediction {
  id: string;
  status: PredictionStatus;
  output: unknown;
  error: string | null;
  logs: string;
}

export interface ReplicateHttpOptions {
  /** e.g. `https://api.replicate.com/v1`. */
  baseUrl: string;
  apiKey?: string;
  fetch?: typeof fetch;
}

/**
 * A poll's answer: the prediction, or none with the wait the server asked for (429, Retry-After)
 * or a failure worth polling again (5xx, network) while the prediction runs upstream.
 */
export interface PollAnswer {
  prediction: Prediction | null;
  retryAfterMs: number | undefined;
  transientFailure?: ProviderError;
}

const STATUSES = new Set<PredictionStatus>(['starting', 'processing', 'succeeded', 'failed', 'canceled', 'aborted']);
const MAX_REDIRECTS = 3;
/** A cancel is a courtesy to the provider's bill: it must not hold up the failure it follows. */
const CANCEL_TIMEOUT_MS = 5_000;

export function parsePrediction(value: unknown): Prediction | null {
  if (!isRecord(value) || typeof value.id !== 'string' || typeof value.status !== 'string') return null;
  if (!STATUSES.has(value.status as PredictionStatus)) return null;
  const error = value.error;
  return {
    id: value.id,
    status: value.status as PredictionStatus,
    output: value.output ?? null,
    error: typeof error === 'string' ? error : isRecord(error) || Array.isArray(error) ? JSON.stringify(error) : null,
    logs: typeof value.logs === 'string' ? value.logs : '',
  };
}

/** `owner/name` → the model's predictions path; `owner/name:version` or a bare version → `/predictions` with the version. */
export function predictionTarget(upstreamModel: string): { path: string; version?: string } {
  const [model, version] = upstreamModel.split(':', 2);
  if (version) return { path: '/predictions', version };
  if (model && /^[\w.-]+\/[\w.-]+$/.test(model)) {
    const [owner, name] = model.split('/') as [string, string];
    return { path: `/models/${encodeURIComponent(owner)}/${encodeURIComponent(name)}/predictions` };
  }
  if (model && /^[0-9a-f]{64}$/i.test(model)) return { path: '/predictions', version: model };
  throw new ProviderError('bad_request', `The replicate model id "${upstreamModel}" is not of the form owner/name`);
}

export class ReplicateHttp {
  readonly baseUrl: string;
  private readonly origin: string;
  private readonly apiKey: string | undefined;
  private readonly fetchImpl: typeof fetch;
  private readonly name = REPLICATE_PROVIDER_NAME;

  constructor(options: ReplicateHttpOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.origin = new URL(this.baseUrl).origin;
    this.apiKey = options.apiKey;
    this.fetchImpl = options.fetch ?? fetch;
  }

  /** Removes the key from any text that could reach a user or a log. */
  scrub(text: string): string {
    if (!this.apiKey) return text;
    return text.split(this.apiKey).join('[redacted]');
  }

  async create(upstreamModel: string, body: Record<string, unknown>, signal: AbortSignal): Promise<Prediction> {
    const target = predictionTarget(upstreamModel);
    const payload = target.version ? { version: target.version, ...body } : body;
    const response = await this.call(`${this.baseUrl}${target.path}`, { method: 'POST', headers: this.headers(true), body: JSON.stringify(payload) }, signal);
    if (!response.ok) throw await this.statusError(response, signal, 'create');
    return this.predictionFrom(response, signal);
  }

  /** One poll. A 429 (or 503 with Retry-After) is not a failure: the caller waits and asks again. */
  async get(id: string, signal: AbortSignal): Promise<PollAnswer> {
    let response: Response;
    try {
      response = await this.call(`${this.baseUrl}/predictions/${encodeURIComponent(id)}`, { method: 'GET', headers: this.headers(false) }, signal);
    } catch (error) {
      const failure = this.transportError(error, signal);
      if (failure.kind === 'unavailable') return { prediction: null, retryAfterMs: undefined, transientFailure: failure };
      throw failure;
    }
    const retryAfterMs = parseRetryAfter(response.headers);
    if (response.status === 429) {
      await response.body?.cancel().catch(() => undefined);
      return { prediction: null, retryAfterMs };
    }
    if (response.status >= 500) return { prediction: null, retryAfterMs, transientFailure: await this.statusError(response, signal, 'poll') };
    if (!response.ok) throw await this.statusError(response, signal, 'poll');
    return { prediction: await this.predictionFrom(response, signal), retryAfterMs };
  }

  /** Best effort: asks the provider to stop (and stop billing) a prediction we no longer wait for. */
  async cancel(id: string): Promise<void> {
    try {
      const response = await this.fetchImpl(`${this.baseUrl}/predictions/${encodeURIComponent(id)}/cancel`, {
        method: 'POST',
        headers: this.headers(false),
        signal: AbortSignal.timeout(CANCEL_TIMEOUT_MS),
      });
      await response.body?.cancel().catch(() => undefined);
    } catch {
      // Nothing more to do: the provider ends the prediction at its own timeout.
    }
  }

  /**
   * GET an output file. The key goes only to the API's own origin (Replicate's file API); a CDN
   * URL (replicate.delivery) gets none, and redirects are followed by hand so that no redirect
   * can carry the key elsewhere.
   */
  async download(url: string, signal: AbortSignal): Promise<Buffer> {
    if (url.startsWith('data:')) return decodeDataUri(url);
    let current = url;
    for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
      if (!/^https?:\/\//i.test(current)) throw new ProviderError('unavailable', `The ${this.name} provider returned an unusable output URL`);
      const sameOrigin = new URL(current).origin === this.origin;
      const headers: Record<string, string> = sameOrigin && this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {};
      const response = await this.call(current, { method: 'GET', headers, redirect: 'manual' }, signal);
      const location = response.headers.get('location');
      if (response.status >= 300 && response.status < 400 && location) {
        await response.body?.cancel().catch(() => undefined);
        current = new URL(location, current).toString();
        continue;
      }
      if (!response.ok) {
        await response.body?.cancel().catch(() => undefined);
        throw new ProviderError('unavailable', `The ${this.name} provider's output could not be downloaded (HTTP ${response.status})`);
      }
      return this.readBytes(response, signal);
    }
    throw new ProviderError('unavailable', `The ${this.name} provider's output URL redirected too often`);
  }

  /** A failure without an HTTP status: aborted → timeout, anything else → unavailable. */
  transportError(error: unknown, signal: AbortSignal): ProviderError {
    return transportFailure(this.name, error, signal);
  }

  private headers(json: boolean): Record<string, string> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (json) headers['content-type'] = 'application/json';
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;
    return headers;
  }

  private async call(url: string, init: RequestInit, signal: AbortSignal): Promise<Response> {
    if (signal.aborted) throw this.transportError(signal.reason, signal);
    try {
      return await this.fetchImpl(url, { redirect: 'follow', ...init, signal });
    } catch (error) {
      throw this.transportError(error, signal);
    }
  }

  private readBytes(response: Response, signal: AbortSignal): Promise<Buffer> {
    return readResponseBytes(this.name, response, signal);
  }

  private async predictionFrom(response: Response, signal: AbortSignal): Promise<Prediction> {
    const text = (await this.readBytes(response, signal)).toString('utf8');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = null;
    }
    const prediction = parsePrediction(json);
    if (!prediction) throw new ProviderError('unavailable', `The ${this.name} provider sent a malformed prediction`);
    return prediction;
  }

  /** Maps a non-2xx answer (`{detail, status, title}`) to its ProviderError kind. */
  private async statusError(response: Response, signal: AbortSignal, during: 'create' | 'poll'): Promise<ProviderError> {
    const text = await readErrorText(this.name, response, signal);
    const detail = this.scrub(errorDetail(text)).slice(0, 500);
    const suffix = detail ? `: ${detail}` : '';
    const status = response.status;
    if (status === 429) {
      return new ProviderError('rate_limited', `The ${this.name} provider is rate limiting requests${suffix}`, parseRetryAfter(response.headers));
    }
    if (status === 401 || status === 403) {
      // The operator's problem, not the user's: no detail (it could quote the credentials).
      return new ProviderError('unavailable', `The ${this.name} provider rejected the service's credentials (HTTP ${status}); check REPLICATE_API_KEY`);
    }
    if (status === 408) return new ProviderError('timeout', `The ${this.name} provider timed out`);
    if (during === 'poll' && status === 404) return new ProviderError('unavailable', `The ${this.name} provider no longer knows the prediction`);
    if (status >= 400 && status < 500) return new ProviderError('bad_request', `The ${this.name} provider rejected the request (HTTP ${status})${suffix}`);
    return new ProviderError('unavailable', `The ${this.name} provider is unavailable (HTTP ${status})`);
  }
}

/** Replicate's error body is `{detail, status, title}` (problem+json); 422s may carry `invalid_fields`. */
function errorDetail(text: string): string {
  if (text.trim() === '') return '';
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return text.trim();
  }
  if (!isRecord(parsed)) return '';
  const detail = typeof parsed.detail === 'string' ? parsed.detail : typeof parsed.title === 'string' ? parsed.title : '';
  const fields = Array.isArray(parsed.invalid_fields)
    ? parsed.invalid_fields.flatMap((f) => (isRecord(f) && typeof f.description === 'string' ? [f.description] : []))
    : [];
  return [detail, ...fields].filter((s) => s !== '').join('; ');
}

function decodeDataUri(uri: string): Buffer {
  const comma = uri.indexOf(',');
  if (comma < 0) throw new ProviderError('unavailable', 'The replicate provider returned a malformed data: output');
  const meta = uri.slice(5, comma);
  const data = uri.slice(comma + 1);
  return meta.endsWith(';base64') ? Buffer.from(data, 'base64') : Buffer.from(decodeURIComponent(data), 'utf8');
}
