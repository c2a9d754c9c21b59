/**
 * The caller's own account (spec 2.3, 2.4, 2.9, 4.7): profile, balance, settings, deletion, the
 * authentication errors of every /user route and the rate-limit headers (decisions.md "Limits").
 */
import { Generation, LedgerEntry, User } from '../shared/db/entities';
import { useTestApp } from './helpers/app';
import { registerUser, TestUser, uniqueEmail, userOnPlan } from './helpers/users';

const t = useTestApp();

const USER_FIELDS = [
  'auth_methods',
  'avatar_url',
  'email',
  'id',
  'messenger_username',
  'name',
  'plan',
  'plan_expires_at',
  'rate_limit_daily',
  'rate_limit_hourly',
  'token_balance',
  'token_limit',
  'tokens_used_this_period',
];

function bearer(user: TestUser): string {
  return `Bearer ${user.accessToken}`;
}

function me(user: TestUser) {
  return t.app.http().get('/api/v2/user/me').set('authorization', bearer(user));
}

function patchMe(user: TestUser, body: unknown) {
  return t.app.http().patch('/api/v2/user/me').set('authorization', bearer(user)).send(body as object);
}

function patchSettings(user: TestUser, body: unknown) {
  return t.app.http().patch('/api/v2/user/settings').set('authorization', bearer(user)).send(body as object);
}

function isoString(value: unknown): Date {
  expect(typeof value).toBe('string');
  const date = new Date(value as string);
  expect(Number.isNaN(date.getTime())).toBe(false);
  expect(date.toISOString()).toBe(value);
  return date;
}

describe('GET /api/v2/user/me', () => {
  it('shows a new free account with exactly the fields of spec 2.3', async () => {
    const user = await registerUser(t.app, { name: 'Alice' });
    const res = await me(user);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(USER_FIELDS);
    expect(res.body).toEqual({
      id: user.id,
      name: 'Alice',
      email: user.email,
      messenger_username: null,
      avatar_url: null,
      plan: 'free',
      plan_expires_at: null,
      token_balance: 50,
      token_limit: 50,
      tokens_used_this_period: 0,
      rate_limit_hourly: 5,
      rate_limit_daily: 20,
      auth_methods: { messenger: false, identity_provider: false, email: true },
    });
    expect(Object.keys(res.body.auth_methods).sort()).toEqual(['email', 'identity_provider', 'messenger']);
  });

  it('shows vip after setPlan: 8,000 tokens, its limits and an expiry 30 days later', async () => {
    const user = await registerUser(t.app);
    const now = t.app.clock.now();
    await t.app.container.users.setPlan(user.id, 'vip');
    const res = await me(user);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      plan: 'vip',
      token_balance: 8000,
      token_limit: 8000,
      tokens_used_this_period: 0,
      rate_limit_hourly: 100,
      rate_limit_daily: 1000,
    });
    expect(isoString(res.body.plan_expires_at).getTime()).toBe(now.getTime() + 30 * 86_400_000);
  });

  it.each([
    ['basic', 1000, 30, 200],
    ['pro', 3000, 60, 500],
    ['elite', 25000, 0, 0],
  ] as const)('shows %s with its allowance %i and limits %i/%i (0 = unlimited)', async (plan, tokens, hourly, daily) => {
    const user = await userOnPlan(t.app, plan);
    const res = await me(user);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ plan, token_balance: tokens, token_limit: tokens, rate_limit_hourly: hourly, rate_limit_daily: daily });
    expect(typeof res.body.plan_expires_at).toBe('string');
  });

  it('counts bonus tokens in token_balance but not in token_limit', async () => {
    const user = await userOnPlan(t.app, 'basic', 250);
    const res = await me(user);
    expect(res.body).toMatchObject({ token_balance: 1250, token_limit: 1000 });
  });

  it('shows the name given at registration, or a default when none was given', async () => {
    const named = await registerUser(t.app, { name: 'Zoë Ünicode' });
    expect((await me(named)).body.name).toBe('Zoë Ünicode');
    const unnamed = await registerUser(t.app);
    const body = (await me(unnamed)).body;
    expect(typeof body.name).toBe('string');
    expect(body.name.length).toBeGreaterThan(0);
  });

  it('only ever shows the caller', async () => {
    const a = await registerUser(t.app);
    const b = await registerUser(t.app);
    expect((await me(a)).body.id).toBe(a.id);
    expect((await me(b)).body.id).toBe(b.id);
    expect(a.id).not.toBe(b.id);
  });
});

