/**
 * `Authorization: Bearer <token>` where the token is an access token (JWT of a live session) or
 * an API key (`gsk_...`, only for plans with API access). Sets `ctx.state.caller` and the
 * rate-limit headers every authenticated response carries.
 */
import type { Next } from 'koa';
import { looksLikeApiKey } from '../../shared/auth/api-keys';
import { AppError } from '../../shared/errors';
import type { LimitSnapshot } from '../../shared/limits';
import type { AppContext, Caller } from '../context';

/** The credential: `Authorization: Bearer …`, or `x-api-key` as Anthropic's clients send it. */
function bearerToken(ctx: AppContext): string {
  const header = ctx.get('authorization');
  const apiKey = ctx.get('x-api-key').trim();
  if (!header && apiKey) return apiKey;
  if (!header) throw new AppError('not_authenticated');
  const match = /^Bearer[ ]+([^\s]+)\s*$/i.exec(header);
  if (!match?.[1]) throw new AppError('not_authenticated');
  return match[1];
}

async function authenticate(ctx: AppContext, token: string): Promise<Caller> {
  const { apiKeys, accessTokens, sessions, users, plans } = ctx.container;
  if (looksLikeApiKey(token)) {
    const found = await apiKeys.authenticate(token);
    if (!found) throw new AppError('invalid_token');
    const { key, user } = found;
    const plan = plans.get(users.effectivePlan(user));
    // A key outlives a downgrade, but is refused on every call until the plan allows API access.
    if (!plan.apiAccess) throw new AppError('insufficient_plan');
    return { user, plan, sessionId: null, apiKeyId: key.id };
  }
  const claims = await accessTokens.verify(token);
  if (!claims) throw new AppError('invalid_token');
  if (!(await sessions.isActive(claims.sessionId, claims.userId))) throw new AppError('invalid_token');
  const user = await users.findById(claims.userId);
  if (!user) throw new AppError('invalid_token');
  return { user, plan: plans.get(users.effectivePlan(user)), sessionId: claims.sessionId, apiKeyId: null };
}

export function setRateLimitHeaders(ctx: AppContext, snapshot: LimitSnapshot): void {
  ctx.set('X-RateLimit-Limit-Hour', String(snapshot.hour?.limit ?? 0));
  ctx.set('X-RateLimit-Limit-Day', String(snapshot.day?.limit ?? 0));
  if (snapshot.hour) ctx.set('X-RateLimit-Remaining-Hour', String(snapshot.hour.remaining));
  else ctx.remove('X-RateLimit-Remaining-Hour');
  if (snapshot.day) ctx.set('X-RateLimit-Remaining-Day', String(snapshot.day.remaining));
  else ctx.remove('X-RateLimit-Remaining-Day');
}

export async function requireAuth(ctx: AppContext, next: Next): Promise<void> {
  // Routers sharing a prefix may each ask; the first one authenticated the request.
  if (ctx.state.caller) return next();
  const caller = await authenticate(ctx, bearerToken(ctx));
  ctx.state.caller = caller;
  // The limits live in Redis: while it is away, reads still answer (without the headers);
  // a generation request then meets the outage where it counts against the limit (503).
  const snapshot = await ctx.container.generationLimiter.snapshot(caller.user.id, caller.plan).catch(() => null);
  if (snapshot) setRateLimitHeaders(ctx, snapshot);
  await next();
}

/**
 * After `requireAuth` (or `optionalAuth`) on every route that administers the account rather
 * than uses it: API keys (create, list, delete), password, e-mail and profile changes, settings
 * writes, sessions, identity links, logout, account deletion, and buying or redeeming when those
 * come. A key is a server's credential: one that leaked must not be able to mint keys that
 * outlive its revocation, lock the owner out or delete the account (decisions.md "API keys").
 */
export async function sessionOnly(ctx: AppContext, next: Next): Promise<void> {
  if (ctx.state.caller && ctx.state.caller.apiKeyId !== null) throw new AppError('api_key_not_allowed');
  await next();
}

/** Like `requireAuth`, but no credential at all is fine (the caller stays unset). */
export async function optionalAuth(ctx: AppContext, next: Next): Promise<void> {
  if (ctx.get('authorization') || ctx.get('x-api-key')) return requireAuth(ctx, next);
  await next();
}
