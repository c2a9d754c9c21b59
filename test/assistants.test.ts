/** The assistants marketplace (spec 2.7, 4.10; decisions.md "Other records"). */
import path from 'node:path';
import { AssistantDeclaration, Assistants, loadAssistants, modelsOf } from '../shared/assistants';
import { CatalogModel, loadCatalogFile } from '../shared/catalog';
import { normalizeParams } from '../shared/generation/params';
import { TestApp, useTestApp } from './helpers/app';
import { FakeOpenAI } from './helpers/fake-openai';
import { FakeProvider } from './helpers/fake-provider';
import { registerUser, TestUser, userOnPlan } from './helpers/users';

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

it('uses the first of its models that is offered, and hides an assistant none of whose models is', async () => {
  const user = await registerUser(t.app);
  const critic = (await t.app.http().get('/api/v2/assistants/marketplace?search=critic').set(...auth(user))).body;
  expect(critic).toMatchObject({ total: 1, assistants: [{ id: 'critic', model: 'fake-text' }] });
  expect((await t.app.http().get('/api/v2/assistants/marketplace?search=ghost').set(...auth(user))).body.total).toBe(0);
  expect((await t.app.http().post('/api/v2/assistants/marketplace/ghost/install').set(...auth(user))).status).toBe(404);
  expect((await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ assistant_id: 'ghost', prompt: 'x' })).status).toBe(404);

  expect((await t.app.http().post('/api/v2/assistants/marketplace/critic/install').set(...auth(user))).body).toMatchObject({ id: 'critic', model: 'fake-text' });
  const res = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ assistant_id: 'critic', prompt: 'a sonnet' });
  expect(res.body).toMatchObject({ status: 'completed', model: 'fake-text' });
});

it('resolves the model each time it is asked: models that come and go (a GGUF file that loads later)', async () => {
  const models = new Map(t.app.container.catalog.all().map((m): [string, CatalogModel] => [m.slug, m]));
  const offered = new Set(['fake-premium', 'fake-text']);
  const catalog = { find: (slug: string) => (offered.has(slug) ? models.get(slug) : undefined) };
  const sage: AssistantDeclaration = {
    id: 'sage',
    name: 'Sage',
    description: '',
    category: 'writing',
    model: 'fake-premium',
    fallback_models: ['fake-text'],
    system_prompt: 'Be wise.',
    default_params: {},
  };
  const assistants = new Assistants([sage], catalog, t.app.container.db, t.app.container.clock);
  const [a, b] = [await registerUser(t.app), await registerUser(t.app)];
  const page = { page: 1, limit: 20 };

  expect(assistants.find('sage')).toEqual({ id: 'sage', name: 'Sage', description: '', category: 'writing', model: 'fake-premium', system_prompt: 'Be wise.', default_params: {} });
  offered.delete('fake-premium');
  expect(assistants.find('sage')?.model).toBe('fake-text');
  expect(await assistants.install(a.id, 'sage')).toBe(true);
  expect((await assistants.requireInstalled(a.id, 'sage')).model).toBe('fake-text');
  expect((await assistants.marketplace(page)).items.map((i) => i.assistant.model)).toEqual(['fake-text']);

  offered.delete('fake-text');
  expect(assistants.find('sage')).toBeUndefined();
  expect((await assistants.marketplace(page)).total).toBe(0);
  expect(await assistants.installed(a.id)).toEqual([]);
  await expect(assistants.install(b.id, 'sage')).rejects.toMatchObject({ code: 'not_found' });
  await expect(assistants.requireInstalled(a.id, 'sage')).rejects.toMatchObject({ code: 'not_found' });

  offered.add('fake-premium');
  expect((await assistants.requireInstalled(a.id, 'sage')).model).toBe('fake-premium');
  expect((await assistants.installed(a.id)).map((i) => i.assistant.model)).toEqual(['fake-premium']);
});

