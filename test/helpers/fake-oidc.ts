/**
 * A small OpenID provider for tests, on 127.0.0.1: discovery document, JWKS (one RS256 key), an
 * authorization endpoint (the person is whoever `authorizeAs` names: it redirects straight back
 * with a code and the `state`, PKCE S256 challenge kept) and a token endpoint for the
 * authorization-code grant (client_secret_post; the `code_verifier` checked when the code had a
 * challenge). It records every authorization and token request it gets, and signs id_tokens for
 * the tests with its key (or any other key they pass).
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, JWTPayload, KeyLike, SignJWT } from 'jose';

export interface TokenRequest {
  contentType: string | undefined;
  form: Record<string, string>;
}

export interface SigningKey {
  kid: string;
  privateKey: KeyLike;
  publicKey: KeyLike;
}

export interface IdTokenOptions {
  /** Seconds since the epoch, taken from the app's clock. */
  now: number;
  sub: string;
  issuer?: string;
  audience?: string | string[];
  /** Lifetime in seconds after `now` (default 300); negative for an already expired token. */
  expiresIn?: number;
  key?: SigningKey;
  claims?: JWTPayload & Record<string, unknown>;
}

export interface FakeOidcProvider {
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly jwksUrl: string;
  readonly tokenUrl: string;
  readonly key: SigningKey;
  /** Every POST the token endpoint received, in order. */
  readonly tokenRequests: TokenRequest[];
  /** The query of every GET /authorize, in order. */
  readonly authorizeRequests: Array<Record<string, string>>;
  /** Who signs in at /authorize (null: it answers 400 `access_denied` back to the client). */
  authorizeAs: { sub: string; now: number; claims?: JWTPayload & Record<string, unknown> } | null;
  /**
   * The `iss` /authorize sends back with its answer (RFC 9207): its own issuer by default; a
   * string to impersonate another provider; null to send none (as providers before RFC 9207).
   */
  responseIssuer: string | null | undefined;
  /** How often each path was requested. */
  readonly hits: Map<string, number>;
  /** When false, the discovery document answers 404. */
  discoveryEnabled: boolean;
  signIdToken(options: IdTokenOptions): Promise<string>;
  /** A one-time authorization code the token endpoint exchanges for `idToken` (with the verifier of `codeChallenge`, when given). */
  issueCode(redirectUri: string, idToken: string, codeChallenge?: string): string;
  close(): Promise<void>;
}

