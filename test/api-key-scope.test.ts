/**
 * What an API key may do (decisions.md "API keys"): everything a client of the service needs,
 * but nothing that administers the account. Each administering route is a row of one table:
 * a key gets 403 api_key_not_allowed and nothing changes; a session token does it. Then one
 * representative of every group a key may use.
 */
import path from 'node:path';
import type { Test } from 'supertest';
import { ApiKey, Identity, LinkCode, Session, User } from '../shared/db/entities';
import { useTestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { TestUser, userOnPlan } from './helpers/users';

const fake = new FakeProvider('fake');
const t = useTestApp({ CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json') }, { providers: [fake.adapter()] });

const NOT_ALLOWED = { detail: 'Not allowed with an API key', code: 'api_key_not_allowed' };

/** A vip account with a key, a second session (to list and revoke) and a Telegram link code. */
interface Account {
  user: TestUser;
  key: { id: number; key: string };
  otherSession: { id: number; accessToken: string };
  linkCode: string;
}

async function account(): Promise<Account> {
  const user = await userOnPlan(t.app, 'vip');
  const created = await t.app.http().post('/api/v2/keys').set('authorization', `Bearer ${user.accessToken}`).send({ name: 'server' });
  if (created.status !== 201) throw new Error(`key creation failed: ${created.status}`);
  const login = await t.app.http().post('/api/v2/auth/login').send({ email: user.email, password: user.password });
  const sessions = await t.app.container.db.repo(Session).find({ where: { userId: user.id }, order: { id: 'ASC' } });
  const linkCode = await t.app.container.links.createCode(user.id);
  return {
    user,
    key: { id: created.body.id as number, key: created.body.key as string },
    otherSession: { id: sessions[sessions.length - 1]!.id, accessToken: login.body.access_token as string },
    linkCode,
  };
}

type As = (test: Test) => Test;
const withKey = (a: Account): As => (test) => test.set('authorization', `Bearer ${a.key.key}`);
const withSession = (a: Account): As => (test) => test.set('authorization', `Bearer ${a.user.accessToken}`);

function http() {
  return t.app.http();
}

async function sessionStillWorks(accessToken: string): Promise<void> {
  expect((await http().get('/api/v2/user/me').set('authorization', `Bearer ${accessToken}`)).status).toBe(200);
}

interface AdministeringRoute {
  route: string;
  send(a: Account, as: As): Test;
  /** What a session token gets. */
  sessionStatus: number;
  /** After the key was refused: the account is as it was. */
  unchanged(a: Account): Promise<void>;
}

const administering: AdministeringRoute[] = [
  {
    route: 'POST /api/v2/keys',
    send: (a, as) => as(http().post('/api/v2/keys')).send({ name: 'would outlive the key that made it' }),
    sessionStatus: 201,
    unchanged: async (a) => expect(await t.app.container.db.repo(ApiKey).countBy({ userId: a.user.id })).toBe(1),
  },
  {
    route: 'GET /api/v2/keys',
    send: (a, as) => as(http().get('/api/v2/keys')),
    sessionStatus: 200,
    unchanged: async () => undefined,
  },
  {
    route: 'DELETE /api/v2/keys/{id}',
    send: (a, as) => as(http().delete(`/api/v2/keys/${a.key.id}`)),
    sessionStatus: 204,
    unchanged: async (a) => expect((await http().get('/api/v2/user/me').set('authorization', `Bearer ${a.key.key}`)).status).toBe(200),
  },
  {
    route: 'PATCH /api/v2/user/me',
    send: (a, as) => as(http().patch('/api/v2/user/me')).send({ name: 'Renamed', avatar_url: 'https://img.example/a.png' }),
    sessionStatus: 200,
    unchanged: async (a) => {
      const user = await t.app.container.db.repo(User).findOneByOrFail({ id: a.user.id });
      expect(user.name).not.toBe('Renamed');
      expect(user.avatarUrl).toBeNull();
    },
  },
  {
    route: 'DELETE /api/v2/user/me',
    send: (a, as) => as(http().delete('/api/v2/user/me')),
    sessionStatus: 204,
    unchanged: async (a) => {
      expect(await t.app.container.db.repo(User).findOneBy({ id: a.user.id })).not.toBeNull();
      await sessionStillWorks(a.user.accessToken);
    },
  },
  {
    route: 'PATCH /api/v2/user/settings',
    send: (a, as) => as(http().patch('/api/v2/user/settings')).send({ language: 'ru', image_format: 'jpeg' }),
    sessionStatus: 200,
    unchanged: async (a) => {
      const settings = await http().get('/api/v2/user/settings').set('authorization', `Bearer ${a.user.accessToken}`);
      expect(settings.body.language).not.toBe('ru');
      expect(settings.body.image_format).not.toBe('jpeg');
    },
  },
  {
    route: 'POST /api/v2/auth/change-password',
    send: (a, as) => as(http().post('/api/v2/auth/change-password')).send({ current_password: a.user.password, new_password: 'taken over by a key' }),
    sessionStatus: 204,
    unchanged: async (a) => {
      expect((await http().post('/api/v2/auth/login').send({ email: a.user.email, password: a.user.password })).status).toBe(200);
      await sessionStillWorks(a.otherSession.accessToken);
    },
  },
  {
    route: 'GET /api/v2/auth/sessions',
    send: (a, as) => as(http().get('/api/v2/auth/sessions')),
    sessionStatus: 200,
    unchanged: async () => undefined,
  },
  {
    route: 'DELETE /api/v2/auth/sessions/{id}',
    send: (a, as) => as(http().delete(`/api/v2/auth/sessions/${a.otherSession.id}`)),
    sessionStatus: 204,
    unchanged: async (a) => sessionStillWorks(a.otherSession.accessToken),
  },
  {
    route: 'POST /api/v2/auth/link',
    send: (a, as) => as(http().post('/api/v2/auth/link')).send({ code: a.linkCode }),
    sessionStatus: 200,
    unchanged: async (a) => {
      const code = await t.app.container.db.repo(LinkCode).findOneByOrFail({ userId: a.user.id });
      expect(code.usedAt).toBeNull();
      expect(await t.app.container.db.repo(Identity).countBy({ userId: a.user.id })).toBe(1);
    },
  },
  {
    route: 'POST /api/v2/auth/logout',
    // With the refresh cookie of a session too: a key must not end a session through it.
    send: (a, as) => as(http().post('/api/v2/auth/logout')).set('cookie', `refresh_token=${a.user.refreshToken}`),
    sessionStatus: 204,
    unchanged: async (a) => {
      await sessionStillWorks(a.user.accessToken);
      expect((await http().post('/api/v2/auth/refresh').send({ refresh_token: a.user.refreshToken })).status).toBe(200);
    },
  },
];

describe('routes that administer the account', () => {
  it.each(administering.map((r) => [r.route, r] as const))('%s: a key gets 403 api_key_not_allowed and nothing changes', async (_route, row) => {
    const a = await account();
    const res = await row.send(a, withKey(a));
    expect(res.status).toBe(403);
    expect(res.body).toEqual(NOT_ALLOWED);
    await row.unchanged(a);
  });

  it.each(administering.map((r) => [r.route, r] as const))('%s: a session token does it', async (_route, row) => {
    const a = await account();
    const res = await row.send(a, withSession(a));
    expect(res.status).toBe(row.sessionStatus);
  });

  it('a key whose plan lost API access is still told so first (403 insufficient_plan)', async () => {
    const a = await account();
    await t.app.container.users.setPlan(a.user.id, 'pro');
    const res = await withKey(a)(http().post('/api/v2/keys')).send({ name: 'x' });
    expect(res.body).toEqual({ detail: 'Insufficient plan', code: 'insufficient_plan' });
  });
});

describe('what a key may do', () => {
  let a: Account;
  let generationId: number;
  beforeAll(async () => {
    a = await account();
    const generated = await withKey(a)(http().post('/api/v2/generate')).send({ model: 'fake-text', prompt: 'Hello' });
    expect(generated.status).toBe(200);
    expect(generated.body.status).toBe('completed');
    generationId = Number(String(generated.body.id).replace('gen_', ''));
  });

  const allowed: Array<[string, (a: Account) => Test, number]> = [
    ['generate', (x) => withKey(x)(http().post('/api/v2/generate')).send({ model: 'fake-text', prompt: 'Again' }), 200],
    ['prices', (x) => withKey(x)(http().post('/api/v2/models/fake-text/calculate-price')).send({ prompt: 'Hi' }), 200],
    ['poll (shape A)', (x) => withKey(x)(http().get(`/api/v2/generate/${generationId}`)), 200],
    ['poll (shape B)', (x) => withKey(x)(http().get(`/api/v2/generate/status/gen_${generationId}`)), 200],
    ['cancel', (x) => withKey(x)(http().post(`/api/v2/generate/${generationId}/cancel`)), 200],
    ['history', (x) => withKey(x)(http().get('/api/v2/user/history')), 200],
    ['history actions: favorite', (x) => withKey(x)(http().post(`/api/v2/user/history/${generationId}/favorite`)), 200],
    ['models', (x) => withKey(x)(http().get('/api/v2/models')), 200],
    ['balance', (x) => withKey(x)(http().get('/api/v2/user/balance')), 200],
    ['transactions', (x) => withKey(x)(http().get('/api/v2/user/transactions')), 200],
    ['profile read', (x) => withKey(x)(http().get('/api/v2/user/me')), 200],
    ['settings read', (x) => withKey(x)(http().get('/api/v2/user/settings')), 200],
    ['assistants', (x) => withKey(x)(http().get('/api/v2/assistants/marketplace')), 200],
    ['schedules', (x) => withKey(x)(http().post('/api/v2/scheduled')).send({ name: 'n', cron: '0 9 * * *', model: 'fake-text', prompt: 'p' }), 201],
    ['webhooks', (x) => withKey(x)(http().get('/api/v2/webhooks')), 200],
  ];

  it.each(allowed)('%s works with a key', async (_label, send, status) => {
    const res = await send(a);
    expect(res.body.code).toBeUndefined();
    expect(res.status).toBe(status);
  });
});