describe('PATCH /api/v2/user/me', () => {
  it('changes the name and the avatar and returns the whole updated user', async () => {
    const user = await registerUser(t.app, { name: 'Before' });
    const res = await patchMe(user, { name: '  After  ', avatar_url: 'https://cdn.example.test/a.png' });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(USER_FIELDS);
    expect(res.body).toMatchObject({ id: user.id, name: 'After', avatar_url: 'https://cdn.example.test/a.png', plan: 'free', token_balance: 50 });
    expect((await me(user)).body).toMatchObject({ name: 'After', avatar_url: 'https://cdn.example.test/a.png' });
  });

  it('changes only the fields given', async () => {
    const user = await registerUser(t.app, { name: 'Keep' });
    await patchMe(user, { avatar_url: 'http://img.example.test/x.jpg' });
    const onlyName = await patchMe(user, { name: 'New name' });
    expect(onlyName.body).toMatchObject({ name: 'New name', avatar_url: 'http://img.example.test/x.jpg' });
    const nothing = await patchMe(user, {});
    expect(nothing.status).toBe(200);
    expect(nothing.body).toMatchObject({ name: 'New name', avatar_url: 'http://img.example.test/x.jpg' });
  });

  it('clears the avatar with null', async () => {
    const user = await registerUser(t.app);
    await patchMe(user, { avatar_url: 'https://cdn.example.test/a.png' });
    const res = await patchMe(user, { avatar_url: null });
    expect(res.status).toBe(200);
    expect(res.body.avatar_url).toBeNull();
    expect((await me(user)).body.avatar_url).toBeNull();
  });

  it.each([
    ['an empty name', { name: '' }, 'name'],
    ['a blank name', { name: '   ' }, 'name'],
    ['a numeric name', { name: 42 }, 'name'],
    ['a null name', { name: null }, 'name'],
    ['an array name', { name: ['a'] }, 'name'],
    ['a 201-character name', { name: 'x'.repeat(201) }, 'name'],
    ['a 100,000-character name', { name: 'x'.repeat(100_000) }, 'name'],
    ['a non-URL avatar', { avatar_url: 'not a url' }, 'avatar_url'],
    ['an empty avatar', { avatar_url: '' }, 'avatar_url'],
    ['a javascript: avatar', { avatar_url: 'javascript:alert(1)' }, 'avatar_url'],
    ['an ftp: avatar', { avatar_url: 'ftp://files.example.test/a.png' }, 'avatar_url'],
    ['a numeric avatar', { avatar_url: 12 }, 'avatar_url'],
    ['an object avatar', { avatar_url: { url: 'https://a.example.test' } }, 'avatar_url'],
    ['a 3,000-character avatar URL', { avatar_url: `https://cdn.example.test/${'a'.repeat(3000)}.png` }, 'avatar_url'],
  ])('refuses %s with 422 naming the field and changes nothing', async (_label, body, field) => {
    const user = await registerUser(t.app, { name: 'Unchanged' });
    const res = await patchMe(user, body);
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    expect((await me(user)).body).toMatchObject({ name: 'Unchanged', avatar_url: null });
  });

  it('refuses a body that is not a JSON object with 422, and malformed JSON with 400', async () => {
    const user = await registerUser(t.app);
    const array = await t.app.http().patch('/api/v2/user/me').set('authorization', bearer(user)).send([{ name: 'x' }]);
    expect(array.status).toBe(422);
    const malformed = await t.app
      .http()
      .patch('/api/v2/user/me')
      .set('authorization', bearer(user))
      .set('content-type', 'application/json')
      .send('{"name":');
    expect(malformed.status).toBe(400);
  });
});

