/** The account's answers (api/presenters/account.ts and the auth routes' token responses). */
import { z } from 'zod';
import { presentApiKey, presentAuthMethods, presentBalance, presentLoginUser, presentProviders, presentSession, presentSettings, UserView } from '../../presenters/account';
import { PLAN_NAMES } from '../../../shared/plans';
import type { PresenterMatches } from './shape';

export const Timestamp = z.iso.datetime().meta({ description: 'ISO 8601, UTC', example: '2026-11-24T23:00:00.000Z' });
export const PlanName = z.enum(PLAN_NAMES).meta({ id: 'PlanName' });

export const AuthMethods = z.strictObject({ messenger: z.boolean(), identity_provider: z.boolean(), email: z.boolean() }).meta({ id: 'AuthMethods' });

export const LoginUser = z
  .strictObject({
    id: z.number().int(),
    name: z.string(),
    plan: PlanName,
    token_balance: z.number().int(),
    email: z.string().nullable().optional().meta({ description: 'Not on messenger login' }),
  })
  .meta({ id: 'LoginUser' });

export const TokenResponse = z
  .strictObject({
    access_token: z.string().meta({ description: 'HS256 JWT, valid `expires_in` seconds; send as `Authorization: Bearer …`' }),
    token_type: z.literal('bearer'),
    expires_in: z.number().int(),
    user: LoginUser,
  })
  .meta({ id: 'TokenResponse', description: 'Also sets the httpOnly `refresh_token` cookie (Path=/api/v2/auth)' });

export const IdentityProviderTokenResponse = TokenResponse.extend({ refresh_token: z.string(), is_new_user: z.boolean() }).meta({ id: 'IdentityProviderTokenResponse' });

export const RefreshResponse = z
  .strictObject({
    access_token: z.string(),
    token_type: z.literal('bearer'),
    expires_in: z.number().int(),
    refresh_token: z.string().optional().meta({ description: 'Only when the refresh token came in the body (the cookie is rotated either way)' }),
  })
  .meta({ id: 'RefreshResponse' });

export const User = z
  .strictObject({
    id: z.number().int(),
    name: z.string(),
    email: z.string().nullable(),
    messenger_username: z.string().nullable(),
    avatar_url: z.string().nullable(),
    plan: PlanName.meta({ description: 'The plan in force (an expired paid plan shows as free)' }),
    plan_expires_at: Timestamp.nullable(),
    token_balance: z.number().int(),
    token_limit: z.number().int(),
    tokens_used_this_period: z.number().int(),
    rate_limit_hourly: z.number().int().meta({ description: '0: unlimited' }),
    rate_limit_daily: z.number().int().meta({ description: '0: unlimited' }),
    auth_methods: AuthMethods,
  })
  .meta({ id: 'User' });

export const Balance = z
  .strictObject({
    plan: PlanName,
    token_balance: z.number().int().meta({ description: 'plan_tokens_remaining + bonus_tokens' }),
    plan_tokens_remaining: z.number().int(),
    bonus_tokens: z.number().int(),
    held_tokens: z.number().int().meta({ description: 'Held by pending generations' }),
    plan_expires_at: Timestamp.nullable(),
    next_refill_at: Timestamp.nullable(),
  })
  .meta({ id: 'Balance' });

export const Settings = z
  .strictObject({
    language: z.string().meta({ description: 'en or ru' }),
    image_format: z.string().meta({ description: 'webp, png or jpeg' }),
    notifications_enabled: z.boolean(),
    default_image_size: z.string(),
  })
  .meta({ id: 'Settings' });

export const SessionItem = z
  .strictObject({ id: z.number().int(), created_at: Timestamp.nullable(), last_used_at: Timestamp.nullable(), user_agent: z.string().nullable(), current: z.boolean() })
  .meta({ id: 'Session' });

export const ApiKeyItem = z
  .strictObject({ id: z.number().int(), name: z.string(), prefix: z.string(), last_four: z.string(), created_at: Timestamp.nullable(), last_used_at: Timestamp.nullable() })
  .meta({ id: 'ApiKey' });

export const ApiKeyCreated = z
  .strictObject({ id: z.number().int(), name: z.string(), key: z.string().meta({ description: 'The secret (`gsk_` + 44 base62): shown this once' }), created_at: Timestamp.nullable() })
  .meta({ id: 'ApiKeyCreated' });

export const AuthProviders = z
  .strictObject({
    telegram: z
      .strictObject({ bot_id: z.number().int().meta({ description: "The bot's numeric id, oauth.telegram.org's `bot_id`" }) })
      .nullable()
      .meta({ description: 'Null without TELEGRAM_BOT_TOKEN' }),
    identity_provider: z
      .strictObject({
        name: z.string().nullable().meta({ description: 'OIDC_NAME, for "Sign in with <name>"' }),
        issuer: z.string().meta({ description: "OIDC_ISSUER: the `iss` an authorization response must carry when it has one (RFC 9207)" }),
        authorization_endpoint: z.string(),
        client_id: z.string(),
        scope: z.string().meta({ example: 'openid email profile' }),
      })
      .nullable()
      .meta({ description: 'Null when OIDC is off or no authorization endpoint is known' }),
  })
  .meta({ id: 'AuthProviders' });

const checks: [
  PresenterMatches<UserView, typeof User>,
  PresenterMatches<ReturnType<typeof presentAuthMethods>, typeof AuthMethods>,
  PresenterMatches<ReturnType<typeof presentBalance>, typeof Balance>,
  PresenterMatches<ReturnType<typeof presentSettings>, typeof Settings>,
  PresenterMatches<ReturnType<typeof presentSession>, typeof SessionItem>,
  PresenterMatches<ReturnType<typeof presentApiKey>, typeof ApiKeyItem>,
  PresenterMatches<ReturnType<typeof presentProviders>, typeof AuthProviders>,
] = [true, true, true, true, true, true, true];
void checks;
void presentLoginUser;