describe('the shipped assistants', () => {
  const root = path.join(__dirname, '..');
  const shipped = loadAssistants(path.join(root, 'product/assistants.json'));
  const catalog = loadCatalogFile(path.join(root, 'product/catalog.json'));
  const bySlug = new Map(catalog.flatMap((m) => [m.slug, ...m.aliases].map((key): [string, CatalogModel] => [key, m])));

  it('name models of the shipped catalog, each taking their default params, ending with a free built-in one', () => {
    for (const assistant of shipped) {
      const models = modelsOf(assistant).map((slug) => bySlug.get(slug));
      expect({ id: assistant.id, unknown: modelsOf(assistant).filter((slug) => !bySlug.has(slug)) }).toEqual({ id: assistant.id, unknown: [] });
      for (const model of models as CatalogModel[]) expect(() => normalizeParams(model, {}, assistant.default_params)).not.toThrow();
      const last = models.at(-1) as CatalogModel;
      expect({ id: assistant.id, provider: last.provider, plan: last.minPlan }).toEqual({ id: assistant.id, provider: 'local', plan: 'free' });
    }
  });

  async function generateWithEach(app: TestApp, user: TestUser): Promise<Record<string, { status: string; model: string }>> {
    const results: Record<string, { status: string; model: string }> = {};
    for (const { id } of shipped) {
      const res = await app.http().post('/api/v2/generate').set(...auth(user)).send({ assistant_id: id, prompt: 'the sea at night' });
      expect({ id, status: res.status }).toEqual({ id, status: 200 });
      results[id] = { status: res.body.status, model: res.body.model ?? res.body.model_slug };
    }
    return results;
  }

  describe('on an install with no upstream keys', () => {
    const bare = useTestApp();

    it('are all listed, install and complete a generation with a built-in model', async () => {
      const user = await userOnPlan(bare.app, 'basic');
      const listed = await bare.app.http().get('/api/v2/assistants/marketplace?limit=100').set(...auth(user));
      expect(listed.body.total).toBe(shipped.length);
      const expected: Record<string, string> = {
        copywriter: 'demo-text',
        translator: 'demo-text',
        'code-reviewer': 'demo-text',
        tutor: 'demo-text',
        'poster-artist': 'demo-image',
        storyteller: 'demo-text',
        'sketch-artist': 'demo-image',
      };
      expect(Object.fromEntries(listed.body.assistants.map((a: { id: string; model: string }) => [a.id, a.model]))).toEqual(expected);
      for (const { id } of shipped) {
        const install = await bare.app.http().post(`/api/v2/assistants/marketplace/${id}/install`).set(...auth(user));
        expect({ id, status: install.status, model: install.body.model }).toEqual({ id, status: 201, model: expected[id] });
      }
      expect((await bare.app.http().get('/api/v2/assistants').set(...auth(user))).body.total).toBe(shipped.length);
      const results = await generateWithEach(bare.app, user);
      expect(results).toEqual(Object.fromEntries(Object.entries(expected).map(([id, model]) => [id, { status: 'completed', model }])));
    });
  });

  describe('with an OpenAI-compatible upstream', () => {
    const upstream = new FakeOpenAI();
    const env: Record<string, string> = {};
    beforeAll(async () => {
      await upstream.start();
      env.OPENAI_BASE_URL = upstream.baseUrl;
    });
    afterAll(() => upstream.close());
    const withUpstream = useTestApp(env);

    it('use their own models: the chat models upstream, the offline demos built in', async () => {
      const user = await userOnPlan(withUpstream.app, 'basic');
      const listed = await withUpstream.app.http().get('/api/v2/assistants/marketplace?limit=100').set(...auth(user));
      const expected: Record<string, string> = {
        copywriter: 'chat-fast',
        translator: 'chat-fast',
        'code-reviewer': 'chat-large',
        tutor: 'chat-fast',
        'poster-artist': 'image-prompt-following',
        storyteller: 'demo-text',
        'sketch-artist': 'demo-image',
      };
      expect(Object.fromEntries(listed.body.assistants.map((a: { id: string; model: string }) => [a.id, a.model]))).toEqual(expected);
      for (const { id } of shipped) await withUpstream.app.http().post(`/api/v2/assistants/marketplace/${id}/install`).set(...auth(user));
      const results = await generateWithEach(withUpstream.app, user);
      expect(results).toEqual(Object.fromEntries(Object.entries(expected).map(([id, model]) => [id, { status: 'completed', model }])));

      const chats = upstream.requests.filter((r) => r.path === '/v1/chat/completions').map((r) => r.json as { model: string; messages: Array<{ role: string; content: string }> });
      expect(chats.map((c) => c.model)).toEqual(['gpt-4o-mini', 'gpt-4o-mini', 'gpt-4.1', 'gpt-4o-mini']);
      expect(chats[0]?.messages[0]).toEqual({ role: 'system', content: shipped.find((a) => a.id === 'copywriter')?.system_prompt });
      const image = upstream.requests.find((r) => r.path === '/v1/images/generations')?.json;
      expect(image).toMatchObject({ model: 'dall-e-3', size: '1024x1792', style: 'vivid' });
    });
  });
});
