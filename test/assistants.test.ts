/** The assistants marketplace (spec 2.7, 4.10; decisions.md "Other records"). */
import path from 'node:path';
import { useTestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { registerUser, TestUser } from './helpers/users';

const fake = new FakeProvider('fake');
const t = useTestApp(
  { CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json'), ASSISTANTS_PATH: path.join(__dirname, 'fixtures/assistants.json') },
  { providers: [fake.adapter()] },
);

function auth(user: TestUser): [string, string] {
  return ['authorization', `Bearer ${user.accessToken}`];
}

beforeEach(() => fake.reset());

it('lists the marketplace with paging, search and category, counting real installs and ratings', async () => {
  const [a, b] = [await registerUser(t.app), await registerUser(t.app)];
  const all = await t.app.http().get('/api/v2/assistants/marketplace').set(...auth(a));
  expect(all.body.total).toBe(3);
  expect(all.body.assistants[0]).toEqual({ id: 'poet', name: 'Poet', description: 'Writes verse.', model: 'fake-text', category: 'writing', installs: 0, rating: 0 });
  expect((await t.app.http().get('/api/v2/assistants/marketplace?search=POET').set(...auth(a))).body.total).toBe(2);
  expect((await t.app.http().get('/api/v2/assistants/marketplace?category=images').set(...auth(a))).body.assistants.map((x: { id: string }) => x.id)).toEqual(['painter']);
  const paged = await t.app.http().get('/api/v2/assistants/marketplace?limit=2&page=2').set(...auth(a));
  expect(paged.body).toMatchObject({ total: 3, assistants: [{ id: 'critic' }] });

  expect((await t.app.http().post('/api/v2/assistants/marketplace/poet/install').set(...auth(a))).status).toBe(201);
  expect((await t.app.http().post('/api/v2/assistants/marketplace/poet/install').set(...auth(a))).status).toBe(200);
  expect((await t.app.http().post('/api/v2/assistants/marketplace/poet/install').set(...auth(b))).status).toBe(201);
  expect((await t.app.http().post('/api/v2/assistants/poet/rate').set(...auth(a)).send({ rating: 5 })).body).toMatchObject({ rating: 5, installs: 2 });
  expect((await t.app.http().post('/api/v2/assistants/poet/rate').set(...auth(b)).send({ rating: 2 })).body).toMatchObject({ rating: 3.5 });
  const poet = (await t.app.http().get('/api/v2/assistants/marketplace?search=poet').set(...auth(a))).body.assistants.find((x: { id: string }) => x.id === 'poet');
  expect(poet).toMatchObject({ installs: 2, rating: 3.5 });
  expect((await t.app.http().post('/api/v2/assistants/critic/rate').set(...auth(a)).send({ rating: 4 })).status).toBe(404);
  expect((await t.app.http().post('/api/v2/assistants/poet/rate').set(...auth(a)).send({ rating: 0 })).status).toBe(422);
  expect((await t.app.http().post('/api/v2/assistants/marketplace/nope/install').set(...auth(a))).status).toBe(404);
});

it('lists the installed assistants and uninstalls', async () => {
  const user = await registerUser(t.app);
  await t.app.http().post('/api/v2/assistants/marketplace/painter/install').set(...auth(user));
  const mine = await t.app.http().get('/api/v2/assistants').set(...auth(user));
  expect(mine.body).toMatchObject({ total: 1, assistants: [{ id: 'painter', model: 'fake-image', user_rating: null }] });
  expect((await t.app.http().delete('/api/v2/assistants/painter').set(...auth(user))).status).toBe(204);
  expect((await t.app.http().get('/api/v2/assistants').set(...auth(user))).body.total).toBe(0);
  expect((await t.app.http().delete('/api/v2/assistants/painter').set(...auth(user))).status).toBe(404);
});

it('applies an installed assistant to a generation: model, system prompt first, default params under the request\'s', async () => {
  const user = await registerUser(t.app);
  const notInstalled = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ assistant_id: 'poet', prompt: 'the sea' });
  expect(notInstalled.status).toBe(404);
  await t.app.http().post('/api/v2/assistants/marketplace/poet/install').set(...auth(user));
  const res = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ assistant_id: 'poet', prompt: 'the sea', system: 'Rhyme.' });
  expect(res.body).toMatchObject({ status: 'completed', model: 'fake-text' });
  const request = fake.calls[0]?.request as { messages: Array<{ role: string; content: string }>; temperature: number };
  expect(request.messages[0]).toEqual({ role: 'system', content: 'You are a poet.\n\nRhyme.' });
  expect(request.temperature).toBe(1.3);
  await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ assistant_id: 'poet', prompt: 'x', temperature: 0.1 });
  expect((fake.calls[1]?.request as { temperature: number }).temperature).toBe(0.1);

  await t.app.http().post('/api/v2/assistants/marketplace/painter/install').set(...auth(user));
  const image = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ assistant_id: 'painter', prompt: 'a field' });
  expect(image.body).toMatchObject({ status: 'completed', model_slug: 'fake-image', tokens_spent: 8, result_metadata: { width: 1792, height: 1024 } });
  const history = await t.app.http().get('/api/v2/user/history').set(...auth(user));
  expect(history.body.total).toBe(3);
});
