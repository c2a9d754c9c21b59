/**
 * Identity-provider (OpenID Connect) login: decisions.md "Accounts and sessions", spec 5.2.
 * A fake provider on 127.0.0.1 serves discovery, the JWKS and the token endpoint.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Response } from 'supertest';
import { Identity } from '../shared/db/entities';
import type { TestApp } from './helpers/app';
import { startTestApp, useTestApp } from './helpers/app';
import { FakeOidcProvider, IdTokenOptions, newSigningKey, startFakeOidc } from './helpers/fake-oidc';
import { refreshCookieFrom, registerUser, uniqueEmail } from './helpers/users';

const PATH = '/api/v2/auth/identity-provider';
const REDIRECT_URI = 'https://app.example.test/auth/callback';

interface OidcTestApp {
  readonly app: TestApp;
  readonly provider: FakeOidcProvider;
}

/** Starts the fake provider first, then an app configured by `env(provider)`; closes both afterwards. */
function useOidcApp(env: (provider: FakeOidcProvider) => Record<string, string>): OidcTestApp {
  const holder: { app?: TestApp; provider?: FakeOidcProvider } = {};
  beforeAll(async () => {
    holder.provider = await startFakeOidc();
    holder.app = await startTestApp(env(holder.provider));
  });
  afterAll(async () => {
    await holder.app?.close();
    await holder.provider?.close();
  });
  return {
    get app(): TestApp {
      if (!holder.app) throw new Error('test app not started');
      return holder.app;
    },
    get provider(): FakeOidcProvider {
      if (!holder.provider) throw new Error('fake provider not started');
      return holder.provider;
    },
  };
}

function fullConfig(p: FakeOidcProvider): Record<string, string> {
  return { OIDC_ISSUER: p.issuer, OIDC_CLIENT_ID: p.clientId, OIDC_CLIENT_SECRET: p.clientSecret };
}

function newSubject(): string {
  return `sub-${crypto.randomBytes(6).toString('hex')}`;
}

/** An http://127.0.0.1 URL where nothing listens. */
async function closedPortUrl(): Promise<string> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

