/**
 * The HTTP layer of the upstream adapters, in one place:
 *
 * - helpers every adapter's client uses (OpenAI-compatible, Replicate, ElevenLabs, Deepgram):
 *   reading a body, mapping a failure without a status to a ProviderError, `Retry-After`, and
 *   `isRecord` for picking fields out of parsed JSON;
 * - UpstreamHttp, the whole client of the adapters that are not OpenAI-shaped (ElevenLabs,
 *   Deepgram): one POST to `{baseUrl}{path}` with the provider's own auth headers, and one mapping
 *   of every failure to a ProviderError. Each provider brings how to read its error bodies.
 *
 * UpstreamHttp's mapping: 429 → rate_limited (with Retry-After); 401/402/403 → unavailable (the
 * service's credentials or account are at fault, not the user's request: a fallback may serve
 * it); 408 → timeout; other 4xx → bad_request with the provider's message; 5xx and network errors
 * → unavailable; an abort → timeout. The key never appears in a message.
 */
import { ProviderError } from './types';
import type { ReplyHeaders, UpstreamReply } from './upstream-transport';

/** A JSON object (not null, not an array): what a field of a parsed body is read from. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `retry-after-ms` (OpenAI), else `Retry-After` in seconds or as an HTTP date; undefined if absent. */
export function parseRetryAfter(headers: ReplyHeaders, now = Date.now()): number | undefined {
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '' && Number.isFinite(Number(ms)) && Number(ms) >= 0) return Math.round(Number(ms));
  const value = headers.get('retry-after');
  if (value === null || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, Math.round(seconds * 1000));
  const date = Date.parse(value);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/**
 * A failure of an upstream call without an HTTP status: aborted or timed out → `timeout`,
 * anything else (refused connection, reset, DNS) → `unavailable`. Never carries the cause's text,
 * which may hold a URL with a key in it.
 */
export function transportFailure(provider: string, error: unknown, signal: AbortSignal): ProviderError {
  if (error instanceof ProviderError) return error;
  const name = error instanceof Error || error instanceof DOMException ? error.name : '';
  if (signal.aborted || name === 'AbortError' || name === 'TimeoutError') {
    return new ProviderError('timeout', `The ${provider} provider did not answer in time`);
  }
  return new ProviderError('unavailable', `The ${provider} provider could not be reached`);
}

/** A response's whole body; a connection lost while reading it is a transport failure. */
export async function readResponseBytes(provider: string, response: Response | UpstreamReply, signal: AbortSignal): Promise<Buffer> {
  try {
    return response instanceof Response ? Buffer.from(await response.arrayBuffer()) : await response.bytes();
  } catch (error) {
    throw transportFailure(provider, error, signal);
  }
}

/** A response's body as JSON; a body that is not JSON is `unavailable` ("malformed response"). */
export async function readResponseJson(provider: string, response: Response | UpstreamReply, signal: AbortSignal): Promise<unknown> {
  const bytes = await readResponseBytes(provider, response, signal);
  try {
    return JSON.parse(bytes.toString('utf8')) as unknown;
  } catch {
    throw new ProviderError('unavailable', `The ${provider} provider sent a malformed response`);
  }
}

/** An error answer's body as text, or '' when it cannot be read: the status alone classifies it. */
export async function readErrorText(provider: string, response: Response | UpstreamReply, signal: AbortSignal): Promise<string> {
  try {
    return (await readResponseBytes(provider, response, signal)).toString('utf8');
  } catch {
    return '';
  }
}

export interface UpstreamHttpOptions {
  /** Provider name used in messages (`elevenlabs`). */
  name: string;
  /** No trailing slash needed. */
  baseUrl: string;
  fetch?: typeof fetch;
  /** Headers that authenticate every request (empty without a key). */
  authHeaders: Record<string, string>;
  /** Values scrubbed from any text that could reach a user or a log (the key). */
  secrets: string[];
  /** The provider's message in a parsed error body, or null when there is none. */
  errorMessage(body: unknown): string | null;
}

export class UpstreamHttp {
  readonly baseUrl: string;
  readonly name: string;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly options: UpstreamHttpOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.name = options.name;
    this.fetchImpl = options.fetch ?? fetch;
  }

  scrub(text: string): string {
    return this.options.secrets.filter((s) => s !== '').reduce((out, secret) => out.split(secret).join('[redacted]'), text);
  }

  /** POST a body; resolves to the (2xx) response or throws a ProviderError. */
  async post(path: string, body: string | Uint8Array, headers: Record<string, string>, signal: AbortSignal): Promise<Response> {
    if (signal.aborted) throw this.transportError(signal.reason, signal);
    let response: Response;
    try {
      response = await this.fetchImpl(`${this.baseUrl}${path}`, {
        method: 'POST',
        headers: { ...headers, ...this.options.authHeaders },
        body,
        signal,
        // Fetch drops only Authorization on a cross-origin redirect, not a key header such as
        // `xi-api-key`: an API that redirects a POST gets an error, never our key.
        redirect: 'error',
      });
    } catch (error) {
      throw this.transportError(error, signal);
    }
    if (response.ok) return response;
    throw await this.statusError(response, signal);
  }

  readBytes(response: Response, signal: AbortSignal): Promise<Buffer> {
    return readResponseBytes(this.name, response, signal);
  }

  readJson(response: Response, signal: AbortSignal): Promise<unknown> {
    return readResponseJson(this.name, response, signal);
  }

  malformed(what: string): ProviderError {
    return new ProviderError('unavailable', `The ${this.name} provider sent a malformed ${what ? `${what} ` : ''}response`);
  }

  /** A failure without an HTTP status: aborted or timed out → timeout, anything else → unavailable. */
  transportError(error: unknown, signal: AbortSignal): ProviderError {
    return transportFailure(this.name, error, signal);
  }

  async statusError(response: Response, signal: AbortSignal): Promise<ProviderError> {
    const detail = this.detailOf(await readErrorText(this.name, response, signal));
    const suffix = detail ? `: ${detail}` : '';
    const status = response.status;
    if (status === 429) {
      return new ProviderError('rate_limited', `The ${this.name} provider is rate limiting requests${suffix}`, parseRetryAfter(response.headers));
    }
    if (status === 401 || status === 403) {
      return new ProviderError('unavailable', `The ${this.name} provider rejected the service's credentials (HTTP ${status})`);
    }
    if (status === 402) return new ProviderError('unavailable', `The ${this.name} provider refused the service's account (HTTP 402)${suffix}`);
    if (status === 408) return new ProviderError('timeout', `The ${this.name} provider timed out`);
    if (status >= 400 && status < 500) return new ProviderError('bad_request', `The ${this.name} provider rejected the request (HTTP ${status})${suffix}`);
    return new ProviderError('unavailable', `The ${this.name} provider is unavailable (HTTP ${status})`);
  }

  private detailOf(text: string): string {
    if (text.trim() === '') return '';
    let message: string | null;
    try {
      message = this.options.errorMessage(JSON.parse(text) as unknown);
    } catch {
      // Not JSON (a proxy's HTML page, say): show nothing rather than markup.
      message = /^\s*</.test(text) ? null : text.trim();
    }
    return message ? this.scrub(message).slice(0, 500) : '';
  }
}
