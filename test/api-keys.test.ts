/**
 * API keys (spec 2.6, 4.12, 5.1; decisions.md "API keys"): creation on vip/elite only, listing
 * without the secret, use as a bearer token, plan checks on every call, deletion, the per-user cap,
 * the last-used timestamp and hash-only storage.
 */
import crypto from 'node:crypto';
import { ApiKeys } from '../shared/auth/api-keys';
import { ApiKey } from '../shared/db/entities';
import { useTestApp } from './helpers/app';
import { registerUser, TestUser, userOnPlan } from './helpers/users';


const t = useTestApp();

const KEY_SHAPE = /^gsk_[0-9A-Za-z]{44}$/;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

interface CreatedKey {
  id: number;
  name: string;
  key: string;
  created_at: string;
}

function session(user: TestUser): string {
  return `Bearer ${user.accessToken}`;
}

async function createKey(user: TestUser, name = 'server'): Promise<CreatedKey> {
  const res = await t.app.http().post('/api/v2/keys').set('authorization', session(user)).send({ name });
  if (res.status !== 201) throw new Error(`key creation failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as CreatedKey;
}

function withKey(key: string) {
  return {
    get: (p: string) => t.app.http().get(p).set('authorization', `Bearer ${key}`),
    post: (p: string, body: object) => t.app.http().post(p).set('authorization', `Bearer ${key}`).send(body),
    patch: (p: string, body: object) => t.app.http().patch(p).set('authorization', `Bearer ${key}`).send(body),
    delete: (p: string) => t.app.http().delete(p).set('authorization', `Bearer ${key}`),
  };
}

function sameShapeWrongKey(): string {
  let out = 'gsk_';
  for (const byte of crypto.randomBytes(44)) out += BASE62[byte % 62];
  return out;
}

describe('POST /api/v2/keys', () => {
  it('creates a key for a vip user: 201 with id, name, key and created_at', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const res = await t.app.http().post('/api/v2/keys').set('authorization', session(user)).send({ name: 'My server' });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(['created_at', 'id', 'key', 'name']);
    expect(Number.isInteger(res.body.id)).toBe(true);
    expect(res.body.name).toBe('My server');
    expect(res.body.key).toHaveLength(48);
    expect(res.body.key.startsWith('gsk_')).toBe(true);
    expect(res.body.key).toMatch(KEY_SHAPE);
    expect(res.body.created_at).toBe(t.app.clock.now().toISOString());
  });

  it('creates a key for an elite user too', async () => {
    const user = await userOnPlan(t.app, 'elite');
    const res = await t.app.http().post('/api/v2/keys').set('authorization', session(user)).send({ name: 'elite' });
    expect(res.status).toBe(201);
    expect(res.body.key).toMatch(KEY_SHAPE);
  });

  it('gives a different secret every time', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const keys = new Set<string>();
    for (let i = 0; i < 5; i += 1) keys.add((await createKey(user, `k${i}`)).key);
    expect(keys.size).toBe(5);
  });

  it.each(['free', 'basic', 'pro'] as const)('refuses a %s user with 403 Insufficient plan', async (plan) => {
    const user = await userOnPlan(t.app, plan);
    const res = await t.app.http().post('/api/v2/keys').set('authorization', session(user)).send({ name: 'nope' });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ detail: 'Insufficient plan', code: 'insufficient_plan' });
    expect(await t.app.container.db.repo(ApiKey).countBy({ userId: user.id })).toBe(0);
  });

  it('refuses an unauthenticated request with 401', async () => {
    const res = await t.app.http().post('/api/v2/keys').send({ name: 'x' });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: 'Not authenticated', code: 'not_authenticated' });
  });

  it.each([
    ['no name', {}],
    ['an empty name', { name: '' }],
    ['a blank name', { name: '   ' }],
    ['a numeric name', { name: 5 }],
    ['a null name', { name: null }],
    ['a 101-character name', { name: 'n'.repeat(101) }],
  ])('refuses %s with 422', async (_label, body) => {
    const user = await userOnPlan(t.app, 'vip');
    const res = await t.app.http().post('/api/v2/keys').set('authorization', session(user)).send(body);
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.errors.map((e: { field: string }) => e.field)).toContain('name');
    expect(await t.app.container.db.repo(ApiKey).countBy({ userId: user.id })).toBe(0);
  });

  it('refuses the 21st key with 422 and keeps 20', async () => {
    const user = await userOnPlan(t.app, 'vip');
    for (let i = 1; i <= 20; i += 1) await createKey(user, `key ${i}`);
    const res = await t.app.http().post('/api/v2/keys').set('authorization', session(user)).send({ name: 'one too many' });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('limit_reached');
    const list = await t.app.http().get('/api/v2/keys').set('authorization', session(user));
    expect(list.body.total).toBe(20);
    // Deleting one makes room again.
    expect((await t.app.http().delete(`/api/v2/keys/${list.body.keys[0].id}`).set('authorization', session(user))).status).toBe(204);
    expect((await t.app.http().post('/api/v2/keys').set('authorization', session(user)).send({ name: 'room again' })).status).toBe(201);
  });

  it('never lets concurrent creations pass the cap of 20', async () => {
    const user = await userOnPlan(t.app, 'vip');
    for (let i = 1; i <= 18; i += 1) await createKey(user, `key ${i}`);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => t.app.http().post('/api/v2/keys').set('authorization', session(user)).send({ name: `race ${i}` })),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 201, 422, 422, 422, 422]);
    expect(await t.app.container.db.repo(ApiKey).countBy({ userId: user.id })).toBe(20);
  });

  it('counts the cap per user', async () => {
    const a = await userOnPlan(t.app, 'vip');
    const b = await userOnPlan(t.app, 'vip');
    for (let i = 1; i <= 20; i += 1) await createKey(a, `a${i}`);
    expect((await t.app.http().post('/api/v2/keys').set('authorization', session(b)).send({ name: 'b' })).status).toBe(201);
  });
});

describe('GET /api/v2/keys', () => {
  it('lists the caller’s keys with id, name, prefix, last_four, created_at, last_used_at and never the secret', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const first = await createKey(user, 'first');
    t.app.clock.advance(5);
    const second = await createKey(user, 'second');
    const res = await t.app.http().get('/api/v2/keys').set('authorization', session(user));
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['keys', 'total']);
    expect(res.body.total).toBe(2);
    expect(res.body.keys).toEqual([
      { id: first.id, name: 'first', prefix: first.key.slice(0, 8), last_four: first.key.slice(-4), created_at: first.created_at, last_used_at: null },
      { id: second.id, name: 'second', prefix: second.key.slice(0, 8), last_four: second.key.slice(-4), created_at: second.created_at, last_used_at: null },
    ]);
    expect(res.body.keys[0].prefix.startsWith('gsk_')).toBe(true);
    expect(res.text).not.toContain(first.key);
    expect(res.text).not.toContain(second.key);
    expect(res.text).not.toContain(first.key.slice(8, 44));
  });

  it('shows an empty list to a user without keys, whatever the plan', async () => {
    const user = await registerUser(t.app);
    const res = await t.app.http().get('/api/v2/keys').set('authorization', session(user));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ keys: [], total: 0 });
  });

  it('never shows another user’s keys', async () => {
    const a = await userOnPlan(t.app, 'vip');
    const b = await userOnPlan(t.app, 'vip');
    await createKey(a, 'of a');
    const res = await t.app.http().get('/api/v2/keys').set('authorization', session(b));
    expect(res.body).toEqual({ keys: [], total: 0 });
  });

  it('refuses an unauthenticated request with 401', async () => {
    expect((await t.app.http().get('/api/v2/keys')).status).toBe(401);
  });
});

describe('using a key', () => {
  it('works as a bearer token on GET /user/me and the other account reads', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const { key } = await createKey(user);
    const me = await withKey(key).get('/api/v2/user/me');
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: user.id, email: user.email, plan: 'vip', token_balance: 8000 });
    expect(me.headers['x-ratelimit-limit-hour']).toBe('100');
    expect(me.headers['x-ratelimit-remaining-hour']).toBe('100');
    expect(me.headers['x-ratelimit-limit-day']).toBe('1000');
    expect((await withKey(key).get('/api/v2/user/balance')).status).toBe(200);
    expect((await withKey(key).get('/api/v2/user/settings')).status).toBe(200);
  });

  it('does not administer the account: settings writes and keys need a session (403 api_key_not_allowed)', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const { key } = await createKey(user);
    const notAllowed = { detail: 'Not allowed with an API key', code: 'api_key_not_allowed' };
    expect((await withKey(key).patch('/api/v2/user/settings', { language: 'ru' })).body).toEqual(notAllowed);
    expect((await withKey(key).get('/api/v2/keys')).body).toEqual(notAllowed);
    expect((await withKey(key).post('/api/v2/keys', { name: 'made with a key' })).body).toEqual(notAllowed);
    expect(await t.app.container.db.repo(ApiKey).countBy({ userId: user.id })).toBe(1);
  });

  it('refuses a wrong key of the right shape with 401 Invalid or expired token', async () => {
    const user = await userOnPlan(t.app, 'vip');
    await createKey(user);
    const wrong = sameShapeWrongKey();
    expect(wrong).toMatch(KEY_SHAPE);
    const res = await withKey(wrong).get('/api/v2/user/me');
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: 'Invalid or expired token', code: 'invalid_token' });
  });

  it('refuses a real key with one character changed, cut short or extended', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const { key } = await createKey(user);
    const last = key.slice(-1);
    const changed = `${key.slice(0, -1)}${last === 'a' ? 'b' : 'a'}`;
    for (const variant of [changed, key.slice(0, -1), `${key}x`, key.toLowerCase() === key ? key.toUpperCase() : key.toLowerCase()]) {
      const res = await withKey(variant).get('/api/v2/user/me');
      expect(res.status).toBe(401);
    }
  });

  it('stops working when the owner drops below vip: 403 on every call', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const { key } = await createKey(user);
    expect((await withKey(key).get('/api/v2/user/me')).status).toBe(200);
    await t.app.container.users.setPlan(user.id, 'pro');
    const calls = [
      withKey(key).get('/api/v2/user/me'),
      withKey(key).get('/api/v2/user/balance'),
      withKey(key).get('/api/v2/user/settings'),
      withKey(key).patch('/api/v2/user/me', { name: 'x' }),
      withKey(key).get('/api/v2/keys'),
      withKey(key).post('/api/v2/keys', { name: 'x' }),
      withKey(key).delete('/api/v2/user/me'),
    ];
    for (const res of await Promise.all(calls)) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ detail: 'Insufficient plan', code: 'insufficient_plan' });
    }
    // The refused calls changed nothing: the account is still there, under its old name.
    const me = await t.app.http().get('/api/v2/user/me').set('authorization', session(user));
    expect(me.status).toBe(200);
    expect(me.body.name).not.toBe('x');
    // The key itself survives the downgrade and works again after an upgrade.
    const list = await t.app.http().get('/api/v2/keys').set('authorization', session(user));
    expect(list.body.total).toBe(1);
    await t.app.container.users.setPlan(user.id, 'elite');
    expect((await withKey(key).get('/api/v2/user/me')).status).toBe(200);
  });

  it.each(['free', 'basic'] as const)('is refused with 403 after a move to %s too', async (plan) => {
    const user = await userOnPlan(t.app, 'vip');
    const { key } = await createKey(user);
    await t.app.container.users.setPlan(user.id, plan);
    expect((await withKey(key).get('/api/v2/user/me')).status).toBe(403);
  });

  it('the session token of a downgraded user keeps working; only the key is refused', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const { key } = await createKey(user);
    await t.app.container.users.setPlan(user.id, 'basic');
    expect((await t.app.http().get('/api/v2/user/me').set('authorization', session(user))).status).toBe(200);
    expect((await withKey(key).get('/api/v2/user/me')).status).toBe(403);
  });
});

describe('DELETE /api/v2/keys/:id', () => {
  it('deletes the key (204); it then answers 401 and leaves the list', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const keep = await createKey(user, 'keep');
    const drop = await createKey(user, 'drop');
    expect((await withKey(drop.key).get('/api/v2/user/me')).status).toBe(200);
    const res = await t.app.http().delete(`/api/v2/keys/${drop.id}`).set('authorization', session(user));
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    const after = await withKey(drop.key).get('/api/v2/user/me');
    expect(after.status).toBe(401);
    expect(after.body.detail).toBe('Invalid or expired token');
    expect((await withKey(keep.key).get('/api/v2/user/me')).status).toBe(200);
    const list = await t.app.http().get('/api/v2/keys').set('authorization', session(user));
    expect(list.body.keys.map((k: { id: number }) => k.id)).toEqual([keep.id]);
    // A second delete of the same id is 404.
    expect((await t.app.http().delete(`/api/v2/keys/${drop.id}`).set('authorization', session(user))).status).toBe(404);
  });

  it('does not let a key delete itself (only a session deletes keys)', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const created = await createKey(user);
    const res = await withKey(created.key).delete(`/api/v2/keys/${created.id}`);
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('api_key_not_allowed');
    expect((await withKey(created.key).get('/api/v2/user/me')).status).toBe(200);
  });

  it('answers 404 for another user’s key id and leaves that key working', async () => {
    const owner = await userOnPlan(t.app, 'vip');
    const stranger = await userOnPlan(t.app, 'vip');
    const created = await createKey(owner);
    const res = await t.app.http().delete(`/api/v2/keys/${created.id}`).set('authorization', session(stranger));
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: 'Not found', code: 'not_found' });
    expect((await withKey(created.key).get('/api/v2/user/me')).status).toBe(200);
  });

  it.each(['abc', '1.5', '-1', '0', '1e3', '99999999999999999999', '%20'])('answers 404 for the id %j', async (id) => {
    const user = await userOnPlan(t.app, 'vip');
    await createKey(user);
    const res = await t.app.http().delete(`/api/v2/keys/${id}`).set('authorization', session(user));
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('not_found');
    expect(await t.app.container.db.repo(ApiKey).countBy({ userId: user.id })).toBe(1);
  });

  it('answers 404 for an id that never existed', async () => {
    const user = await userOnPlan(t.app, 'vip');
    expect((await t.app.http().delete('/api/v2/keys/2147483647').set('authorization', session(user))).status).toBe(404);
  });

  it('refuses an unauthenticated request with 401', async () => {
    expect((await t.app.http().delete('/api/v2/keys/1')).status).toBe(401);
  });
});

describe('last_used_at', () => {
  it('is set on first use, not rewritten within the same minute, and moves after a minute', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const created = await createKey(user);
    const repo = t.app.container.db.repo(ApiKey);
    expect((await repo.findOneByOrFail({ id: created.id })).lastUsedAt).toBeNull();

    t.app.clock.advance(10);
    const firstUse = t.app.clock.now();
    expect((await withKey(created.key).get('/api/v2/user/me')).status).toBe(200);
    const afterFirst = (await repo.findOneByOrFail({ id: created.id })).lastUsedAt;
    expect(afterFirst?.toISOString()).toBe(firstUse.toISOString());

    t.app.clock.advance(30);
    expect((await withKey(created.key).get('/api/v2/user/me')).status).toBe(200);
    expect((await withKey(created.key).get('/api/v2/user/balance')).status).toBe(200);
    const afterSecond = (await repo.findOneByOrFail({ id: created.id })).lastUsedAt;
    expect(afterSecond?.toISOString()).toBe(firstUse.toISOString());

    t.app.clock.advance(61);
    const later = t.app.clock.now();
    expect((await withKey(created.key).get('/api/v2/user/me')).status).toBe(200);
    const afterLater = (await repo.findOneByOrFail({ id: created.id })).lastUsedAt;
    expect(afterLater?.toISOString()).toBe(later.toISOString());

    const list = await t.app.http().get('/api/v2/keys').set('authorization', session(user));
    expect(list.body.keys[0].last_used_at).toBe(later.toISOString());
  });

  it('is written about once a minute even across processes (a second instance does not rewrite it)', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const created = await createKey(user);
    const repo = t.app.container.db.repo(ApiKey);
    // Another process on the same store: its own throttle, the same rows.
    const otherProcess = new ApiKeys(t.app.container.db, t.app.clock.now);
    const firstUse = t.app.clock.now();
    expect(await otherProcess.authenticate(created.key)).not.toBeNull();
    expect((await repo.findOneByOrFail({ id: created.id })).lastUsedAt?.toISOString()).toBe(firstUse.toISOString());
    t.app.clock.advance(20);
    expect((await withKey(created.key).get('/api/v2/user/me')).status).toBe(200);
    expect((await repo.findOneByOrFail({ id: created.id })).lastUsedAt?.toISOString()).toBe(firstUse.toISOString());
    t.app.clock.advance(45);
    const later = t.app.clock.now();
    expect(await otherProcess.authenticate(created.key)).not.toBeNull();
    expect((await repo.findOneByOrFail({ id: created.id })).lastUsedAt?.toISOString()).toBe(later.toISOString());
    expect(await otherProcess.authenticate(sameShapeWrongKey())).toBeNull();
  });

  it('is kept per key: using one key does not touch another', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const used = await createKey(user, 'used');
    const idle = await createKey(user, 'idle');
    await withKey(used.key).get('/api/v2/user/me');
    const repo = t.app.container.db.repo(ApiKey);
    expect((await repo.findOneByOrFail({ id: used.id })).lastUsedAt).not.toBeNull();
    expect((await repo.findOneByOrFail({ id: idle.id })).lastUsedAt).toBeNull();
  });
});

describe('storage of keys', () => {
  it('keeps only a hash: neither the key nor its secret part appears in the api_keys row', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const created = await createKey(user);
    const row = await t.app.container.db.repo(ApiKey).findOneByOrFail({ id: created.id });
    expect(row.keyHash).not.toBe(created.key);
    expect(row.keyHash).toMatch(/^[0-9a-f]{64}$/);
    expect(row.keyHash).toBe(crypto.createHash('sha256').update(created.key).digest('hex'));

    const raw = (await t.app.container.db.source.query('SELECT * FROM api_keys WHERE id = ?', [created.id])) as Array<Record<string, unknown>>;
    expect(raw).toHaveLength(1);
    const values = Object.values(raw[0]!).map((v) => (v instanceof Date ? v.toISOString() : String(v)));
    const secretPart = created.key.slice(8, 44);
    for (const value of values) {
      expect(value).not.toContain(created.key);
      expect(value).not.toContain(secretPart);
      expect(value).not.toContain(created.key.slice(4));
    }
    expect(row.prefix).toBe(created.key.slice(0, 8));
    expect(row.lastFour).toBe(created.key.slice(-4));
  });
});

describe('an expired vip plan', () => {
  // Last in the file: it moves the shared clock past every earlier access token's lifetime.
  it('refuses the key with 403 once plan_expires_at has passed', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const { key } = await createKey(user);
    expect((await withKey(key).get('/api/v2/user/me')).status).toBe(200);
    t.app.clock.advance(31 * 86_400);
    const res = await withKey(key).get('/api/v2/user/me');
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ detail: 'Insufficient plan', code: 'insufficient_plan' });
    // Creating a new key on a fresh session is refused as well.
    const login = await t.app.http().post('/api/v2/auth/login').send({ email: user.email, password: user.password });
    const create = await t.app.http().post('/api/v2/keys').set('authorization', `Bearer ${login.body.access_token}`).send({ name: 'x' });
    expect(create.status).toBe(403);
    // Renewing the plan brings the same key back.
    await t.app.container.users.setPlan(user.id, 'vip');
    expect((await withKey(key).get('/api/v2/user/me')).status).toBe(200);
  });
});