function helpers(t: OidcTestApp) {
  const nowSeconds = (): number => Math.floor(t.app.clock.now().getTime() / 1000);
  const idToken = (options: Partial<IdTokenOptions> = {}): Promise<string> =>
    t.provider.signIdToken({ now: nowSeconds(), sub: newSubject(), ...options });
  const login = (body: object): Promise<Response> => t.app.http().post(PATH).send(body);
  const me = (accessToken: string): Promise<Response> => t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${accessToken}`);
  return { nowSeconds, idToken, login, me };
}

describe('identity-provider login (endpoints from discovery)', () => {
  const t = useOidcApp(fullConfig);
  const { nowSeconds, idToken, login, me } = helpers(t);

  async function expectRejected(token: string): Promise<void> {
    const res = await login({ id_token: token });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('invalid_identity_token');
    expect(res.headers['set-cookie']).toBeUndefined();
  }

  it('signs in a new user with an id_token: 200, tokens, is_new_user true, user with e-mail', async () => {
    const email = uniqueEmail('oidc');
    const res = await login({ id_token: await idToken({ claims: { email, email_verified: true, name: 'Olga Idp' } }) });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      access_token: expect.any(String),
      refresh_token: expect.any(String),
      token_type: 'bearer',
      expires_in: 900,
      is_new_user: true,
      user: { id: expect.any(Number), name: 'Olga Idp', plan: 'free', token_balance: expect.any(Number), email },
    });
    // Every login also sets the refresh cookie; it carries the same token as the body.
    expect(refreshCookieFrom(res.headers['set-cookie'])).toBe(res.body.refresh_token);
    const profile = await me(res.body.access_token);
    expect(profile.status).toBe(200);
    expect(profile.body).toMatchObject({
      id: res.body.user.id,
      email,
      messenger_username: null,
      plan: 'free',
      auth_methods: { messenger: false, identity_provider: true, email: false },
    });
    // The endpoints came from discovery.
    expect(t.provider.hits.get('/.well-known/openid-configuration')).toBeGreaterThanOrEqual(1);
    expect(t.provider.hits.get('/jwks')).toBeGreaterThanOrEqual(1);
  });

  it('returns the same user with is_new_user false for the same subject', async () => {
    const sub = newSubject();
    const email = uniqueEmail('oidc');
    const first = await login({ id_token: await idToken({ sub, claims: { email, email_verified: true } }) });
    expect(first.status).toBe(200);
    expect(first.body.is_new_user).toBe(true);
    t.app.clock.advance(120);
    const second = await login({ id_token: await idToken({ sub, claims: { email, email_verified: true } }) });
    expect(second.status).toBe(200);
    expect(second.body.is_new_user).toBe(false);
    expect(second.body.user.id).toBe(first.body.user.id);
    expect(second.body.refresh_token).not.toBe(first.body.refresh_token);
    const count = await t.app.container.db.repo(Identity).countBy({ userId: first.body.user.id });
    expect(count).toBe(1);
  });

  it('names the account from the e-mail when the token has no name', async () => {
    const res = await login({ id_token: await idToken({ claims: { email: 'Nora.K@Example.test', email_verified: true } }) });
    expect(res.status).toBe(200);
    expect(res.body.user).toMatchObject({ name: 'nora.k', email: 'nora.k@example.test' });
  });

  it('does not store an unverified e-mail on a new account', async () => {
    const res = await login({ id_token: await idToken({ claims: { email: uniqueEmail('unverified'), email_verified: false } }) });
    expect(res.status).toBe(200);
    expect(res.body.is_new_user).toBe(true);
    expect(res.body.user.email).toBeNull();
  });

  it('accepts an audience list that contains the client id', async () => {
    const res = await login({ id_token: await idToken({ audience: ['another-client', t.provider.clientId] }) });
    expect(res.status).toBe(200);
  });

  describe('authorization code', () => {
    it('exchanges code + redirect_uri at the token endpoint, with the client credentials', async () => {
      const email = uniqueEmail('code');
      const token = await idToken({ claims: { email, email_verified: true } });
      const code = t.provider.issueCode(REDIRECT_URI, token);
      const before = t.provider.tokenRequests.length;
      const res = await login({ code, redirect_uri: REDIRECT_URI });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ token_type: 'bearer', is_new_user: true, user: { email } });
      expect(typeof res.body.refresh_token).toBe('string');
      const requests = t.provider.tokenRequests.slice(before);
      expect(requests).toHaveLength(1);
      expect(requests[0]!.contentType).toMatch(/^application\/x-www-form-urlencoded/);
      expect(requests[0]!.form).toEqual({
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT_URI,
        client_id: t.provider.clientId,
        client_secret: t.provider.clientSecret,
      });
    });

    it('answers 401 when the provider refuses the code (unknown, reused or other redirect_uri)', async () => {
      const unknown = await login({ code: 'no-such-code', redirect_uri: REDIRECT_URI });
      expect(unknown.status).toBe(401);
      expect(unknown.body.code).toBe('invalid_identity_token');

      const code = t.provider.issueCode(REDIRECT_URI, await idToken());
      const otherRedirect = await login({ code, redirect_uri: 'https://evil.example.test/cb' });
      expect(otherRedirect.status).toBe(401);

      const good = t.provider.issueCode(REDIRECT_URI, await idToken());
      expect((await login({ code: good, redirect_uri: REDIRECT_URI })).status).toBe(200);
      expect((await login({ code: good, redirect_uri: REDIRECT_URI })).status).toBe(401);
    });

    it('passes the PKCE code_verifier on to the token endpoint (a wrong one is refused there)', async () => {
      const verifier = 'v'.repeat(20) + '-._~' + 'w'.repeat(24);
      const challenge = crypto.createHash('sha256').update(verifier).digest('base64url');
      const wrong = t.provider.issueCode(REDIRECT_URI, await idToken(), challenge);
      const refused = await login({ code: wrong, redirect_uri: REDIRECT_URI, code_verifier: 'x'.repeat(43) });
      expect(refused.status).toBe(401);
      expect(refused.body.code).toBe('invalid_identity_token');
      const code = t.provider.issueCode(REDIRECT_URI, await idToken(), challenge);
      expect((await login({ code, redirect_uri: REDIRECT_URI, code_verifier: verifier })).status).toBe(200);
      expect(t.provider.tokenRequests.at(-1)!.form.code_verifier).toBe(verifier);
      const malformed = await login({ code, redirect_uri: REDIRECT_URI, code_verifier: 'too short' });
      expect(malformed.status).toBe(422);
      expect(malformed.body.code).toBe('validation_failed');
    });

    it("checks the authorization response's iss (RFC 9207): another issuer is refused before the code is exchanged", async () => {
      const before = t.provider.tokenRequests.length;
      for (const iss of ['https://evil.example.test', `${t.provider.issuer}/other`, `${t.provider.issuer}//`]) {
        const code = t.provider.issueCode(REDIRECT_URI, await idToken());
        const refused = await login({ code, redirect_uri: REDIRECT_URI, iss });
        expect(refused.status).toBe(401);
        expect(refused.body).toMatchObject({ code: 'invalid_identity_token', detail: 'The authorization response came from another issuer' });
      }
      // Never sent to the token endpoint.
      expect(t.provider.tokenRequests).toHaveLength(before);

      // The issuer's own iss (either spelling of its trailing slash) goes through, as does none.
      for (const iss of [t.provider.issuer, `${t.provider.issuer}/`, undefined]) {
        const code = t.provider.issueCode(REDIRECT_URI, await idToken());
        expect((await login({ code, redirect_uri: REDIRECT_URI, ...(iss === undefined ? {} : { iss }) })).status).toBe(200);
      }
      expect(t.provider.tokenRequests).toHaveLength(before + 3);
    });

    it('GET /auth/providers names the authorization endpoint from discovery', async () => {
      const res = await t.app.http().get('/api/v2/auth/providers').expect(200);
      expect(res.body).toEqual({
        telegram: null,
        identity_provider: { name: null, issuer: t.provider.issuer, authorization_endpoint: `${t.provider.issuer}/authorize`, client_id: t.provider.clientId, scope: 'openid email profile' },
      });
    });

    it('verifies the id_token the token endpoint returns', async () => {
      const code = t.provider.issueCode(REDIRECT_URI, await idToken({ audience: 'another-client' }));
      const res = await login({ code, redirect_uri: REDIRECT_URI });
      expect(res.status).toBe(401);
      expect(res.body.code).toBe('invalid_identity_token');
    });
  });

  describe('token checks', () => {
    it('refuses a wrong audience with 401', async () => {
      await expectRejected(await idToken({ audience: 'another-client' }));
    });

    it('refuses a wrong issuer with 401', async () => {
      await expectRejected(await idToken({ issuer: 'https://issuer.example.test' }));
      await expectRejected(await idToken({ issuer: `${t.provider.issuer}/other` }));
    });

    it('refuses an expired token with 401', async () => {
      await expectRejected(await idToken({ expiresIn: -60 }));
    });

    it('refuses a token that was valid once, after it expired on the app clock', async () => {
      const token = await idToken({ expiresIn: 300 });
      t.app.clock.advance(301);
      await expectRejected(token);
    });

    it('refuses a token not valid yet (nbf in the future) with 401', async () => {
      await expectRejected(await idToken({ claims: { nbf: nowSeconds() + 3_600 } }));
    });

    it('refuses a token signed by another key with 401 (same kid, and an unknown kid)', async () => {
      const sameKid = await newSigningKey(t.provider.key.kid);
      await expectRejected(await idToken({ key: sameKid }));
      const otherKid = await newSigningKey('not-published');
      await expectRejected(await idToken({ key: otherKid }));
    });

    it('refuses an unsigned token, a tampered payload and garbage with 401', async () => {
      const token = await idToken();
      const [header, payload] = token.split('.') as [string, string, string];
      const unsignedHeader = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
      await expectRejected(`${unsignedHeader}.${payload}.`);
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
      const forged = Buffer.from(JSON.stringify({ ...claims, sub: 'someone-else' })).toString('base64url');
      await expectRejected(`${header}.${forged}.${token.split('.')[2]}`);
      await expectRejected('not-a-jwt');
    });

    it('refuses a token with an empty subject with 401', async () => {
      await expectRejected(await idToken({ sub: '' }));
    });

    it('does not create an account for a refused token', async () => {
      const sub = newSubject();
      await expectRejected(await idToken({ sub, audience: 'another-client' }));
      const count = await t.app.container.db.repo(Identity).countBy({ kind: 'identity_provider', subject: `${t.provider.issuer}|${sub}` });
      expect(count).toBe(0);
    });
  });

  describe('linking by e-mail', () => {
    it('links a verified e-mail to the existing e-mail account', async () => {
      const existing = await registerUser(t.app);
      const sub = newSubject();
      const res = await login({ id_token: await idToken({ sub, claims: { email: existing.email.toUpperCase(), email_verified: true } }) });
      expect(res.status).toBe(200);
      expect(res.body.is_new_user).toBe(false);
      expect(res.body.user).toMatchObject({ id: existing.id, email: existing.email });
      const profile = await me(res.body.access_token);
      expect(profile.body.auth_methods).toEqual({ messenger: false, identity_provider: true, email: true });
      // The password still works, and the next provider login finds the linked identity.
      const password = await t.app.http().post('/api/v2/auth/login').send({ email: existing.email, password: existing.password });
      expect(password.status).toBe(200);
      expect(password.body.user.id).toBe(existing.id);
      const again = await login({ id_token: await idToken({ sub, claims: { email: existing.email, email_verified: true } }) });
      expect(again.body).toMatchObject({ is_new_user: false, user: { id: existing.id } });
    });

    it('accepts email_verified given as the string "true"', async () => {
      const existing = await registerUser(t.app);
      const res = await login({ id_token: await idToken({ claims: { email: existing.email, email_verified: 'true' } }) });
      expect(res.status).toBe(200);
      expect(res.body.user.id).toBe(existing.id);
    });

    it('refuses an unverified (or unstated) e-mail matching an existing account with 409', async () => {
      const existing = await registerUser(t.app);
      const sub = newSubject();
      const unverified = await login({ id_token: await idToken({ sub, claims: { email: existing.email, email_verified: false } }) });
      expect(unverified.status).toBe(409);
      expect(unverified.body.code).toBe('identity_conflict');
      expect(unverified.headers['set-cookie']).toBeUndefined();
      const unstated = await login({ id_token: await idToken({ sub, claims: { email: existing.email } }) });
      expect(unstated.status).toBe(409);
      // Nothing was linked.
      const identities = await t.app.container.users.identities(existing.id);
      expect(identities.map((i) => i.kind)).toEqual(['email']);
    });
  });

  describe('refresh token', () => {
    it('the refresh_token from the body works at POST /auth/refresh {refresh_token}', async () => {
      const res = await login({ id_token: await idToken() });
      expect(res.status).toBe(200);
      const refreshed = await t.app.http().post('/api/v2/auth/refresh').send({ refresh_token: res.body.refresh_token });
      expect(refreshed.status).toBe(200);
      expect(refreshed.body).toMatchObject({ token_type: 'bearer', expires_in: 900 });
      expect(typeof refreshed.body.refresh_token).toBe('string');
      const profile = await me(refreshed.body.access_token);
      expect(profile.body.id).toBe(res.body.user.id);
      // Rotated: the first refresh token no longer works.
      const reuse = await t.app.http().post('/api/v2/auth/refresh').send({ refresh_token: res.body.refresh_token });
      expect(reuse.status).toBe(401);
    });
  });

  it('handles simultaneous first logins of one subject as one account', async () => {
    const sub = newSubject();
    const email = uniqueEmail('race');
    const tokens = await Promise.all(Array.from({ length: 5 }, () => idToken({ sub, claims: { email, email_verified: true } })));
    const responses = await Promise.all(tokens.map((token) => login({ id_token: token })));
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(new Set(responses.map((r) => r.body.user.id)).size).toBe(1);
    expect(responses.filter((r) => r.body.is_new_user === true)).toHaveLength(1);
  });

  describe('validation', () => {
    it.each<[string, unknown]>([
      ['an empty object', {}],
      ['a JSON array', ['x']],
      ['an empty id_token', { id_token: '' }],
      ['a numeric id_token', { id_token: 42 }],
      ['an overlong id_token', { id_token: 'x'.repeat(20_000) }],
      ['a code without redirect_uri', { code: 'abc' }],
      ['a redirect_uri without code', { redirect_uri: REDIRECT_URI }],
      ['a redirect_uri that is not a URL', { code: 'abc', redirect_uri: 'not a url' }],
      ['a numeric code', { code: 7, redirect_uri: REDIRECT_URI }],
    ])('answers %s with 422', async (_label, body) => {
      const res = await t.app.http().post(PATH).send(body as object);
      expect(res.status).toBe(422);
      expect(res.body.code).toBe('validation_failed');
    });

    it('answers malformed JSON with 400', async () => {
      const res = await t.app.http().post(PATH).set('content-type', 'application/json').send('{"id_token":');
      expect(res.status).toBe(400);
    });
  });
});

