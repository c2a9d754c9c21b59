/**
 * Security headers on every response of the app (JSON, errors, 404s, files, /health, the bot's
 * webhook), set by helmet on the raw response before anything downstream can throw:
 *
 * - `Content-Security-Policy: default-src 'none'; frame-ancestors 'none'`: the API answers JSON
 *   and files, never pages, so nothing it serves may load or run anything, or be framed. A route
 *   that serves HTML (a dashboard, /docs) sets its own policy with `ctx.set('Content-Security-
 *   Policy', …)`, which replaces this one, keeping `frame-ancestors 'none'` and naming only its
 *   own sources (e.g. `default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'
 *   data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'`).
 * - `X-Frame-Options: DENY` for browsers that predate `frame-ancestors`.
 * - `X-Content-Type-Options: nosniff`: a file is what its Content-Type says (files/ serves fixed
 *   types), never sniffed into HTML or script.
 * - `Referrer-Policy: no-referrer`: URLs here carry file keys; they must not leak onward.
 * - helmet's other defaults (Cross-Origin-Opener-Policy, Cross-Origin-Resource-Policy
 *   same-origin, Origin-Agent-Cluster, X-DNS-Prefetch-Control, …); CORS reads are not affected
 *   by Cross-Origin-Resource-Policy, and files/ relaxes it to cross-origin for embedding.
 * - `Strict-Transport-Security` only on a request that came over https (a TLS socket, or
 *   `X-Forwarded-Proto: https` believed under TRUST_PROXY): the service usually runs behind a
 *   proxy that terminates TLS, and over plain http the header means nothing. No
 *   `includeSubDomains`: other hosts of the operator's domain are not ours to pin.
 */
import type { Next } from 'koa';
import helmet from 'koa-helmet';
import type { AppContext } from '../context';

const HSTS = 'max-age=15552000'; // 180 days

export function securityHeaders(): (ctx: AppContext, next: Next) => Promise<void> {
  const helmetHeaders = helmet({
    contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
    xFrameOptions: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    strictTransportSecurity: false,
  });
  return async (ctx, next) => {
    if (ctx.secure) ctx.set('Strict-Transport-Security', HSTS);
    await helmetHeaders(ctx, next);
  };
}
