/** Factories: accounts made through the same services the API uses. */
import crypto from 'node:crypto';
import { hashPassword } from '../../shared/auth/passwords';
import type { PlanName } from '../../shared/plans';
import type { TestApp } from './app';

export interface TestUser {
  id: number;
  email: string;
  password: string;
  accessToken: string;
  refreshToken: string;
}

export function uniqueEmail(tag = 'user'): string {
  return `${tag}-${crypto.randomBytes(5).toString('hex')}@example.test`;
}

/** Registers over HTTP and returns the tokens. */
export async function registerUser(app: TestApp, overrides: { email?: string; password?: string; name?: string } = {}): Promise<TestUser> {
  const email = overrides.email ?? uniqueEmail();
  const password = overrides.password ?? 'correct horse battery';
  const res = await app.http().post('/api/v2/auth/register').send({ email, password, name: overrides.name });
  if (res.status !== 201) throw new Error(`register failed: ${res.status} ${JSON.stringify(res.body)}`);
  const cookie = ([] as string[]).concat(res.headers['set-cookie'] ?? []).find((c) => c.startsWith('refresh_token='));
  const refreshToken = cookie ? decodeURIComponent(cookie.split(';')[0]!.slice('refresh_token='.length)) : '';
  return { id: res.body.user.id, email, password, accessToken: res.body.access_token, refreshToken };
}

/** A registered user moved to `plan` (and optionally given bonus tokens) by the admin services. */
export async function userOnPlan(app: TestApp, plan: PlanName, bonusTokens = 0): Promise<TestUser> {
  const user = await registerUser(app);
  if (plan !== 'free') await app.container.users.setPlan(user.id, plan);
  if (bonusTokens > 0) await app.container.users.grantTokens(user.id, bonusTokens);
  return user;
}

export async function createUserDirect(app: TestApp, email: string, password: string, plan: PlanName = 'free') {
  const passwordHash = await hashPassword(password);
  return app.container.db.transaction((em) =>
    app.container.users.create(em, { name: 'direct', email, plan, identity: { kind: 'email', subject: email, passwordHash } }),
  );
}

export function refreshCookieFrom(setCookie: string[] | string | undefined): string | undefined {
  const cookie = ([] as string[]).concat(setCookie ?? []).find((c) => c.startsWith('refresh_token='));
  return cookie ? decodeURIComponent(cookie.split(';')[0]!.slice('refresh_token='.length)) : undefined;
}
