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
  }),
]);
const RefreshBody = z.object({ refresh_token: z.string().min(1).max(256).optional() });
const ForgotBody = z.object({ email: EmailSchema });
const ResetBody = z.object({ token: z.string().min(1).max(256), password: PasswordSchema });
const ChangePasswordBody = z.object({ current_password: z.string().max(1024), new_password: PasswordSchema });

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
    const body = parseBody(ctx, z.object({ code: z.string().min(4).max(32) }));
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
