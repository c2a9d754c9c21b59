/**
 * The API-key owner cache (shared/auth/api-keys.ts, account-changes.ts): a key's owner is served
 * from memory for a few seconds, yet a deleted key, a plan change and a deleted account take
 * effect at once, in every process. On MySQL + Redis the change is made through one app instance
 * and seen by another (its own container, connections and cache: a second web process) within a
 * second, polled; embedded, within the one process, on the next request. The test clock is
 * frozen, so an entry would never expire by itself: only the announcement can drop it.
 */
import { ApiKey } from '../shared/db/entities';
import { OWNER_CACHE_MS } from '../shared/auth/api-keys';
import type TestAgent from 'supertest/lib/agent';
import { startPeerInstance, useTestApp } from './helpers/app';
import { storeKind } from './helpers/stores';
import { TestUser, userOnPlan } from './helpers/users';

const t = useTestApp();
const twoProcesses = storeKind() === 'mysql-redis';

interface Instance {
  http(): TestAgent;
  close(): Promise<void>;
  listening(): boolean;
}

/** Where the key is used: another instance on MySQL + Redis, the same one embedded. */
let other: Instance;

beforeAll(async () => {
  if (twoProcesses) {
    const peer = await startPeerInstance(t.app);
    other = { http: peer.http, close: peer.close, listening: () => peer.container.accountChanges.listening() };
  } else {
    other = { http: () => t.app.http(), close: async () => undefined, listening: () => t.app.container.accountChanges.listening() };
  }
  // The other instance subscribes on its first use; until then it caches nothing.
  for (let i = 0; i < 100 && !other.listening(); i++) await new Promise((r) => setTimeout(r, 20));
  expect(other.listening()).toBe(true);
});

afterAll(async () => {
  await other.close();
});

async function keyFor(user: TestUser): Promise<{ id: number; key: string }> {
  const res = await t.app.http().post('/api/v2/keys').set('authorization', `Bearer ${user.accessToken}`).send({ name: 'server' });
  expect(res.status).toBe(201);
  return res.body as { id: number; key: string };
}

function useKey(key: string) {
  return other.http().get('/api/v2/user/me').set('authorization', `Bearer ${key}`);
}

/** The status the other instance answers once it changes from `from`, polled for up to a second. */
async function statusAfterChange(key: string, from: number): Promise<number> {
  const deadline = Date.now() + 1000;
  let status = from;
  while (status === from && Date.now() < deadline) {
    status = (await useKey(key)).status;
    if (status === from) await new Promise((r) => setTimeout(r, 10));
  }
  return status;
}

describe('the API-key owner cache', () => {
  it('serves a key from memory: a row removed behind its back still answers until the entry expires', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const { id, key } = await keyFor(user);
    expect((await useKey(key)).status).toBe(200);
    // Deleted in the database without an announcement (as no code path of the service does):
    await t.app.container.db.repo(ApiKey).delete({ id });
    expect((await useKey(key)).status).toBe(200);
    t.app.clock.advance(OWNER_CACHE_MS / 1000 + 1);
    expect((await useKey(key)).status).toBe(401);
  });

  it('refuses a deleted key at once', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const { id, key } = await keyFor(user);
    expect((await useKey(key)).status).toBe(200);
    expect((await useKey(key)).status).toBe(200);
    const deleted = await t.app.http().delete(`/api/v2/keys/${id}`).set('authorization', `Bearer ${user.accessToken}`);
    expect(deleted.status).toBe(204);
    expect(await statusAfterChange(key, 200)).toBe(401);
  });

  it('refuses a key revoked by the operator at once', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const { id, key } = await keyFor(user);
    expect((await useKey(key)).status).toBe(200);
    await t.app.container.apiKeys.revokeById(id);
    expect(await statusAfterChange(key, 200)).toBe(401);
  });

  it('sees a plan change at once: a plan without API access refuses the key', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const { key } = await keyFor(user);
    expect((await useKey(key)).status).toBe(200);
    await t.app.container.users.setPlan(user.id, 'free');
    const status = await statusAfterChange(key, 200);
    expect(status).toBe(403);
    expect((await useKey(key)).body.code).toBe('insufficient_plan');
    // And back: the key works again as soon as the plan allows it.
    await t.app.container.users.setPlan(user.id, 'vip');
    expect(await statusAfterChange(key, 403)).toBe(200);
  });

  it('refuses the keys of a deleted account at once', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const first = await keyFor(user);
    const second = await keyFor(user);
    expect((await useKey(first.key)).status).toBe(200);
    expect((await useKey(second.key)).status).toBe(200);
    const deleted = await t.app.http().delete('/api/v2/user/me').set('authorization', `Bearer ${user.accessToken}`);
    expect(deleted.status).toBe(204);
    expect(await statusAfterChange(first.key, 200)).toBe(401);
    expect(await statusAfterChange(second.key, 200)).toBe(401);
  });

  it('leaves other accounts cached through someone else’s change', async () => {
    const kept = await userOnPlan(t.app, 'vip');
    const changed = await userOnPlan(t.app, 'vip');
    const keptKey = await keyFor(kept);
    const changedKey = await keyFor(changed);
    expect((await useKey(keptKey.key)).status).toBe(200);
    expect((await useKey(changedKey.key)).status).toBe(200);
    await t.app.container.db.repo(ApiKey).delete({ id: keptKey.id });
    await t.app.container.users.setPlan(changed.id, 'free');
    expect(await statusAfterChange(changedKey.key, 200)).toBe(403);
    // The kept account's entry was not dropped (its row is gone, yet the cache still answers).
    expect((await useKey(keptKey.key)).status).toBe(200);
    t.app.clock.advance(OWNER_CACHE_MS / 1000 + 1);
  });
});