describe('identity-provider login with OIDC_JWKS_URL and OIDC_TOKEN_URL (no discovery)', () => {
  const t = useOidcApp((p) => ({ ...fullConfig(p), OIDC_JWKS_URL: p.jwksUrl, OIDC_TOKEN_URL: p.tokenUrl }));
  const { idToken, login } = helpers(t);

  beforeAll(() => {
    t.provider.discoveryEnabled = false;
  });

  it('verifies an id_token and exchanges a code without asking for discovery', async () => {
    expect((await login({ id_token: await idToken() })).status).toBe(200);
    const code = t.provider.issueCode(REDIRECT_URI, await idToken());
    expect((await login({ code, redirect_uri: REDIRECT_URI })).status).toBe(200);
    expect(t.provider.hits.get('/.well-known/openid-configuration')).toBeUndefined();
    expect(t.provider.tokenRequests).toHaveLength(1);
  });

  it('offers no sign-in button without OIDC_AUTHORIZATION_URL (discovery is not asked)', async () => {
    const res = await t.app.http().get('/api/v2/auth/providers').expect(200);
    expect(res.body.identity_provider).toBeNull();
    expect(t.provider.hits.get('/.well-known/openid-configuration')).toBeUndefined();
  });
});

describe('identity-provider login with OIDC_AUTHORIZATION_URL and a name', () => {
  const t = useOidcApp((p) => ({ ...fullConfig(p), OIDC_JWKS_URL: p.jwksUrl, OIDC_TOKEN_URL: p.tokenUrl, OIDC_AUTHORIZATION_URL: `${p.issuer}/login`, OIDC_NAME: 'Acme ID' }));

  it('GET /auth/providers names them without asking for discovery', async () => {
    t.provider.discoveryEnabled = false;
    const res = await t.app.http().get('/api/v2/auth/providers').expect(200);
    expect(res.body.identity_provider).toEqual({ name: 'Acme ID', issuer: t.provider.issuer, authorization_endpoint: `${t.provider.issuer}/login`, client_id: t.provider.clientId, scope: 'openid email profile' });
    expect(t.provider.hits.get('/.well-known/openid-configuration')).toBeUndefined();
  });
});

