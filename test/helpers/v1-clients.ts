/**
 * The official `openai` client pointed at a test app's /v1, on a user's API key or session, and
 * what the /v1 media suites compare against /api/v2: balances, ledger rows, history.
 */
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { Generation, LedgerEntry, User } from '../../shared/db/entities';
import type { TestApp } from './app';
import { TestUser, userOnPlan } from './users';

export function v1BaseURL(app: TestApp): string {
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1`;
}

export async function apiKeyOf(app: TestApp, user: TestUser): Promise<string> {
  const res = await app.http().post('/api/v2/keys').set('authorization', `Bearer ${user.accessToken}`).send({ name: 'sdk' });
  if (res.status !== 201) throw new Error(`key: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.key as string;
}

/** The official client on `credential` (an API key or an access token), without automatic retries. */
export function openaiOn(app: TestApp, credential: string, maxRetries = 0): OpenAI {
  return new OpenAI({ apiKey: credential, baseURL: v1BaseURL(app), maxRetries });
}

/** A vip account (API keys need vip or elite) with `bonus` tokens, and the client on its key. */
export async function vipClient(app: TestApp, bonus = 0): Promise<{ user: TestUser; openai: OpenAI }> {
  const user = await userOnPlan(app, 'vip', bonus);
  return { user, openai: openaiOn(app, await apiKeyOf(app, user)) };
}

export async function balanceOf(app: TestApp, userId: number): Promise<{ total: number; held: number }> {
  const row = await app.container.db.repo(User).findOneByOrFail({ id: userId });
  return { total: row.subscriptionTokens + row.bonusTokens, held: row.heldTokens };
}

/** The user's newest generation row. */
export async function lastGeneration(app: TestApp, userId: number): Promise<Generation> {
  const row = await app.container.db.repo(Generation).findOne({ where: { userId }, order: { id: 'DESC' } });
  if (!row) throw new Error(`user ${userId} has no generation`);
  return row;
}

export async function ledgerRowsOf(app: TestApp, generationId: number): Promise<LedgerEntry[]> {
  return app.container.db.repo(LedgerEntry).findBy({ generationId });
}

/** Polls `check` until it returns something, or fails after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined | null | false>, timeoutMs = 10_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The error a call rejects with (the test fails if it resolves). */
export async function rejectionOf(call: Promise<unknown>): Promise<unknown> {
  try {
    await call;
  } catch (error) {
    return error;
  }
  throw new Error('the call did not fail');
}
