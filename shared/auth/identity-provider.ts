/**
 * OpenID Connect login: an `id_token` verified against the provider's JWKS (issuer, audience,
 * expiry), or an authorization `code` exchanged at the token endpoint first (with the browser's
 * PKCE `code_verifier` when it sends one). Endpoints come from discovery unless OIDC_JWKS_URL /
 * OIDC_TOKEN_URL / OIDC_AUTHORIZATION_URL name them (with the first two set, discovery is not
 * asked at all, so the dashboard's button then needs OIDC_AUTHORIZATION_URL).
 */
import { createRemoteJWKSet, JWTPayload, jwtVerify } from 'jose';
import type { Clock } from '../clock';
import type { Database } from '../db/database';
import { Identity, User } from '../db/entities';
import { AppError } from '../errors';
import type { Logger } from '../log';
import type { Users } from '../accounts/users';
import type { ClientInfo, Sessions } from './sessions';
import type { SignedIn } from './password-accounts';
import { isDuplicateKey } from '../db/errors';

export interface OidcSettings {
  issuer: string | undefined;
  clientId: string | undefined;
  clientSecret: string | undefined;
  jwksUrl: string | undefined;
  tokenUrl: string | undefined;
  authorizationUrl: string | undefined;
  name: string | undefined;
}

/** What a browser needs to start the authorization-code flow (GET /auth/providers). */
export interface AuthorizationStart {
  name: string | undefined;
  /** The issuer identifier an authorization response's `iss` must name (RFC 9207). */
  issuer: string;
  authorizationEndpoint: string;
  clientId: string;
  scope: string;
}

export const OIDC_SCOPE = 'openid email profile';

interface Endpoints {
  jwks: ReturnType<typeof createRemoteJWKSet>;
  tokenUrl: string | undefined;
  authorizationUrl: string | undefined;
  /** False when discovery failed but OIDC_JWKS_URL let login go on: discovery is tried again next time. */
  complete: boolean;
}

export class IdentityProviderLogin {
  private endpoints: Promise<Endpoints> | undefined;

  constructor(
    private readonly settings: OidcSettings,
    private readonly db: Database,
    private readonly users: Users,
    private readonly sessions: Sessions,
    private readonly clock: Clock,
    private readonly fetchImpl: typeof fetch,
    private readonly log: Logger,
  ) {}

  get enabled(): boolean {
    return this.settings.issuer !== undefined && this.settings.clientId !== undefined;
  }

  private discover(): Promise<Endpoints> {
    this.endpoints ??= (async () => {
      let jwksUrl = this.settings.jwksUrl;
      let tokenUrl = this.settings.tokenUrl;
      let authorizationUrl = this.settings.authorizationUrl;
      let complete = true;
      if (!jwksUrl || !tokenUrl) {
        try {
          const response = await this.fetchImpl(`${this.settings.issuer}/.well-known/openid-configuration`, {
            signal: AbortSignal.timeout(10_000),
          });
          if (!response.ok) throw new Error(`OIDC discovery answered ${response.status}`);
          const doc = (await response.json()) as { jwks_uri?: string; token_endpoint?: string; authorization_endpoint?: string };
          jwksUrl ??= doc.jwks_uri;
          tokenUrl ??= doc.token_endpoint;
          authorizationUrl ??= typeof doc.authorization_endpoint === 'string' && /^https?:\/\//.test(doc.authorization_endpoint) ? doc.authorization_endpoint : undefined;
        } catch (error) {
          // With OIDC_JWKS_URL set, id_tokens are still verifiable; only the code flow lacks its endpoint.
          if (!jwksUrl) throw error;
          this.log.warn({ reason: (error as Error).message }, 'identity-provider discovery failed; using OIDC_JWKS_URL');
          complete = false;
        }
      }
      if (!jwksUrl) throw new Error('OIDC discovery gave no jwks_uri');
      return { jwks: createRemoteJWKSet(new URL(jwksUrl), { timeoutDuration: 10_000 }), tokenUrl, authorizationUrl, complete };
    })();
    // A failed (or partly failed) discovery is retried on the next login instead of being cached forever.
    const pending = this.endpoints;
    const forget = () => {
      if (this.endpoints === pending) this.endpoints = undefined;
    };
    pending.then((endpoints) => {
      if (!endpoints.complete) forget();
    }, forget);
    return pending;
  }

  /**
   * Where the dashboard starts the code flow; null when login is off or the provider has no
   * authorization endpoint (discovery failing counts: the page then shows no button).
   */
  async authorizationStart(): Promise<AuthorizationStart | null> {
    if (!this.enabled) return null;
    const clientId = this.settings.clientId ?? '';
    const issuer = this.settings.issuer ?? '';
    if (this.settings.authorizationUrl) return { name: this.settings.name, issuer, authorizationEndpoint: this.settings.authorizationUrl, clientId, scope: OIDC_SCOPE };
    const endpoints = await this.discover().catch((error: Error) => {
      this.log.warn({ reason: error.message }, 'identity-provider discovery failed');
      return null;
    });
    if (!endpoints?.authorizationUrl) return null;
    return { name: this.settings.name, issuer, authorizationEndpoint: endpoints.authorizationUrl, clientId, scope: OIDC_SCOPE };
  }

