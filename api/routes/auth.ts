/** Accounts and sessions: spec section 5, decisions.md "Accounts and sessions". */
import Router from '@koa/router';
import { z } from 'zod';
import { ACCESS_TOKEN_TTL_SECONDS } from '../../shared/auth/access-tokens';
import type { SignedIn } from '../../shared/auth/password-accounts';
import type { ClientInfo } from '../../shared/auth/sessions';
import { REFRESH_TOKEN_TTL_DAYS } from '../../shared/auth/sessions';
import { presentAuthMethods, presentLoginUser, presentProviders, presentSession } from '../presenters/account';
import { AppError } from '../../shared/errors';
import { AppContext, AppCustom, AppState, callerOf } from '../context';
import { EmailSchema, parseBody, parseId, PasswordSchema } from '../http';
import { optionalAuth, requireAuth, sessionOnly } from '../middleware/auth';
import type { RouteDoc } from '../openapi/registry';
import { AuthMethods, AuthProviders, IdentityProviderTokenResponse, RefreshResponse, SessionItem, TokenResponse } from '../openapi/schemas/account';
import { IdParam } from '../openapi/schemas/params';

export const REFRESH_COOKIE = 'refresh_token';
const COOKIE_PATH = '/api/v2/auth';

const RegisterBody = z.object({
  email: EmailSchema,
  password: PasswordSchema,
  name: z.string().trim().min(1).max(200).optional(),
});
const LoginBody = z.object({ email: z.string().max(320), password: z.string().max(1024) });
const MessengerBody = z
  .object({
    id: z.number().int().positive(),
    first_name: z.string().max(256),
    last_name: z.string().max(256).optional(),
    username: z.string().max(64).optional(),
    photo_url: z.string().max(2048).optional(),
    auth_date: z.number().int().positive(),
    hash: z.string().regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex characters'),
  })
  .catchall(z.union([z.string().max(2048), z.number(), z.boolean()]));
const IdentityProviderBody = z.union([
  z.object({ id_token: z.string().min(1).max(16_384) }),
  z.object({
    code: z.string().min(1).max(4096),
    redirect_uri: z.url().max(2048),
    // RFC 7636: 43-128 unreserved characters.
    code_verifier: z.string().regex(/^[A-Za-z0-9._~-]{43,128}$/, 'must be 43-128 characters of A-Z, a-z, 0-9, ".", "_", "~" and "-"').optional(),
    // RFC 9207: the authorization response's `iss`, when the provider sent one.
    iss: z.string().min(1).max(2048).optional(),
  }),
]);
const RefreshBody = z.object({ refresh_token: z.string().min(1).max(256).optional() });
const ForgotBody = z.object({ email: EmailSchema });
const ResetBody = z.object({ token: z.string().min(1).max(256), password: PasswordSchema });
const ChangePasswordBody = z.object({ current_password: z.string().max(1024), new_password: PasswordSchema });
const LinkBody = z.object({ code: z.string().min(4).max(32) });

export function clientInfo(ctx: AppContext): ClientInfo {
  return { userAgent: ctx.get('user-agent') || null, ip: ctx.ip || null };
}

function setRefreshCookie(ctx: AppContext, token: string): void {
  ctx.cookies.set(REFRESH_COOKIE, token, {
    httpOnly: true,
    path: COOKIE_PATH,
    sameSite: 'lax',
    secure: ctx.secure,
    maxAge: REFRESH_TOKEN_TTL_DAYS * 86_400_000,
    overwrite: true,
  });
}

function clearRefreshCookie(ctx: AppContext): void {
  ctx.cookies.set(REFRESH_COOKIE, '', { httpOnly: true, path: COOKIE_PATH, sameSite: 'lax', secure: ctx.secure, maxAge: 0, overwrite: true });
}

async function tokenResponse(ctx: AppContext, signedIn: SignedIn, options: { userEmail: boolean }) {
  const { accessTokens, plans, users } = ctx.container;
  setRefreshCookie(ctx, signedIn.refreshToken);
  return {
    access_token: await accessTokens.issue({ userId: signedIn.user.id, sessionId: signedIn.sessionId }),
    token_type: 'bearer',
    expires_in: ACCESS_TOKEN_TTL_SECONDS,
    user: presentLoginUser(signedIn.user, plans.get(users.effectivePlan(signedIn.user)), options.userEmail),
  };
}

