/**
 * How an adapter's requests reach its upstream: `pooledTransport()`, undici's `request` on a
 * keep-alive connection pool per origin (the default), or `fetchTransport(fetch)` when a `fetch`
 * is injected. Both answer an `UpstreamReply`, so an adapter reads a body the same way whichever
 * carried it.
 *
 * Why not the global `fetch` for every call: the profile of `npm run bench:peer` showed fetch's
 * machinery (Request/Response/Headers objects, web streams over the socket, transferables) at
 * ~17 % of the web process's CPU for one small chat completion; `request` hands over the status,
 * a plain header object and a Node stream of Buffers.
 *
 * What stays as fetch did it: undici's default timeouts (300 s to the headers, 300 s between body
 * chunks; the caller's AbortSignal bounds the whole call), redirects followed (at most 20, with
 * Authorization dropped on a cross-origin one), no proxy (Node's fetch ignores HTTP_PROXY too),
 * and no address rules: upstream origins are the operator's configuration, not a user's input
 * (user URLs go through net/url-fetch.ts).
 */
import { Agent, Dispatcher, interceptors } from 'undici';

/** A header lookup as `Headers.get` does it (names are case-insensitive; repeated values joined). */
export interface ReplyHeaders {
  get(name: string): string | null;
}

export interface UpstreamReply {
  status: number;
  ok: boolean;
  headers: ReplyHeaders;
  /** The whole body (rejects if the connection is lost or the signal aborts while reading). */
  bytes(): Promise<Buffer>;
  /** The body as it arrives, chunk by chunk, without copying. */
  chunks(): AsyncIterable<Uint8Array>;
  /** Lets go of a body nobody will read (frees the connection). */
  discard(): Promise<void>;
}

export interface UpstreamRequest {
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string | Uint8Array | FormData;
  signal: AbortSignal;
}

/** Sends one request; rejects only when no answer arrived (refused, reset, aborted). */
export type UpstreamTransport = (url: string, request: UpstreamRequest) => Promise<UpstreamReply>;

const MAX_REDIRECTIONS = 20;

/**
 * A keep-alive pool per origin (undici's Agent keeps one Pool per origin it is asked for), with
 * redirects followed. One per adapter: its connections are its own.
 */
export function pooledTransport(options: { connectionsPerOrigin?: number } = {}): UpstreamTransport {
  const dispatcher: Dispatcher = new Agent({
    connections: options.connectionsPerOrigin ?? null,
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 600_000,
  }).compose(interceptors.redirect({ maxRedirections: MAX_REDIRECTIONS }));
  return async (url, request) => {
    const target = new URL(url);
    let { body: payload, headers } = request;
    if (payload instanceof FormData) {
      // The global FormData is Node's bundled undici's, which this undici does not take: encoded
      // here as fetch would (multipart with its boundary). Only uploads (transcriptions) send one.
      const encoded = new Response(payload);
      headers = { ...headers, 'content-type': encoded.headers.get('content-type') ?? 'multipart/form-data' };
      payload = new Uint8Array(await encoded.arrayBuffer());
    }
    const answer = await dispatcher.request({
      origin: target.origin,
      path: `${target.pathname}${target.search}`,
      method: request.method,
      headers,
      body: payload,
      signal: request.signal,
    });
    const { statusCode, body } = answer;
    const raw = answer.headers;
    return {
      status: statusCode,
      ok: statusCode >= 200 && statusCode < 300,
      headers: {
        get(name) {
          const value = raw[name.toLowerCase()];
          if (value === undefined) return null;
          return Array.isArray(value) ? value.join(', ') : value;
        },
      },
      async bytes() {
        return Buffer.from(await body.arrayBuffer());
      },
      chunks: () => body,
      async discard() {
        await body.dump().catch(() => undefined);
      },
    };
  };
}

/** The same contract over an injected `fetch` (a test's, or one an operator wraps). */
export function fetchTransport(fetchImpl: typeof fetch): UpstreamTransport {
  return async (url, request) => {
    const response = await fetchImpl(url, { method: request.method, headers: request.headers, body: request.body, signal: request.signal, redirect: 'follow' });
    return {
      status: response.status,
      ok: response.ok,
      headers: response.headers,
      async bytes() {
        return Buffer.from(await response.arrayBuffer());
      },
      async *chunks() {
        if (!response.body) return;
        const reader = response.body.getReader();
        try {
          for (;;) {
            const { value, done } = await reader.read();
            if (done) return;
            yield value;
          }
        } finally {
          await reader.cancel().catch(() => undefined);
        }
      },
      async discard() {
        await response.body?.cancel().catch(() => undefined);
      },
    };
  };
}