  private async exchangeCode(code: string, redirectUri: string, codeVerifier: string | undefined, tokenUrl: string | undefined): Promise<string> {
    if (!tokenUrl) throw new AppError('feature_disabled', { detail: 'The identity provider has no token endpoint configured' });
    const body = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri });
    // PKCE (RFC 7636): the browser that started the flow holds the verifier; the provider checks it.
    if (codeVerifier) body.set('code_verifier', codeVerifier);
    body.set('client_id', this.settings.clientId ?? '');
    if (this.settings.clientSecret) body.set('client_secret', this.settings.clientSecret);
    let response: Response;
    try {
      response = await this.fetchImpl(tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body,
        signal: AbortSignal.timeout(10_000),
      });
    } catch (error) {
      // An outage of someone else's service, met by every login meanwhile: a line without a stack.
      this.log.warn({ reason: (error as Error).message }, 'identity-provider token endpoint unreachable');
      throw new AppError('service_unavailable', { detail: 'The identity provider cannot be reached' });
    }
    const payload = (await response.json().catch(() => ({}))) as { id_token?: string; error?: string };
    if (!response.ok || typeof payload.id_token !== 'string') {
      throw new AppError('invalid_identity_token', {
        detail: `The identity provider refused the code${payload.error ? ` (${payload.error})` : ''}`,
      });
    }
    return payload.id_token;
  }

  private async verifyIdToken(idToken: string, jwks: Endpoints['jwks']): Promise<JWTPayload> {
    try {
      const issuer = this.settings.issuer ?? '';
      const { payload } = await jwtVerify(idToken, jwks, {
        // The configuration drops a trailing slash, which some providers' issuer identifiers have.
        issuer: [issuer, `${issuer}/`],
        audience: this.settings.clientId,
        currentDate: this.clock(),
      });
      if (typeof payload.sub !== 'string' || payload.sub.length === 0) throw new Error('no sub');
      return payload;
    } catch (error) {
      this.log.info({ reason: (error as Error).message }, 'identity-provider token rejected');
      throw new AppError('invalid_identity_token');
    }
  }

  /**
   * RFC 9207 (mix-up defence): an authorization response that names its issuer must name this
   * one, or its code may be another provider's, sent here to be exchanged. The configuration
   * drops a trailing slash, so both spellings are this issuer.
   */
  isThisIssuer(iss: string): boolean {
    const issuer = this.settings.issuer ?? '';
    return iss === issuer || iss === `${issuer}/`;
  }

  async login(
    input: { id_token?: string; code?: string; redirect_uri?: string; code_verifier?: string; iss?: string },
    client: ClientInfo,
  ): Promise<SignedIn & { isNewUser: boolean }> {
    if (!this.enabled) throw new AppError('feature_disabled', { detail: 'Identity-provider login is not configured on this server' });
    // Before anything is asked of the provider: a code from another issuer is never exchanged.
    if (input.iss !== undefined && !this.isThisIssuer(input.iss)) {
      this.log.info({ iss: input.iss.slice(0, 200) }, 'identity-provider authorization response from another issuer');
      throw new AppError('invalid_identity_token', { detail: 'The authorization response came from another issuer' });
    }
    let endpoints: Endpoints;
    try {
      endpoints = await this.discover();
    } catch (error) {
      this.log.warn({ reason: (error as Error).message }, 'identity-provider discovery failed');
      throw new AppError('service_unavailable', { detail: 'The identity provider cannot be reached' });
    }
    const idToken = input.id_token ?? (await this.exchangeCode(input.code ?? '', input.redirect_uri ?? '', input.code_verifier, endpoints.tokenUrl));
    const claims = await this.verifyIdToken(idToken, endpoints.jwks);
    // The configured issuer, not `iss`: the same whether or not the provider writes the trailing slash.
    const subject = `${this.settings.issuer}|${claims.sub}`;
    const email = typeof claims.email === 'string' ? claims.email.trim().toLowerCase() : undefined;
    const emailVerified = claims.email_verified === true || claims.email_verified === 'true';
    const name = typeof claims.name === 'string' && claims.name.trim() ? claims.name.trim() : (email?.split('@')[0] ?? 'user');
    const picture = typeof claims.picture === 'string' ? claims.picture : null;

    const signIn = () => this.db.transaction(async (em) => {
      const now = this.clock();
      const existing = await em.getRepository(Identity).findOneBy({ kind: 'identity_provider', subject });
      let user: User;
      let isNewUser = false;
      if (existing) {
        user = await em.getRepository(User).findOneByOrFail({ id: existing.userId });
      } else {
        const sameEmail = email ? await em.getRepository(User).findOneBy({ email }) : null;
        if (sameEmail) {
          if (!emailVerified) throw new AppError('identity_conflict');
          await em.getRepository(Identity).insert({ userId: sameEmail.id, kind: 'identity_provider', subject, passwordHash: null, createdAt: now });
          user = sameEmail;
        } else {
          user = await this.users.create(em, {
            name: name.slice(0, 200),
            email: emailVerified ? (email ?? null) : null,
            avatarUrl: picture,
            identity: { kind: 'identity_provider', subject },
          });
          isNewUser = true;
        }
      }
      const started = await this.sessions.start(em, user.id, client);
      return { user, isNewUser, ...started };
    });
    try {
      return await signIn();
    } catch (error) {
      // Two first logins at once: the unique indexes let one create; the retry finds its identity.
      if (isDuplicateKey(error)) return signIn();
      throw error;
    }
  }
}