export function authRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>({ prefix: '/api/v2/auth' });

  router.post('/register', async (ctx) => {
    await ctx.container.authLimiter.hit('register', ctx.ip);
    const body = parseBody(ctx, RegisterBody);
    const signedIn = await ctx.container.passwords.register(body, clientInfo(ctx));
    ctx.status = 201;
    ctx.body = await tokenResponse(ctx, signedIn, { userEmail: true });
  });

  router.post('/login', async (ctx) => {
    await ctx.container.authLimiter.hit('login', ctx.ip);
    const body = parseBody(ctx, LoginBody);
    const signedIn = await ctx.container.passwords.login(body, clientInfo(ctx));
    ctx.body = await tokenResponse(ctx, signedIn, { userEmail: true });
  });

  // Public: the dashboard's sign-in page asks which buttons to show (nothing secret: a bot's id
  // and an OAuth client id are what every browser sees in the redirect anyway).
  router.get('/providers', async (ctx) => {
    const { messenger, identityProvider } = ctx.container;
    ctx.set('Cache-Control', 'no-cache');
    ctx.body = presentProviders(messenger.botId, await identityProvider.authorizationStart());
  });

  router.post('/messenger', async (ctx) => {
    const body = parseBody(ctx, MessengerBody);
    const signedIn = await ctx.container.messenger.login(body, clientInfo(ctx));
    ctx.body = await tokenResponse(ctx, signedIn, { userEmail: false });
  });

  router.post('/identity-provider', async (ctx) => {
    const body = parseBody(ctx, IdentityProviderBody);
    const signedIn = await ctx.container.identityProvider.login(body, clientInfo(ctx));
    const response = await tokenResponse(ctx, signedIn, { userEmail: true });
    ctx.body = { ...response, refresh_token: signedIn.refreshToken, is_new_user: signedIn.isNewUser };
  });

  router.post('/refresh', async (ctx) => {
    const body = parseBody(ctx, RefreshBody);
    const presented = body.refresh_token ?? ctx.cookies.get(REFRESH_COOKIE);
    if (!presented) throw new AppError('not_authenticated');
    const rotated = await ctx.container.sessions.refresh(presented);
    setRefreshCookie(ctx, rotated.refreshToken);
    ctx.body = {
      access_token: await ctx.container.accessTokens.issue({ userId: rotated.userId, sessionId: rotated.sessionId }),
      token_type: 'bearer',
      expires_in: ACCESS_TOKEN_TTL_SECONDS,
      // A client that sent the token in the body cannot read the cookie: it gets the next one here.
      ...(body.refresh_token ? { refresh_token: rotated.refreshToken } : {}),
    };
  });

  // A key has no session to end; it must not end one through a refresh cookie either.
  router.post('/logout', optionalAuth, sessionOnly, async (ctx) => {
    const body = parseBody(ctx, RefreshBody);
    const caller = ctx.state.caller;
    const { sessions } = ctx.container;
    if (caller?.sessionId) {
      await sessions.revoke(caller.user.id, caller.sessionId, 'logout').catch(() => undefined);
    } else {
      const presented = body.refresh_token ?? ctx.cookies.get(REFRESH_COOKIE);
      if (!presented) throw new AppError('not_authenticated');
      await sessions.revokeByRefreshToken(presented, 'logout');
    }
    clearRefreshCookie(ctx);
    ctx.status = 204;
  });

  router.post('/forgot-password', async (ctx) => {
    await ctx.container.authLimiter.hit('forgot_password', ctx.ip);
    const body = parseBody(ctx, ForgotBody);
    await ctx.container.passwords.forgotPassword(body.email);
    ctx.status = 202;
    ctx.body = { detail: 'If an account exists for this address, a reset link is on its way' };
  });

  router.post('/reset-password', async (ctx) => {
    const body = parseBody(ctx, ResetBody);
    await ctx.container.passwords.resetPassword(body.token, body.password);
    ctx.status = 204;
  });

  router.post('/change-password', requireAuth, sessionOnly, async (ctx) => {
    const body = parseBody(ctx, ChangePasswordBody);
    const caller = callerOf(ctx);
    await ctx.container.passwords.changePassword(caller.user.id, caller.sessionId, body.current_password, body.new_password);
    ctx.status = 204;
  });

  router.post('/link', requireAuth, sessionOnly, async (ctx) => {
    const body = parseBody(ctx, LinkBody);
    const caller = callerOf(ctx);
    await ctx.container.links.redeem(caller.user.id, body.code);
    const identities = await ctx.container.users.identities(caller.user.id);
    ctx.body = {
      linked: true,
      auth_methods: presentAuthMethods(identities),
    };
  });

  router.get('/sessions', requireAuth, sessionOnly, async (ctx) => {
    const caller = callerOf(ctx);
    const sessions = await ctx.container.sessions.list(caller.user.id);
    ctx.body = {
      sessions: sessions.map((s) => presentSession(s, caller.sessionId)),
    };
  });

  router.delete('/sessions/:id', requireAuth, sessionOnly, async (ctx) => {
    await ctx.container.sessions.revoke(callerOf(ctx).user.id, parseId(ctx.params.id), 'revoked_by_user');
    ctx.status = 204;
  });

  return router;
}

