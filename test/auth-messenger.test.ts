/**
 * Messenger login (Telegram Login Widget): decisions.md "Accounts and sessions", spec 5.2.
 */
import crypto from 'node:crypto';
import { widgetHash, WidgetData } from '../shared/auth/messenger-login';
import { Identity } from '../shared/db/entities';
import type { TestApp } from './helpers/app';
import { useTestApp } from './helpers/app';
import { refreshCookieFrom } from './helpers/users';

const BOT_TOKEN = '7000000001:AAH-test-bot-token_for-gensvc';
const PATH = '/api/v2/auth/messenger';

let nextTelegramId = 900_000_001;
function newTelegramId(): number {
  return nextTelegramId++;
}

function nowSeconds(app: TestApp): number {
  return Math.floor(app.clock.now().getTime() / 1000);
}

/** Widget data as the widget hands it over: the fields plus their `hash`. */
function signed(fields: WidgetData, botToken = BOT_TOKEN): WidgetData {
  return { ...fields, hash: widgetHash(fields, botToken) };
}

function widget(app: TestApp, overrides: WidgetData = {}): WidgetData {
  return signed({ id: newTelegramId(), first_name: 'Ann', username: 'ann_tg', auth_date: nowSeconds(app), ...overrides });
}

describe('widgetHash', () => {
  it('is the hex HMAC-SHA-256 of the sorted key=value lines (all fields but hash), keyed by SHA-256 of the bot token', () => {
    const data = { username: 'ann_tg', id: 42, auth_date: 1_790_000_000, first_name: 'Ann', hash: 'ignored' };
    const checkString = 'auth_date=1790000000\nfirst_name=Ann\nid=42\nusername=ann_tg';
    const secret = crypto.createHash('sha256').update(BOT_TOKEN).digest();
    const expected = crypto.createHmac('sha256', secret).update(checkString).digest('hex');
    expect(widgetHash(data, BOT_TOKEN)).toBe(expected);
    expect(widgetHash(data, BOT_TOKEN)).toMatch(/^[0-9a-f]{64}$/);
    // `hash` itself is not part of the check string; the key order of the input does not matter.
    expect(widgetHash({ ...data, hash: 'other' }, BOT_TOKEN)).toBe(expected);
    expect(widgetHash({ first_name: 'Ann', id: 42, username: 'ann_tg', auth_date: 1_790_000_000 }, BOT_TOKEN)).toBe(expected);
    expect(widgetHash(data, `${BOT_TOKEN}x`)).not.toBe(expected);
  });
});

