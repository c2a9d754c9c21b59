/**
 * Anthropic's official client pointed at a test app (/v1/messages, /v1/models), the accounts it
 * signs in with, and a reader of the raw server-sent events (the client hides `ping`).
 */
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { User } from '../../shared/db/entities';
import type { TestApp } from './app';
import { TestUser, userOnPlan } from './users';

/** The client's base URL: the service's root (the client adds /v1/…), as ANTHROPIC_BASE_URL is. */
export function anthropicBaseURL(app: TestApp): string {
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

export async function apiKeyOf(app: TestApp, user: TestUser): Promise<string> {
  const res = await app.http().post('/api/v2/keys').set('authorization', `Bearer ${user.accessToken}`).send({ name: 'anthropic-sdk' });
  if (res.status !== 201) throw new Error(`key creation failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.key as string;
}

/** A vip account (API keys need vip or elite) and the client on its key, sent as `x-api-key`. */
export async function anthropicClient(app: TestApp, options: { bonus?: number; maxRetries?: number } = {}): Promise<{ user: TestUser; key: string; anthropic: Anthropic }> {
  const user = await userOnPlan(app, 'vip', options.bonus ?? 0);
  const key = await apiKeyOf(app, user);
  return { user, key, anthropic: new Anthropic({ apiKey: key, baseURL: anthropicBaseURL(app), maxRetries: options.maxRetries ?? 0 }) };
}

/** The client on a bearer credential (an access token or a key), sent as `Authorization: Bearer`. */
export function anthropicWithBearer(app: TestApp, token: string): Anthropic {
  return new Anthropic({ authToken: token, baseURL: anthropicBaseURL(app), maxRetries: 0 });
}

export async function balanceOf(app: TestApp, userId: number): Promise<{ total: number; held: number }> {
  const row = await app.container.db.repo(User).findOneByOrFail({ id: userId });
  return { total: row.subscriptionTokens + row.bonusTokens, held: row.heldTokens };
}

export interface RawEvent {
  event: string | null;
  data: unknown;
}

/** Server-sent events as sent: each one's name and its data parsed as JSON. */
export function parseSse(text: string): RawEvent[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const lines = block.split('\n');
      const event = lines.find((l) => l.startsWith('event: '))?.slice('event: '.length) ?? null;
      const data = lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice('data: '.length)).join('\n');
      return { event, data: JSON.parse(data) as unknown };
    });
}