describe('GET /api/v2/user/balance', () => {
  it('shows a new free account: 50 subscription tokens, no expiry, a refill one month after signup', async () => {
    const signup = t.app.clock.now();
    const user = await registerUser(t.app);
    const res = await t.app.http().get('/api/v2/user/balance').set('authorization', bearer(user));
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(
      ['bonus_tokens', 'held_tokens', 'next_refill_at', 'plan', 'plan_expires_at', 'plan_tokens_remaining', 'token_balance'].sort(),
    );
    expect(res.body).toMatchObject({
      plan: 'free',
      token_balance: 50,
      plan_tokens_remaining: 50,
      bonus_tokens: 0,
      held_tokens: 0,
      plan_expires_at: null,
    });
    const expected = new Date(signup.getTime());
    expected.setUTCMonth(expected.getUTCMonth() + 1);
    expect(isoString(res.body.next_refill_at).getTime()).toBe(expected.getTime());
  });

  it('splits a paid balance into plan and bonus tokens and agrees with /user/me', async () => {
    const user = await userOnPlan(t.app, 'pro', 70);
    const balance = await t.app.http().get('/api/v2/user/balance').set('authorization', bearer(user));
    const profile = await me(user);
    expect(balance.body).toMatchObject({ plan: 'pro', token_balance: 3070, plan_tokens_remaining: 3000, bonus_tokens: 70, held_tokens: 0 });
    expect(balance.body.token_balance).toBe(profile.body.token_balance);
    expect(balance.body.plan_expires_at).toBe(profile.body.plan_expires_at);
    isoString(balance.body.plan_expires_at);
  });

  it('reflects a negative correction: bonus tokens go first', async () => {
    const user = await userOnPlan(t.app, 'basic', 30);
    await t.app.container.users.grantTokens(user.id, -50);
    const res = await t.app.http().get('/api/v2/user/balance').set('authorization', bearer(user));
    expect(res.body).toMatchObject({ token_balance: 980, plan_tokens_remaining: 980, bonus_tokens: 0 });
  });
});

describe('GET and PATCH /api/v2/user/settings', () => {
  it('starts with the defaults', async () => {
    const user = await registerUser(t.app);
    const res = await t.app.http().get('/api/v2/user/settings').set('authorization', bearer(user));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ language: 'en', image_format: 'webp', notifications_enabled: true, default_image_size: '1024x1024' });
  });

  it.each([
    [{ language: 'ru' }],
    [{ language: 'en' }],
    [{ image_format: 'png' }],
    [{ image_format: 'jpeg' }],
    [{ image_format: 'webp' }],
    [{ notifications_enabled: false }],
    [{ default_image_size: '512x768' }],
  ])('changes %j alone, returns the settings with 200 and keeps it', async (patch) => {
    const user = await registerUser(t.app);
    const defaults = { language: 'en', image_format: 'webp', notifications_enabled: true, default_image_size: '1024x1024' };
    const res = await patchSettings(user, patch);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...defaults, ...patch });
    const read = await t.app.http().get('/api/v2/user/settings').set('authorization', bearer(user));
    expect(read.body).toEqual({ ...defaults, ...patch });
  });

  it('changes several fields at once and leaves the others', async () => {
    const user = await registerUser(t.app);
    await patchSettings(user, { language: 'ru', image_format: 'png', notifications_enabled: false });
    const res = await patchSettings(user, { image_format: 'jpeg' });
    expect(res.body).toEqual({ language: 'ru', image_format: 'jpeg', notifications_enabled: false, default_image_size: '1024x1024' });
    const read = await t.app.http().get('/api/v2/user/settings').set('authorization', bearer(user));
    expect(read.body).toEqual(res.body);
    // Settings do not touch the profile.
    expect((await me(user)).body.plan).toBe('free');
  });

  it.each([
    [{ language: 'de' }, 'language'],
    [{ language: 'EN' }, 'language'],
    [{ language: '' }, 'language'],
    [{ language: 1 }, 'language'],
    [{ image_format: 'gif' }, 'image_format'],
    [{ image_format: 'PNG' }, 'image_format'],
    [{ image_format: null }, 'image_format'],
    [{ notifications_enabled: 'true' }, 'notifications_enabled'],
    [{ notifications_enabled: 1 }, 'notifications_enabled'],
    [{ notifications_enabled: null }, 'notifications_enabled'],
    [{ default_image_size: 'big' }, 'default_image_size'],
    [{ default_image_size: '0x0' }, 'default_image_size'],
    [{ default_image_size: 1024 }, 'default_image_size'],
    [{ default_image_size: '1'.repeat(60) + 'x1024' }, 'default_image_size'],
  ])('refuses %j with 422 naming %s and changes nothing', async (body, field) => {
    const user = await registerUser(t.app);
    const res = await patchSettings(user, body);
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    const read = await t.app.http().get('/api/v2/user/settings').set('authorization', bearer(user));
    expect(read.body).toEqual({ language: 'en', image_format: 'webp', notifications_enabled: true, default_image_size: '1024x1024' });
  });

  it('accepts an empty patch and changes nothing', async () => {
    const user = await registerUser(t.app);
    const res = await patchSettings(user, {});
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ language: 'en', image_format: 'webp', notifications_enabled: true, default_image_size: '1024x1024' });
  });

  it('keeps each user’s settings apart', async () => {
    const a = await registerUser(t.app);
    const b = await registerUser(t.app);
    await patchSettings(a, { language: 'ru', notifications_enabled: false });
    const read = await t.app.http().get('/api/v2/user/settings').set('authorization', bearer(b));
    expect(read.body).toMatchObject({ language: 'en', notifications_enabled: true });
  });

  it('refuses a 100,000-character language with 422', async () => {
    const user = await registerUser(t.app);
    const res = await patchSettings(user, { language: 'x'.repeat(100_000) });
    expect(res.status).toBe(422);
    expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual(['language']);
  });

  it('refuses a partly valid body as a whole', async () => {
    const user = await registerUser(t.app);
    const res = await patchSettings(user, { language: 'ru', image_format: 'bmp' });
    expect(res.status).toBe(422);
    const read = await t.app.http().get('/api/v2/user/settings').set('authorization', bearer(user));
    expect(read.body.language).toBe('en');
  });
});