describe('identity-provider login with only OIDC_JWKS_URL and no discovery document', () => {
  const t = useOidcApp((p) => ({ ...fullConfig(p), OIDC_JWKS_URL: p.jwksUrl }));
  const { idToken, login } = helpers(t);

  beforeAll(() => {
    t.provider.discoveryEnabled = false;
  });

  it('still verifies id_tokens against the configured JWKS', async () => {
    const res = await login({ id_token: await idToken() });
    expect(res.status).toBe(200);
  });

  it('answers the code flow with 503: no token endpoint is known', async () => {
    const res = await login({ code: 'abc', redirect_uri: REDIRECT_URI });
    expect(res.status).toBe(503);
    expect(res.body.code).toBe('feature_disabled');
  });

  it('tries discovery again on the next login and picks up the token endpoint once it answers', async () => {
    const before = t.provider.hits.get('/.well-known/openid-configuration') ?? 0;
    expect(before).toBeGreaterThanOrEqual(2);
    t.provider.discoveryEnabled = true;
    const code = t.provider.issueCode(REDIRECT_URI, await idToken());
    const res = await login({ code, redirect_uri: REDIRECT_URI });
    expect(res.status).toBe(200);
    expect(t.provider.tokenRequests).toHaveLength(1);
    // Complete now: later logins no longer ask for discovery.
    expect((await login({ id_token: await idToken() })).status).toBe(200);
    expect(t.provider.hits.get('/.well-known/openid-configuration')).toBe(before + 1);
  });
});

