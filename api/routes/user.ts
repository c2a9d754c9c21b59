/** The caller's own account: spec 4.7 (user, balance, settings) and account deletion. */
import Router from '@koa/router';
import { z } from 'zod';
import { presentBalance, presentSettings, presentUser } from '../presenters/account';
import { deleteAccount } from '../../shared/accounts/delete-account';
import { AppContext, AppCustom, AppState, callerOf } from '../context';
import { parseBody } from '../http';
import { requireAuth, sessionOnly } from '../middleware/auth';
import type { RouteDoc } from '../openapi/registry';
import { Balance, Settings, User } from '../openapi/schemas/account';

const ProfilePatch = z.object({
  name: z.string().trim().min(1, 'must not be empty').max(200).optional(),
  avatar_url: z
    .union([z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).max(2048), z.null()])
    .optional(),
});

const SettingsPatch = z.object({
  language: z.enum(['en', 'ru']).optional(),
  image_format: z.enum(['webp', 'png', 'jpeg']).optional(),
  notifications_enabled: z.boolean().optional(),
  default_image_size: z
    .string()
    .regex(/^[1-9][0-9]{1,4}x[1-9][0-9]{1,4}$/, 'must look like <width>x<height>')
    .optional(),
});

async function currentUserView(ctx: AppContext) {
  const { users, plans } = ctx.container;
  const user = await users.getById(callerOf(ctx).user.id);
  return presentUser(user, plans.get(users.effectivePlan(user)), await users.identities(user.id));
}

export function userRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>({ prefix: '/api/v2/user' });
  router.use(requireAuth);

  router.get('/me', async (ctx) => {
    ctx.body = await currentUserView(ctx);
  });

  router.patch('/me', sessionOnly, async (ctx) => {
    const body = parseBody(ctx, ProfilePatch);
    await ctx.container.users.updateProfile(callerOf(ctx).user.id, { name: body.name, avatarUrl: body.avatar_url });
    ctx.body = await currentUserView(ctx);
  });

  router.delete('/me', sessionOnly, async (ctx) => {
    await deleteAccount(ctx.container, callerOf(ctx).user.id);
    ctx.status = 204;
  });

  router.get('/balance', async (ctx) => {
    const { users, plans } = ctx.container;
    const user = await users.getById(callerOf(ctx).user.id);
    ctx.body = presentBalance(user, plans.get(users.effectivePlan(user)));
  });

  router.get('/settings', async (ctx) => {
    ctx.body = presentSettings(callerOf(ctx).user);
  });

  // A key may read the settings but not change them (decisions.md "API keys": settings reads).
  router.patch('/settings', sessionOnly, async (ctx) => {
    const body = parseBody(ctx, SettingsPatch);
    const user = await ctx.container.users.updateSettings(callerOf(ctx).user.id, {
      language: body.language,
      imageFormat: body.image_format,
      notificationsEnabled: body.notifications_enabled,
      defaultImageSize: body.default_image_size,
    });
    ctx.body = presentSettings(user);
  });

  return router;
}

const tag = 'Account';

export const userRouteDocs: RouteDoc[] = [
  { method: 'get', path: '/api/v2/user/me', tag, auth: 'user', summary: 'The profile: plan, balance, limits, sign-in methods', responses: { 200: { description: 'The user', schema: User } } },
  { method: 'patch', path: '/api/v2/user/me', tag, auth: 'session', summary: 'Change the name or avatar', body: ProfilePatch, bodyExample: { name: 'Ada' }, responses: { 200: { description: 'The user as changed', schema: User } } },
  { method: 'delete', path: '/api/v2/user/me', tag, auth: 'session', summary: 'Delete the account', description: 'Removes the account and its files; the ledger is kept anonymised.', responses: { 204: { description: 'Deleted' } } },
  { method: 'get', path: '/api/v2/user/balance', tag, auth: 'user', summary: 'Plan, tokens (subscription + bonus), held tokens, expiry, next refill', responses: { 200: { description: 'The balance', schema: Balance } } },
  { method: 'get', path: '/api/v2/user/settings', tag, auth: 'user', summary: 'Language, image format, notifications, default image size', responses: { 200: { description: 'The settings', schema: Settings } } },
  { method: 'patch', path: '/api/v2/user/settings', tag, auth: 'session', summary: 'Change settings', body: SettingsPatch, bodyExample: { language: 'ru' }, responses: { 200: { description: 'The settings as changed', schema: Settings } } },
];