const tag = 'Accounts and sessions';
const tokenAnswer = (description: string) => ({ description, schema: TokenResponse });

export const authRouteDocs: RouteDoc[] = [
  { method: 'post', path: '/api/v2/auth/register', tag, auth: 'none', summary: 'Create an account (free plan) and sign in', body: RegisterBody, bodyExample: { email: 'me@example.com', password: 'a long password', name: 'Me' }, responses: { 201: tokenAnswer('Signed in; the refresh cookie is set') }, errors: ['email_taken', 'rate_limited'] },
  { method: 'post', path: '/api/v2/auth/login', tag, auth: 'none', summary: 'Sign in with e-mail and password', body: LoginBody, bodyExample: { email: 'me@example.com', password: 'a long password' }, responses: { 200: tokenAnswer('Signed in; the refresh cookie is set') }, errors: ['invalid_credentials', 'rate_limited'] },
  { method: 'get', path: '/api/v2/auth/providers', tag, auth: 'none', summary: 'The other ways in this server offers, for a sign-in page', description: "Telegram's `bot_id` (for oauth.telegram.org/auth) and the OpenID provider's authorization endpoint, client id and scope (for the code flow); null for a way that is not set up.", responses: { 200: { description: 'The ways in', schema: AuthProviders } } },
  { method: 'post', path: '/api/v2/auth/messenger', tag, auth: 'none', summary: 'Sign in with the Telegram Login Widget', description: 'The first login creates a free account without e-mail. 503 when the server has no bot token.', body: MessengerBody, responses: { 200: tokenAnswer('Signed in') }, errors: ['invalid_messenger_login', 'feature_disabled'] },
  { method: 'post', path: '/api/v2/auth/identity-provider', tag, auth: 'none', summary: 'Sign in with the OpenID Connect provider', description: 'An `id_token`, or an authorization `code` with its `redirect_uri` (and the PKCE `code_verifier` when the flow sent a challenge: passed on to the token endpoint; and the authorization response\'s `iss` when it had one, RFC 9207: another issuer is 401 before the code is exchanged).', body: IdentityProviderBody, responses: { 200: { description: 'Signed in', schema: IdentityProviderTokenResponse } }, errors: ['invalid_identity_token', 'identity_conflict', 'feature_disabled'] },
  { method: 'post', path: '/api/v2/auth/refresh', tag, auth: 'refresh', summary: 'A new access token for the refresh cookie (or body token); rotates it', description: 'A refresh token used twice revokes its session.', body: RefreshBody, responses: { 200: { description: 'A new access token', schema: RefreshResponse } } },
  { method: 'post', path: '/api/v2/auth/logout', tag, auth: 'refresh', summary: 'End the session (access token, refresh cookie or body token)', description: 'An API key is 403 `api_key_not_allowed`: it has no session to end.', body: RefreshBody, responses: { 204: { description: 'Signed out; the cookie is cleared' } }, errors: ['api_key_not_allowed', 'insufficient_plan'] },
  { method: 'post', path: '/api/v2/auth/forgot-password', tag, auth: 'none', summary: 'Mail a one-hour, single-use reset link', body: ForgotBody, responses: { 202: { description: 'Always, whether or not the address has an account', schema: z.strictObject({ detail: z.string() }) } }, errors: ['rate_limited'] },
  { method: 'post', path: '/api/v2/auth/reset-password', tag, auth: 'none', summary: 'Set a new password with a reset link', description: 'Revokes every session and every other outstanding link (API keys keep working).', body: ResetBody, responses: { 204: { description: 'Password changed' } }, errors: ['invalid_reset_token'] },
  { method: 'post', path: '/api/v2/auth/change-password', tag, auth: 'session', summary: 'Change the password', description: 'Revokes the other sessions and every outstanding reset link.', body: ChangePasswordBody, responses: { 204: { description: 'Password changed' } }, errors: ['wrong_password'] },
  { method: 'post', path: '/api/v2/auth/link', tag, auth: 'session', summary: "Link the bot's Telegram account with a code from its /link", description: 'A wrong, expired or used code is 422 on `code`; 409 `identity_conflict` names its `reason`.', body: LinkBody, responses: { 200: { description: 'Linked', schema: z.strictObject({ linked: z.literal(true), auth_methods: AuthMethods }) } }, errors: ['identity_conflict'] },
  { method: 'get', path: '/api/v2/auth/sessions', tag, auth: 'session', summary: "The caller's live sessions", responses: { 200: { description: 'Sessions, `current` marking this one', schema: z.strictObject({ sessions: z.array(SessionItem) }) } } },
  { method: 'delete', path: '/api/v2/auth/sessions/:id', tag, auth: 'session', summary: 'Revoke a session', params: IdParam, responses: { 204: { description: 'Revoked' } } },
];
