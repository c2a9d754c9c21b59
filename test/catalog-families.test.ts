/**
 * Every upstream model of the shipped catalog, served by protocol-agnostic fakes standing in for
 * its provider: synchronous families complete in the request, asynchronous ones answer pending
 * and complete through the worker, and each is charged exactly its calculated price.
 */
import { loadCatalogFile } from '../shared/catalog';
import { loadConfig } from '../shared/config';
import { useTestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { userOnPlan } from './helpers/users';

const upstreams = ['openai', 'replicate', 'elevenlabs', 'deepgram'];
const fakes = upstreams.map((name) => new FakeProvider(name));
const t = useTestApp({}, { providers: fakes.map((f) => f.adapter()), worker: true });
const models = loadCatalogFile(loadConfig({}).productFiles.catalog).filter((m) => upstreams.includes(m.provider));
const WAV = `data:audio/wav;base64,${Buffer.from('RIFF0000WAVEfmt ').toString('base64')}`;

function bodyFor(category: string): Record<string, unknown> {
  switch (category) {
    case 'tts':
      return { text: 'Hello there' };
    case 'stt':
      return { audio_url: WAV };
    default:
      return { prompt: 'a lighthouse in the fog' };
  }
}

it('covers the families of spec 4.1', () => {
  const categories = new Set(models.map((m) => m.category));
  expect([...categories].sort()).toEqual(['image', 'music', 'stt', 'text', 'tts', 'video']);
});

it.each(models.map((m) => [m.slug, m.category, m.sync ? 'sync' : 'async'] as const))('%s (%s, %s) runs and is charged its price', async (slug, category, mode) => {
  const user = await userOnPlan(t.app, 'elite');
  const auth = ['authorization', `Bearer ${user.accessToken}`] as const;
  const body = { model: slug, ...bodyFor(category) };
  const quote = await t.app.http().post(`/api/v2/models/${slug}/calculate-price`).send(body);
  expect(quote.status).toBe(200);
  const before = (await t.app.http().get('/api/v2/user/balance').set(...auth)).body.token_balance as number;
  const res = await t.app.http().post('/api/v2/generate').set(...auth).send(body);
  expect(res.status).toBe(200);
  let generation = res.body;
  if (mode === 'sync') {
    expect(generation.status).toBe('completed');
  } else {
    expect(generation.status).toBe('pending');
    for (let i = 0; i < 200 && generation.status === 'pending'; i++) {
      await new Promise((r) => setTimeout(r, 25));
      generation = (await t.app.http().get(`/api/v2/generate/${res.body.id}`).set(...auth)).body;
    }
    expect(generation.status).toBe('completed');
  }
  expect(generation.tokens_spent).toBe(quote.body.token_cost);
  const after = (await t.app.http().get('/api/v2/user/balance').set(...auth)).body.token_balance as number;
  expect(before - after).toBe(quote.body.token_cost);
});