describe('identity-provider login whose issuer ends with a slash', () => {
  // Providers such as Auth0 use an issuer identifier like "https://tenant.example/", with the slash.
  const t = useOidcApp((p) => ({ ...fullConfig(p), OIDC_ISSUER: `${p.issuer}/` }));
  const { idToken, login } = helpers(t);

  it('accepts tokens whose iss is exactly the configured issuer', async () => {
    const sub = newSubject();
    const first = await login({ id_token: await idToken({ sub, issuer: `${t.provider.issuer}/` }) });
    expect(first.status).toBe(200);
    const second = await login({ id_token: await idToken({ sub, issuer: `${t.provider.issuer}/` }) });
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ is_new_user: false, user: { id: first.body.user.id } });
  });

  it('still refuses other issuers', async () => {
    const res = await login({ id_token: await idToken({ issuer: `${t.provider.issuer}//` }) });
    expect(res.status).toBe(401);
  });
});

describe('identity-provider login with an unreachable provider', () => {
  const holder: { app?: TestApp; provider?: FakeOidcProvider } = {};
  beforeAll(async () => {
    holder.provider = await startFakeOidc();
    const nowhere = await closedPortUrl();
    holder.app = await startTestApp({
      OIDC_ISSUER: holder.provider.issuer,
      OIDC_CLIENT_ID: holder.provider.clientId,
      OIDC_CLIENT_SECRET: holder.provider.clientSecret,
      OIDC_JWKS_URL: holder.provider.jwksUrl,
      OIDC_TOKEN_URL: `${nowhere}/token`,
    });
  });
  afterAll(async () => {
    await holder.app?.close();
    await holder.provider?.close();
  });

  it('answers 503 when the token endpoint cannot be reached', async () => {
    const res = await holder.app!.http().post(PATH).send({ code: 'abc', redirect_uri: REDIRECT_URI });
    expect(res.status).toBe(503);
    expect(res.body.code).toBe('service_unavailable');
  });
});

describe('identity-provider login with no discovery reachable', () => {
  const holder: { app?: TestApp } = {};
  beforeAll(async () => {
    holder.app = await startTestApp({ OIDC_ISSUER: await closedPortUrl(), OIDC_CLIENT_ID: 'client' });
  });
  afterAll(async () => {
    await holder.app?.close();
  });

  it('answers 503 service_unavailable', async () => {
    const res = await holder.app!.http().post(PATH).send({ id_token: 'a.b.c' });
    expect(res.status).toBe(503);
    expect(res.body.code).toBe('service_unavailable');
  });
});

describe('identity-provider login not configured', () => {
  const t = useTestApp();

  it('answers 503 feature_disabled', async () => {
    const res = await t.app.http().post(PATH).send({ id_token: 'a.b.c' });
    expect(res.status).toBe(503);
    expect(res.body.code).toBe('feature_disabled');
    expect(res.body.detail).toMatch(/identity-provider login is not configured/i);
  });
});