describe('DELETE /api/v2/user/me', () => {
  it('answers 204; the token, the login and the refresh token stop working; the ledger stays, anonymised', async () => {
    const user = await userOnPlan(t.app, 'basic', 10);
    const ledger = t.app.container.db.repo(LedgerEntry);
    const before = await ledger.find({ where: { userId: user.id }, order: { id: 'ASC' } });
    expect(before.length).toBeGreaterThanOrEqual(3);
    const ids = before.map((e) => e.id);

    const res = await t.app.http().delete('/api/v2/user/me').set('authorization', bearer(user));
    expect(res.status).toBe(204);
    expect(res.text).toBe('');

    const after = await me(user);
    expect(after.status).toBe(401);
    expect(after.body.detail).toBe('Invalid or expired token');

    const login = await t.app.http().post('/api/v2/auth/login').send({ email: user.email, password: user.password });
    expect(login.status).toBe(401);
    const refresh = await t.app.http().post('/api/v2/auth/refresh').send({ refresh_token: user.refreshToken });
    expect(refresh.status).toBe(401);

    expect(await t.app.container.db.repo(User).findOneBy({ id: user.id })).toBeNull();
    expect(await ledger.countBy({ userId: user.id })).toBe(0);
    const kept = await ledger.find({ where: ids.map((id) => ({ id })), order: { id: 'ASC' } });
    expect(kept.map((e) => e.id)).toEqual(ids);
    for (const entry of kept) expect(entry.userId).toBeNull();
    expect(kept.map((e) => e.amount)).toEqual(before.map((e) => e.amount));
  });

  it('frees the e-mail: the same address can register again as a new account', async () => {
    const email = uniqueEmail('again');
    const first = await registerUser(t.app, { email });
    expect((await t.app.http().delete('/api/v2/user/me').set('authorization', bearer(first))).status).toBe(204);
    const second = await registerUser(t.app, { email });
    expect(second.id).not.toBe(first.id);
    expect((await me(second)).body).toMatchObject({ email, plan: 'free', token_balance: 50 });
  });

  it('removes the account’s API keys', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const created = await t.app.http().post('/api/v2/keys').set('authorization', bearer(user)).send({ name: 'k' });
    expect(created.status).toBe(201);
    expect((await t.app.http().delete('/api/v2/user/me').set('authorization', bearer(user))).status).toBe(204);
    const withKey = await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${created.body.key}`);
    expect(withKey.status).toBe(401);
  });

  it('removes the account’s generated files: their URLs answer 404', async () => {
    const user = await registerUser(t.app);
    const other = await registerUser(t.app);
    const { storage, db } = t.app.container;
    const generation = async (owner: TestUser) => {
      const result = await storage.put('results', Buffer.from('result bytes'), 'image/png', 'png');
      const thumbnail = await storage.put('thumbs', Buffer.from('thumb bytes'), 'image/webp', 'webp');
      const input = await storage.put('inputs', Buffer.from('{"prompt":"p"}'), 'application/json', 'json');
      const now = t.app.clock.now();
      await db.transaction((em) =>
        em.getRepository(Generation).save(
          em.getRepository(Generation).create({
            userId: owner.id,
            modelSlug: 'placeholder',
            category: 'image',
            status: 'completed',
            prompt: 'p',
            input: JSON.stringify({ $ref: input.key }),
            price: 0,
            resultKey: result.key,
            thumbnailKey: thumbnail.key,
            createdAt: now,
            updatedAt: now,
          }),
        ),
      );
      return [result.key, thumbnail.key, input.key];
    };
    const mine = await generation(user);
    const theirs = await generation(other);
    for (const key of [...mine, ...theirs]) expect(await storage.stat(key)).not.toBeNull();
    expect((await t.app.http().get(`/files/${mine[0]}`)).status).toBe(200);

    expect((await t.app.http().delete('/api/v2/user/me').set('authorization', bearer(user))).status).toBe(204);
    for (const key of mine) expect(await storage.stat(key)).toBeNull();
    expect((await t.app.http().get(`/files/${mine[0]}`)).status).toBe(404);
    expect((await t.app.http().get(`/files/${mine[1]}`)).status).toBe(404);
    for (const key of theirs) expect(await storage.stat(key)).not.toBeNull();
    expect((await t.app.http().get(`/files/${theirs[0]}`)).status).toBe(200);
    expect(await db.repo(Generation).countBy({ userId: user.id })).toBe(0);
  });

  it('leaves other accounts alone', async () => {
    const gone = await registerUser(t.app);
    const stays = await registerUser(t.app);
    await t.app.http().delete('/api/v2/user/me').set('authorization', bearer(gone));
    expect((await me(stays)).status).toBe(200);
    expect(await t.app.container.db.repo(LedgerEntry).countBy({ userId: stays.id })).toBeGreaterThan(0);
  });
});

describe('authentication of /user routes', () => {
  const routes: Array<['get' | 'patch' | 'delete', string]> = [
    ['get', '/api/v2/user/me'],
    ['patch', '/api/v2/user/me'],
    ['delete', '/api/v2/user/me'],
    ['get', '/api/v2/user/balance'],
    ['get', '/api/v2/user/settings'],
    ['patch', '/api/v2/user/settings'],
  ];

  it.each(routes)('%s %s without Authorization is 401 Not authenticated', async (method, path) => {
    const res = await t.app.http()[method](path);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: 'Not authenticated', code: 'not_authenticated' });
  });

  it.each(['Basic xyz', 'Bearer', 'Bearer ', 'bearer', 'Token abc', 'Bearer a b'])('Authorization %j is 401 not_authenticated', async (header) => {
    const res = await t.app.http().get('/api/v2/user/me').set('authorization', header);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: 'Not authenticated', code: 'not_authenticated' });
  });

  it.each(['garbage', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl', 'gsk_short'])('a wrong bearer token %j is 401 Invalid or expired token', async (token) => {
    const res = await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${token}`);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: 'Invalid or expired token', code: 'invalid_token' });
  });

  it('accepts the scheme in any case', async () => {
    const user = await registerUser(t.app);
    const res = await t.app.http().get('/api/v2/user/me').set('authorization', `bearer ${user.accessToken}`);
    expect(res.status).toBe(200);
  });

  it('refuses a token whose signature was tampered with', async () => {
    const user = await registerUser(t.app);
    const [header, payload, signature] = user.accessToken.split('.');
    const flipped = `${signature!.slice(0, -2)}${signature!.endsWith('AA') ? 'BB' : 'AA'}`;
    const res = await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${header}.${payload}.${flipped}`);
    expect(res.status).toBe(401);
    expect(res.body.detail).toBe('Invalid or expired token');
  });
});

describe('rate-limit headers', () => {
  it('a free account shows 5 per hour and 20 per day, all remaining, on every authenticated response', async () => {
    const user = await registerUser(t.app);
    for (const path of ['/api/v2/user/me', '/api/v2/user/balance', '/api/v2/user/settings']) {
      const res = await t.app.http().get(path).set('authorization', bearer(user));
      expect(res.status).toBe(200);
      expect(res.headers['x-ratelimit-limit-hour']).toBe('5');
      expect(res.headers['x-ratelimit-remaining-hour']).toBe('5');
      expect(res.headers['x-ratelimit-limit-day']).toBe('20');
      expect(res.headers['x-ratelimit-remaining-day']).toBe('20');
    }
    const patched = await patchSettings(user, { language: 'ru' });
    expect(patched.headers['x-ratelimit-remaining-hour']).toBe('5');
    // Refused input on an authenticated route still says where the caller stands.
    const refused = await patchSettings(user, { language: 'xx' });
    expect(refused.status).toBe(422);
    expect(refused.headers['x-ratelimit-limit-hour']).toBe('5');
  });

  it('a vip account shows its own limits', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const res = await me(user);
    expect(res.headers['x-ratelimit-limit-hour']).toBe('100');
    expect(res.headers['x-ratelimit-remaining-hour']).toBe('100');
    expect(res.headers['x-ratelimit-limit-day']).toBe('1000');
    expect(res.headers['x-ratelimit-remaining-day']).toBe('1000');
  });

  it('elite shows both limits as 0 and no Remaining headers', async () => {
    const user = await userOnPlan(t.app, 'elite');
    const res = await me(user);
    expect(res.status).toBe(200);
    expect(res.headers['x-ratelimit-limit-hour']).toBe('0');
    expect(res.headers['x-ratelimit-limit-day']).toBe('0');
    expect(res.headers).not.toHaveProperty('x-ratelimit-remaining-hour');
    expect(res.headers).not.toHaveProperty('x-ratelimit-remaining-day');
  });

  it('routes open to everyone carry them when the caller authenticates (the catalog and prices)', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const slug = (await t.app.http().get('/api/v2/models')).body.models[0].slug as string;
    const key = (await t.app.http().post('/api/v2/keys').set('authorization', bearer(user)).send({ name: 'k' })).body.key as string;
    const calls = [
      () => t.app.http().get('/api/v2/models'),
      () => t.app.http().get(`/api/v2/models/${slug}`),
      () => t.app.http().get(`/api/v2/models/${slug}/avg-time`),
      () => t.app.http().post(`/api/v2/models/${slug}/calculate-price`).send({}),
    ];
    for (const call of calls) {
      for (const credential of [bearer(user), `Bearer ${key}`]) {
        const res = await call().set('authorization', credential);
        expect(res.status).toBe(200);
        expect(res.headers['x-ratelimit-limit-hour']).toBe('100');
        expect(res.headers['x-ratelimit-remaining-day']).toBe('1000');
      }
      const anonymous = await call();
      expect(anonymous.status).toBe(200);
      expect(anonymous.headers).not.toHaveProperty('x-ratelimit-limit-hour');
      // Credentials given are checked, as on every route.
      expect((await call().set('authorization', 'Bearer not-a-token')).status).toBe(401);
    }
  });

  it('an unauthenticated response carries no plan limits', async () => {
    const res = await t.app.http().get('/api/v2/user/me');
    expect(res.status).toBe(401);
    expect(res.headers).not.toHaveProperty('x-ratelimit-remaining-hour');
  });
});

describe('an expired paid plan', () => {
  // Last in the file: it moves the shared clock past every earlier access token's lifetime.
  it('shows as free with a null expiry, in /user/me and /user/balance alike', async () => {
    const user = await userOnPlan(t.app, 'vip');
    t.app.clock.advance(31 * 86_400);
    const login = await t.app.http().post('/api/v2/auth/login').send({ email: user.email, password: user.password });
    expect(login.status).toBe(200);
    const token = `Bearer ${login.body.access_token}`;
    const profile = await t.app.http().get('/api/v2/user/me').set('authorization', token);
    expect(profile.body).toMatchObject({ plan: 'free', plan_expires_at: null, token_limit: 50, rate_limit_hourly: 5, rate_limit_daily: 20 });
    expect(profile.headers['x-ratelimit-limit-hour']).toBe('5');
    const balance = await t.app.http().get('/api/v2/user/balance').set('authorization', token);
    expect(balance.body).toMatchObject({ plan: 'free', plan_expires_at: null });
  });
});
