/**
 * The official `openai` client pointed at a test app's /v1, on a vip account's API key (keys need
 * vip or elite) or on any user's session token, and what the /v1 suites compare against /api/v2:
 * the account's money as the store holds it, ledger rows, the newest generation.
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

/** The client on `credential`; no automatic retries unless asked (a test counts requests). */
export function openAIClient(app: TestApp, credential: string, maxRetries = 0): OpenAI {
  return new OpenAI({ apiKey: credential, baseURL: v1BaseURL(app), maxRetries });
}

/** A vip account with the client on its API key. */
export async function vipClient(app: TestApp, bonus = 0): Promise<{ user: TestUser; key: string; openai: OpenAI }> {
  const user = await userOnPlan(app, 'vip', bonus);
  const key = await apiKeyOf(app, user);
  return { user, key, openai: openAIClient(app, key) };
}

export async function moneyOf(app: TestApp, userId: number): Promise<{ total: number; held: number }> {
  const row = await app.container.db.repo(User).findOneByOrFail({ id: userId });
  return { total: row.subscriptionTokens + row.bonusTokens, held: row.heldTokens };
}

/** Polls until `read` gives a value `done` accepts (a run ending after the client went away). */
export async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!done(value) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    value = await read();
  }
  return value;
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
export async function waitFor<T>(check: () => Promise<T | undefined | null | false>, timeoutMs = 10_000): Promise<T> {
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
