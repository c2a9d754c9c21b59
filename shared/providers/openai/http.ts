/**
 * The HTTP layer of the OpenAI-compatible adapter: one request to `{baseUrl}{path}` with the
 * bearer key (only when one is configured), and the mapping of every failure to a ProviderError.
 * The key never appears in an error message: provider messages are scrubbed of it. Requests go
 * through a keep-alive pool per origin (upstream-transport.ts), or an injected `fetch`.
 */
import { ProviderError } from '../types';
import { isRecord, parseRetryAfter, readErrorText, readResponseBytes, readResponseJson, transportFailure } from '../upstream-http';
import { fetchTransport, pooledTransport, UpstreamReply, UpstreamRequest, UpstreamTransport } from '../upstream-transport';

export interface UpstreamOptions {
  /** e.g. `https://api.openai.com/v1`; no trailing slash needed. */
  baseUrl: string;
  /** Omitted for servers that need none (a local Ollama, llama.cpp or vLLM). */
  apiKey?: string;
  /** Instead of the pooled client (undici `request`): every call through this `fetch`. */
  fetch?: typeof fetch;
  /** Provider name used in messages (`openai`). */
  name?: string;
}

/** The upstream's error body: `{error: {message, type, code, param}}` (some servers send a string). */
interface ErrorBody {
  message: string;
  code: string | null;
  type: string | null;
}

/** Error codes and wording that mean the provider refused the content, not the parameters. */
const POLICY_CODES = new Set(['content_policy_violation', 'content_filter', 'moderation_blocked', 'safety_violation']);
const POLICY_WORDING = /safety system|safety polic|content polic|content management polic|content filter|moderation/i;

export class Upstream {
  readonly baseUrl: string;
  readonly name: string;
  private readonly apiKey: string | undefined;
  private readonly transport: UpstreamTransport;

  constructor(options: UpstreamOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.apiKey = options.apiKey;
    this.transport = options.fetch ? fetchTransport(options.fetch) : pooledTransport();
    this.name = options.name ?? 'openai';
  }

  /** Removes the key from any text that could reach a user or a log. */
  scrub(text: string): string {
    if (!this.apiKey) return text;
    return text.split(this.apiKey).join('[redacted]');
  }

  /** POST a JSON body; resolves to the (2xx) response or throws a ProviderError. */
  postJson(path: string, body: Record<string, unknown>, signal: AbortSignal, accept = 'application/json'): Promise<UpstreamReply> {
    return this.send(path, { body: JSON.stringify(body), headers: { 'content-type': 'application/json', accept } }, signal);
  }

  /** POST a multipart body (the client sets the boundary). */
  postForm(path: string, form: FormData, signal: AbortSignal): Promise<UpstreamReply> {
    return this.send(path, { body: form, headers: { accept: 'application/json' } }, signal);
  }

  /**
   * GET a file the provider pointed us to (an image result URL). It is the provider's own host
   * (or its CDN), configured by the operator: the user-URL rules do not apply, but the key is
   * never sent there.
   */
  async download(url: string, signal: AbortSignal): Promise<Buffer> {
    if (!/^https?:\/\//i.test(url)) throw new ProviderError('unavailable', `The ${this.name} provider returned an unusable result URL`);
    const response = await this.call(url, { method: 'GET', headers: {} }, signal);
    if (!response.ok) {
      await response.discard();
      throw new ProviderError('unavailable', `The ${this.name} provider's result could not be downloaded (HTTP ${response.status})`);
    }
    return this.readBytes(response, signal);
  }

  readBytes(response: UpstreamReply, signal: AbortSignal): Promise<Buffer> {
    return readResponseBytes(this.name, response, signal);
  }

  readJson(response: UpstreamReply, signal: AbortSignal): Promise<unknown> {
    return readResponseJson(this.name, response, signal);
  }

  private async send(path: string, init: { body: string | FormData; headers: Record<string, string> }, signal: AbortSignal): Promise<UpstreamReply> {
    const headers: Record<string, string> = { ...init.headers };
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;
    const response = await this.call(`${this.baseUrl}${path}`, { method: 'POST', headers, body: init.body }, signal);
    if (response.ok) return response;
    throw await this.statusError(response, signal);
  }

  private async call(url: string, init: Omit<UpstreamRequest, 'signal'>, signal: AbortSignal): Promise<UpstreamReply> {
    if (signal.aborted) throw this.transportError(signal.reason, signal);
    try {
      return await this.transport(url, { ...init, signal });
    } catch (error) {
      throw this.transportError(error, signal);
    }
  }

  /** A failure without an HTTP status: aborted or timed out → timeout, anything else → unavailable. */
  transportError(error: unknown, signal: AbortSignal): ProviderError {
    return transportFailure(this.name, error, signal);
  }

  /** Maps a non-2xx answer to its ProviderError kind. */
  async statusError(response: UpstreamReply, signal: AbortSignal): Promise<ProviderError> {
    const text = await readErrorText(this.name, response, signal);
    const body = parseErrorBody(text);
    const detail = body ? this.scrub(body.message).slice(0, 500) : '';
    const status = response.status;
    if (status === 429) {
      const retryAfterMs = parseRetryAfter(response.headers);
      return new ProviderError('rate_limited', `The ${this.name} provider is rate limiting requests${detail ? `: ${detail}` : ''}`, retryAfterMs);
    }
    if (body && isPolicyRefusal(body)) {
      return new ProviderError('refused', detail || `The ${this.name} provider refused the request under its content policy`);
    }
    if (status === 408) return new ProviderError('timeout', `The ${this.name} provider timed out`);
    if (status === 401 || status === 403) {
      return new ProviderError('bad_request', `The ${this.name} provider rejected the service's credentials (HTTP ${status})`);
    }
    if (status >= 400 && status < 500) {
      return new ProviderError('bad_request', `The ${this.name} provider rejected the request (HTTP ${status})${detail ? `: ${detail}` : ''}`);
    }
    return new ProviderError('unavailable', `The ${this.name} provider is unavailable (HTTP ${status})`);
  }

  /** An `{error: …}` object that arrives inside a 200 (mid-stream in SSE). */
  inlineError(value: unknown): ProviderError {
    const body = errorFromValue(value) ?? { message: 'unknown error', code: null, type: null };
    const detail = this.scrub(body.message).slice(0, 500);
    if (isPolicyRefusal(body)) return new ProviderError('refused', detail);
    if (body.code === 'rate_limit_exceeded' || body.type === 'rate_limit_error') {
      return new ProviderError('rate_limited', `The ${this.name} provider is rate limiting requests: ${detail}`);
    }
    return new ProviderError('unavailable', `The ${this.name} provider failed: ${detail}`);
  }
}

function isPolicyRefusal(body: ErrorBody): boolean {
  return (body.code !== null && POLICY_CODES.has(body.code)) || POLICY_WORDING.test(body.message);
}

function errorFromValue(value: unknown): ErrorBody | null {
  if (typeof value === 'string' && value !== '') return { message: value, code: null, type: null };
  if (!isRecord(value)) return null;
  const message = typeof value.message === 'string' ? value.message : typeof value.detail === 'string' ? value.detail : null;
  if (message === null) return null;
  const code = typeof value.code === 'string' ? value.code : null;
  const type = typeof value.type === 'string' ? value.type : null;
  return { message, code, type };
}

function parseErrorBody(text: string): ErrorBody | null {
  if (text.trim() === '') return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { message: text.trim().slice(0, 500), code: null, type: null };
  }
  if (isRecord(parsed)) return errorFromValue(parsed.error) ?? errorFromValue(parsed);
  return null;
}