export async function newSigningKey(kid = crypto.randomBytes(6).toString('hex')): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  return { kid, privateKey, publicKey };
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export async function startFakeOidc(options: { clientId?: string; clientSecret?: string } = {}): Promise<FakeOidcProvider> {
  const clientId = options.clientId ?? 'gensvc-test-client';
  const clientSecret = options.clientSecret ?? 'gensvc-test-secret';
  const key = await newSigningKey('test-key-1');
  const publicJwk = { ...(await exportJWK(key.publicKey)), kid: key.kid, alg: 'RS256', use: 'sig' };
  const codes = new Map<string, { redirectUri: string; idToken: string; codeChallenge?: string }>();
  const tokenRequests: TokenRequest[] = [];
  const authorizeRequests: Array<Record<string, string>> = [];
  const hits = new Map<string, number>();
  let base = '';

  const state: { discoveryEnabled: boolean; authorizeAs: FakeOidcProvider['authorizeAs']; responseIssuer: string | null | undefined } = { discoveryEnabled: true, authorizeAs: null, responseIssuer: undefined };

  const sign = (o: IdTokenOptions): Promise<string> => {
    const signingKey = o.key ?? key;
    return new SignJWT({ ...(o.claims ?? {}) })
      .setProtectedHeader({ alg: 'RS256', kid: signingKey.kid, typ: 'JWT' })
      .setIssuer(o.issuer ?? base)
      .setAudience(o.audience ?? clientId)
      .setSubject(o.sub)
      .setIssuedAt(o.now)
      .setExpirationTime(o.now + (o.expiresIn ?? 300))
      .sign(signingKey.privateKey);
  };

  /** GET /authorize as a provider answers it once the person has signed in and agreed. */
  async function authorize(url: URL, res: http.ServerResponse): Promise<void> {
    const query = Object.fromEntries(url.searchParams.entries());
    authorizeRequests.push(query);
    const redirect = query.redirect_uri;
    // A wrong client or redirect is shown to the person, never sent back (RFC 6749 4.1.2.1).
    if (query.client_id !== clientId || !redirect || !/^https?:\/\//.test(redirect)) return sendJson(res, 400, { error: 'invalid_request' });
    const back = new URL(redirect);
    if (query.state !== undefined) back.searchParams.set('state', query.state);
    const responseIssuer = state.responseIssuer === undefined ? base : state.responseIssuer;
    if (responseIssuer !== null) back.searchParams.set('iss', responseIssuer);
    const wants = (query.scope ?? '').split(' ');
    if (query.response_type !== 'code' || !wants.includes('openid')) back.searchParams.set('error', 'invalid_request');
    else if (query.code_challenge !== undefined && query.code_challenge_method !== 'S256') back.searchParams.set('error', 'invalid_request');
    else if (!state.authorizeAs) back.searchParams.set('error', 'access_denied');
    else {
      const idToken = await sign({ ...state.authorizeAs });
      const code = crypto.randomBytes(12).toString('base64url');
      codes.set(code, { redirectUri: redirect, idToken, codeChallenge: query.code_challenge });
      back.searchParams.set('code', code);
    }
    res.writeHead(302, { location: back.toString() });
    res.end();
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    if (req.method === 'GET' && path === '/.well-known/openid-configuration') {
      if (!state.discoveryEnabled) return sendJson(res, 404, { error: 'not_found' });
      return sendJson(res, 200, {
        issuer: base,
        authorization_endpoint: `${base}/authorize`,
        token_endpoint: `${base}/token`,
        jwks_uri: `${base}/jwks`,
        response_types_supported: ['code', 'id_token'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256'],
        token_endpoint_auth_methods_supported: ['client_secret_post'],
      });
    }
    if (req.method === 'GET' && path === '/jwks') return sendJson(res, 200, { keys: [publicJwk] });
    if (req.method === 'GET' && path === '/authorize') return authorize(new URL(req.url ?? '/', base), res);
    if (req.method === 'POST' && path === '/token') {
      const raw = await readBody(req);
      const form = Object.fromEntries(new URLSearchParams(raw).entries());
      const contentType = req.headers['content-type'];
      tokenRequests.push({ contentType, form });
      if (!contentType?.startsWith('application/x-www-form-urlencoded')) return sendJson(res, 400, { error: 'invalid_request' });
      if (form.client_id !== clientId || form.client_secret !== clientSecret) return sendJson(res, 401, { error: 'invalid_client' });
      if (form.grant_type !== 'authorization_code') return sendJson(res, 400, { error: 'unsupported_grant_type' });
      const grant = form.code === undefined ? undefined : codes.get(form.code);
      if (!grant || grant.redirectUri !== form.redirect_uri) return sendJson(res, 400, { error: 'invalid_grant' });
      if (grant.codeChallenge !== undefined) {
        const proof = crypto.createHash('sha256').update(form.code_verifier ?? '').digest('base64url');
        if (proof !== grant.codeChallenge) return sendJson(res, 400, { error: 'invalid_grant' });
      }
      codes.delete(form.code!);
      return sendJson(res, 200, { access_token: crypto.randomBytes(16).toString('hex'), token_type: 'Bearer', expires_in: 3600, id_token: grant.idToken });
    }
    sendJson(res, 404, { error: 'not_found' });
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((error: Error) => sendJson(res, 500, { error: 'server_error', message: error.message }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    issuer: base,
    clientId,
    clientSecret,
    jwksUrl: `${base}/jwks`,
    tokenUrl: `${base}/token`,
    key,
    tokenRequests,
    authorizeRequests,
    hits,
    get responseIssuer() {
      return state.responseIssuer;
    },
    set responseIssuer(value) {
      state.responseIssuer = value;
    },
    get authorizeAs() {
      return state.authorizeAs;
    },
    set authorizeAs(value) {
      state.authorizeAs = value;
    },
    get discoveryEnabled() {
      return state.discoveryEnabled;
    },
    set discoveryEnabled(value: boolean) {
      state.discoveryEnabled = value;
    },
    signIdToken: sign,
    issueCode(redirectUri: string, idToken: string, codeChallenge?: string): string {
      const code = crypto.randomBytes(12).toString('base64url');
      codes.set(code, { redirectUri, idToken, codeChallenge });
      return code;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