describe('messenger login', () => {
  const t = useTestApp({ TELEGRAM_BOT_TOKEN: BOT_TOKEN });

  it('accepts valid widget data (with last_name and photo_url) with a token response', async () => {
    const data = widget(t.app, { last_name: 'Lee', photo_url: 'https://t.me/i/userpic/320/ann.jpg' });
    const res = await t.app.http().post(PATH).send(data);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      access_token: expect.any(String),
      token_type: 'bearer',
      expires_in: 900,
      user: { id: expect.any(Number), name: 'Ann Lee', plan: 'free', token_balance: expect.any(Number) },
    });
    expect(res.body.access_token.split('.')).toHaveLength(3);
    expect(Number.isInteger(res.body.user.token_balance)).toBe(true);
    // The refresh token goes in the httpOnly cookie only.
    expect(res.body.refresh_token).toBeUndefined();
    const cookie = ([] as string[]).concat(res.headers['set-cookie'] ?? []).find((c) => c.startsWith('refresh_token='));
    expect(cookie).toMatch(/httponly/i);
    expect(cookie).toMatch(/path=\/api\/v2\/auth/i);
    expect(cookie).toMatch(/samesite=lax/i);
  });

  it('creates a free user without e-mail on first login, visible at GET /user/me', async () => {
    const data = widget(t.app, { last_name: 'Lee', username: 'ann_first', photo_url: 'https://t.me/i/userpic/320/a.jpg' });
    const res = await t.app.http().post(PATH).send(data);
    expect(res.status).toBe(200);
    const me = await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${res.body.access_token}`);
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({
      id: res.body.user.id,
      name: 'Ann Lee',
      email: null,
      messenger_username: 'ann_first',
      avatar_url: 'https://t.me/i/userpic/320/a.jpg',
      plan: 'free',
      plan_expires_at: null,
      token_balance: res.body.user.token_balance,
      auth_methods: { messenger: true, identity_provider: false, email: false },
    });
  });

  it('returns the same user on the second login and keeps the messenger username current', async () => {
    const id = newTelegramId();
    const first = await t.app.http().post(PATH).send(signed({ id, first_name: 'Bob', username: 'bob_old', auth_date: nowSeconds(t.app) }));
    expect(first.status).toBe(200);
    t.app.clock.advance(60);
    const second = await t.app.http().post(PATH).send(signed({ id, first_name: 'Bob', username: 'bob_new', auth_date: nowSeconds(t.app) }));
    expect(second.status).toBe(200);
    expect(second.body.user.id).toBe(first.body.user.id);
    expect(second.body.access_token).not.toBe(first.body.access_token);
    const me = await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${second.body.access_token}`);
    expect(me.body).toMatchObject({ id: first.body.user.id, email: null, messenger_username: 'bob_new' });
    // Two logins, two sessions; one user row.
    const sessions = await t.app.http().get('/api/v2/auth/sessions').set('authorization', `Bearer ${second.body.access_token}`);
    expect(sessions.body.sessions).toHaveLength(2);
  });

  it('gives different Telegram users different accounts', async () => {
    const a = await t.app.http().post(PATH).send(widget(t.app));
    const b = await t.app.http().post(PATH).send(widget(t.app));
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(a.body.user.id).not.toBe(b.body.user.id);
  });

  it('names the account after the username, or the id, when first_name is empty', async () => {
    const withUsername = await t.app.http().post(PATH).send(widget(t.app, { first_name: '', username: 'only_handle' }));
    expect(withUsername.status).toBe(200);
    expect(withUsername.body.user.name).toBe('only_handle');
    const id = newTelegramId();
    const bare = await t.app.http().post(PATH).send(signed({ id, first_name: '', auth_date: nowSeconds(t.app) }));
    expect(bare.status).toBe(200);
    expect(bare.body.user.name).toBe(`user${id}`);
    const me = await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${bare.body.access_token}`);
    expect(me.body.messenger_username).toBeNull();
  });

  it('accepts the hash in upper-case hex', async () => {
    const data = widget(t.app);
    const res = await t.app.http().post(PATH).send({ ...data, hash: String(data.hash).toUpperCase() });
    expect(res.status).toBe(200);
  });

  it('covers fields it does not know in the check (extra widget fields signed along)', async () => {
    const data = widget(t.app, { language_code: 'en', allows_write_to_pm: true });
    expect((await t.app.http().post(PATH).send(data)).status).toBe(200);
  });

  it('issues a refresh cookie that works at /auth/refresh', async () => {
    const res = await t.app.http().post(PATH).send(widget(t.app));
    const refreshToken = refreshCookieFrom(res.headers['set-cookie']);
    expect(refreshToken).toBeDefined();
    const refreshed = await t.app.http().post('/api/v2/auth/refresh').set('cookie', `refresh_token=${refreshToken}`);
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.expires_in).toBe(900);
    const me = await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${refreshed.body.access_token}`);
    expect(me.body.id).toBe(res.body.user.id);
  });

  it('handles simultaneous first logins of one Telegram user as one account', async () => {
    const id = newTelegramId();
    const bodies = Array.from({ length: 5 }, () => signed({ id, first_name: 'Race', username: 'race_tg', auth_date: nowSeconds(t.app) }));
    const responses = await Promise.all(bodies.map((body) => t.app.http().post(PATH).send(body)));
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(new Set(responses.map((r) => r.body.user.id)).size).toBe(1);
    const count = await t.app.container.db.repo(Identity).countBy({ kind: 'messenger', subject: String(id) });
    expect(count).toBe(1);
  });

  it('creates a fresh account when a deleted account signs in again', async () => {
    const id = newTelegramId();
    const first = await t.app.http().post(PATH).send(signed({ id, first_name: 'Gone', auth_date: nowSeconds(t.app) }));
    expect(first.status).toBe(200);
    const deleted = await t.app.http().delete('/api/v2/user/me').set('authorization', `Bearer ${first.body.access_token}`);
    expect(deleted.status).toBe(204);
    const again = await t.app.http().post(PATH).send(signed({ id, first_name: 'Gone', auth_date: nowSeconds(t.app) }));
    expect(again.status).toBe(200);
    expect(again.body.user.id).not.toBe(first.body.user.id);
  });

  describe('refusals', () => {
    async function expectRefused(body: WidgetData): Promise<void> {
      const res = await t.app.http().post(PATH).send(body);
      expect(res.status).toBe(401);
      expect(res.body.code).toBe('invalid_messenger_login');
      expect(res.headers['set-cookie']).toBeUndefined();
    }

    it('refuses a wrong hash with 401', async () => {
      await expectRefused({ ...widget(t.app), hash: 'a'.repeat(64) });
    });

    it('refuses data signed with another bot token with 401', async () => {
      const fields = { id: newTelegramId(), first_name: 'Eve', auth_date: nowSeconds(t.app) };
      await expectRefused(signed(fields, '7000000002:AAH-another-bot'));
    });

    it.each([
      ['first_name', { first_name: 'Mallory' }],
      ['id', { id: 1 }],
      ['username', { username: 'admin' }],
      ['auth_date', { auth_date: 1 }],
      ['photo_url', { photo_url: 'https://evil.example/p.jpg' }],
    ])('refuses data with a tampered %s with 401', async (_field, change) => {
      const data = widget(t.app, { photo_url: 'https://t.me/i/userpic/320/x.jpg' });
      await expectRefused({ ...data, ...change });
    });

    it('refuses data with a field added or removed after signing with 401', async () => {
      const data = widget(t.app, { last_name: 'Lee' });
      const { last_name: _dropped, ...withoutLastName } = data;
      await expectRefused(withoutLastName);
      await expectRefused({ ...data, language_code: 'en' });
    });

    it('refuses auth_date older than 24 hours with 401 and accepts it just inside', async () => {
      const stale = widget(t.app, { auth_date: nowSeconds(t.app) - 86_400 - 1 });
      await expectRefused(stale);
      const fresh = widget(t.app, { auth_date: nowSeconds(t.app) - 86_400 + 60 });
      expect((await t.app.http().post(PATH).send(fresh)).status).toBe(200);
    });

    it('refuses widget data that was valid once, after 24 hours have passed', async () => {
      const data = widget(t.app);
      t.app.clock.advance(86_400 + 1);
      await expectRefused(data);
    });

    it('refuses auth_date far in the future with 401', async () => {
      await expectRefused(widget(t.app, { auth_date: nowSeconds(t.app) + 3_600 }));
    });

    it('does not create an account for refused data', async () => {
      const id = newTelegramId();
      await expectRefused({ ...signed({ id, first_name: 'Zed', auth_date: nowSeconds(t.app) }), first_name: 'Zoe' });
      const count = await t.app.container.db.repo(Identity).countBy({ kind: 'messenger', subject: String(id) });
      expect(count).toBe(0);
    });
  });

  describe('validation', () => {
    const hash = 'b'.repeat(64);
    it.each<[string, unknown]>([
      ['an empty object', {}],
      ['a JSON array', [1, 2]],
      ['a missing hash', { id: 5, first_name: 'A', auth_date: 1_793_000_000 }],
      ['a missing id', { first_name: 'A', auth_date: 1_793_000_000, hash }],
      ['a missing first_name', { id: 5, auth_date: 1_793_000_000, hash }],
      ['a missing auth_date', { id: 5, first_name: 'A', hash }],
      ['id as a string', { id: '5', first_name: 'A', auth_date: 1_793_000_000, hash }],
      ['a negative id', { id: -5, first_name: 'A', auth_date: 1_793_000_000, hash }],
      ['a fractional id', { id: 5.5, first_name: 'A', auth_date: 1_793_000_000, hash }],
      ['auth_date as a string', { id: 5, first_name: 'A', auth_date: '1793000000', hash }],
      ['first_name as a number', { id: 5, first_name: 7, auth_date: 1_793_000_000, hash }],
      ['username as null', { id: 5, first_name: 'A', username: null, auth_date: 1_793_000_000, hash }],
      ['hash as a number', { id: 5, first_name: 'A', auth_date: 1_793_000_000, hash: 12345 }],
      ['hash not hex', { id: 5, first_name: 'A', auth_date: 1_793_000_000, hash: 'z'.repeat(64) }],
      ['hash too short', { id: 5, first_name: 'A', auth_date: 1_793_000_000, hash: 'abc' }],
      ['an extra field holding an object', { id: 5, first_name: 'A', auth_date: 1_793_000_000, hash, extra: { a: 1 } }],
      ['an extra field holding null', { id: 5, first_name: 'A', auth_date: 1_793_000_000, hash, extra: null }],
      ['an id beyond the safe integers', { id: 2 ** 60, first_name: 'A', auth_date: 1_793_000_000, hash }],
      ['an overlong username', { id: 5, first_name: 'A', username: 'u'.repeat(65), auth_date: 1_793_000_000, hash }],
      ['an overlong first_name', { id: 5, first_name: 'x'.repeat(5_000), auth_date: 1_793_000_000, hash }],
    ])('answers %s with 422', async (_label, body) => {
      const res = await t.app.http().post(PATH).send(body as object);
      expect(res.status).toBe(422);
      expect(res.body.code).toBe('validation_failed');
      expect(Array.isArray(res.body.errors)).toBe(true);
    });

    it('answers malformed JSON with 400 and a form body with 415, never 5xx', async () => {
      const malformed = await t.app.http().post(PATH).set('content-type', 'application/json').send('{"id":');
      expect(malformed.status).toBe(400);
      const form = await t.app.http().post(PATH).set('content-type', 'application/x-www-form-urlencoded').send('id=5&hash=x');
      expect(form.status).toBe(415);
    });
  });
});

describe('messenger login without a bot token', () => {
  const t = useTestApp();

  it('answers 503 with a clear message', async () => {
    const data = signed({ id: newTelegramId(), first_name: 'Ann', auth_date: nowSeconds(t.app) });
    const res = await t.app.http().post(PATH).send(data);
    expect(res.status).toBe(503);
    expect(res.body.code).toBe('feature_disabled');
    expect(res.body.detail).toMatch(/messenger login is not configured/i);
  });
});
