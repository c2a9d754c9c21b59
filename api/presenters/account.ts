/**
 * The account as the contract shows it (spec 2.3, 2.4, 2.9): the user, the balance, settings,
 * sessions and keys. The admin command line prints the same objects.
 */
import type { ApiKey, Identity, Session, User } from '../../shared/db/entities';
import type { Plan, PlanName } from '../../shared/plans';
import { tokenBalance } from '../../shared/billing';
import { iso } from './dates';
import type { AuthorizationStart } from '../../shared/auth/identity-provider';

export interface UserView {
  id: number;
  name: string;
  email: string | null;
  messenger_username: string | null;
  avatar_url: string | null;
  plan: PlanName;
  plan_expires_at: string | null;
  token_balance: number;
  token_limit: number;
  tokens_used_this_period: number;
  rate_limit_hourly: number;
  rate_limit_daily: number;
  auth_methods: { messenger: boolean; identity_provider: boolean; email: boolean };
}

/** `plan` is the plan in force (an expired paid plan shows as `free`). */
export function presentUser(user: User, plan: Plan, identities: Identity[]): UserView {
  return {
    id: user.id,
    name: user.name,
    email: user.email,
    messenger_username: user.messengerUsername,
    avatar_url: user.avatarUrl,
    plan: plan.name,
    plan_expires_at: plan.name === 'free' ? null : iso(user.planExpiresAt),
    token_balance: tokenBalance(user),
    token_limit: plan.tokenLimit,
    tokens_used_this_period: user.tokensUsedThisPeriod,
    rate_limit_hourly: plan.hourlyLimit,
    rate_limit_daily: plan.dailyLimit,
    auth_methods: presentAuthMethods(identities),
  };
}

/** Which ways of signing in an account has. */
export function presentAuthMethods(identities: Identity[]): { messenger: boolean; identity_provider: boolean; email: boolean } {
  return {
    messenger: identities.some((i) => i.kind === 'messenger'),
    identity_provider: identities.some((i) => i.kind === 'identity_provider'),
    email: identities.some((i) => i.kind === 'email'),
  };
}

export function presentLoginUser(user: User, plan: Plan, withEmail: boolean) {
  return {
    id: user.id,
    name: user.name,
    plan: plan.name,
    token_balance: tokenBalance(user),
    ...(withEmail ? { email: user.email } : {}),
  };
}

export function presentBalance(user: User, plan: Plan) {
  return {
    plan: plan.name,
    token_balance: tokenBalance(user),
    plan_tokens_remaining: user.subscriptionTokens,
    bonus_tokens: user.bonusTokens,
    held_tokens: user.heldTokens,
    plan_expires_at: plan.name === 'free' ? null : iso(user.planExpiresAt),
    next_refill_at: iso(user.nextRefillAt),
  };
}

export function presentSettings(user: User) {
  return {
    language: user.language,
    image_format: user.imageFormat,
    notifications_enabled: user.notificationsEnabled,
    default_image_size: user.defaultImageSize,
  };
}

export function presentSession(session: Session, currentSessionId: number | null) {
  return {
    id: session.id,
    created_at: iso(session.createdAt),
    last_used_at: iso(session.lastUsedAt),
    user_agent: session.userAgent,
    current: session.id === currentSessionId,
  };
}

/** A key as listed: never its secret (that is shown once, when it is made). */
export function presentApiKey(key: ApiKey) {
  return { id: key.id, name: key.name, prefix: key.prefix, last_four: key.lastFour, created_at: iso(key.createdAt), last_used_at: iso(key.lastUsedAt) };
}

/** GET /auth/providers: the ways of signing in this server offers, and what a browser needs to start each. */
export function presentProviders(telegramBotId: number | null, identityProvider: AuthorizationStart | null) {
  return {
    telegram: telegramBotId === null ? null : { bot_id: telegramBotId },
    identity_provider:
      identityProvider === null
        ? null
        : {
            name: identityProvider.name ?? null,
            issuer: identityProvider.issuer,
            authorization_endpoint: identityProvider.authorizationEndpoint,
            client_id: identityProvider.clientId,
            scope: identityProvider.scope,
          },
  };
}
