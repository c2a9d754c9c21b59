import path from 'node:path';
import { Generation, LedgerEntry, User } from '../shared/db/entities';
import { useTestApp } from './helpers/app';
import { downProvider, FakeProvider } from './helpers/fake-provider';
import { registerUser, TestUser, userOnPlan } from './helpers/users';

const fake = new FakeProvider('fake');
const t = useTestApp(
  { CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json'), CONTENT_POLICY_BLOCKLIST: 'forbidden,bad word' },
  { providers: [fake.adapter(), downProvider('down')], worker: true },
);

function auth(user: TestUser): [string, string] {
  return ['authorization', `Bearer ${user.accessToken}`];
}

async function balance(user: TestUser) {
  const res = await t.app.http().get('/api/v2/user/balance').set(...auth(user));
  return res.body as { token_balance: number; held_tokens: number; plan_tokens_remaining: number; bonus_tokens: number };
}

async function poll(user: TestUser, id: number | string, timeoutMs = 10_000) {
  const started = Date.now();
  for (;;) {
    const res = await t.app.http().get(`/api/v2/generate/${id}`).set(...auth(user));
    if (res.body.status !== 'pending' || Date.now() - started > timeoutMs) return res.body;
    await new Promise((r) => setTimeout(r, 20));
  }
}

beforeEach(() => fake.reset());

describe('synchronous text', () => {
  it('completes in the request, charges the price once, and answers the union of both shapes', async () => {
    const user = await registerUser(t.app);
    const res = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-text', prompt: 'Say hello' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: expect.stringMatching(/^gen_\d+$/),
      status: 'completed',
      model: 'fake-text',
      model_slug: 'fake-text',
      content: 'Hello from the fake model',
      result_text: 'Hello from the fake model',
      tokens_used: 2,
      tokens_spent: 2,
      balance_remaining: 48,
      usage: { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 },
    });
    expect(typeof res.body.processing_ms).toBe('number');
    expect(await balance(user)).toMatchObject({ token_balance: 48, held_tokens: 0 });
    const ledger = await t.app.container.db.repo(LedgerEntry).findBy({ userId: user.id, reason: 'generation' });
    expect(ledger).toHaveLength(1);
    expect(ledger[0]).toMatchObject({ amount: -2 });
  });

  it('accepts the messages form with system, and the params at the top level or in params', async () => {
    const user = await registerUser(t.app);
    const res = await t.app
      .http()
      .post('/api/v2/generate')
      .set(...auth(user))
      .send({ model: 'fake-text', system: 'Be brief', messages: [{ role: 'user', content: 'hi' }], temperature: 0.2, max_tokens: 50 });
    expect(res.body.status).toBe('completed');
    const request = fake.calls[0]?.request as { messages: Array<{ role: string; content: string }>; temperature: number; maxTokens: number };
    expect(request.messages[0]).toEqual({ role: 'system', content: 'Be brief' });
    expect(request.temperature).toBe(0.2);
    expect(request.maxTokens).toBe(50);

    await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-text', prompt: 'hi', params: { temperature: 1.5, system_prompt: 'S' } });
    const second = fake.calls[1]?.request as { temperature: number; messages: Array<{ role: string }> };
    expect(second.temperature).toBe(1.5);
    expect(second.messages.map((m) => m.role)).toEqual(['system', 'user']);
  });

  it.each([
    [{ model: 'fake-text', prompt: 'x', temperature: 3 }, 'temperature'],
    [{ model: 'fake-text', prompt: 'x', params: { temperature: -1 } }, 'params.temperature'],
    [{ model: 'fake-text', prompt: 'x', temperature: 'hot' }, 'temperature'],
    [{ model: 'fake-text', prompt: 'x', temperature: 1, params: { temperature: 0.5 } }, 'params.temperature'],
    [{ model: 'fake-text' }, 'prompt'],
    [{ model: 'fake-text', messages: [] }, 'messages'],
    [{ model: 'fake-text', messages: [{ role: 'robot', content: 'x' }] }, 'messages.0.role'],
    [{ model: 'fake-text', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] }] }, 'messages.0.content'],
    [{ model: 'fake-text', prompt: 'x'.repeat(5000), label: 'too long for the context' }, 'messages'],
    [{ model: 'fake-image', prompt: 'cat', size: '999x999' }, 'size'],
    [{ model: 'fake-image', prompt: 'cat', format: 'gif' }, 'format'],
    [{ model: 'fake-image', prompt: 'cat', negative_prompt: 'dog' }, 'negative_prompt'],
    [{ model: 'fake-video', prompt: 'sea', duration: 7 }, 'duration'],
    [{ model: 'fake-text', prompt: 42 }, 'prompt'],
    [{ prompt: 'no model' }, 'model'],
  ])('rejects %j with 422 naming %s, charging and counting nothing', async (body, field) => {
    const user = await registerUser(t.app);
    const res = await t.app.http().post('/api/v2/generate').set(...auth(user)).send(body);
    expect(res.status).toBe(422);
    expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    expect(await balance(user)).toMatchObject({ token_balance: 50, held_tokens: 0 });
    expect(res.headers['x-ratelimit-remaining-hour']).toBe('5');
    expect(await t.app.container.db.repo(Generation).countBy({ userId: user.id })).toBe(0);
  });

  it('is 404 for an unknown model and for one whose provider is not configured', async () => {
    const user = await registerUser(t.app);
    for (const model of ['no-such-model', 'missing-provider']) {
      const res = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model, prompt: 'x' });
      expect(res.status).toBe(404);
    }
  });

  it('is 403 "Insufficient plan" for a model above the plan', async () => {
    const user = await registerUser(t.app);
    const res = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-premium', prompt: 'x' });
    expect(res.status).toBe(403);
    expect(res.body.detail).toBe('Insufficient plan');
  });

  it('is 402 with price and available when the balance cannot cover the price, and counts nothing', async () => {
    const user = await registerUser(t.app);
    const res = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-expensive', prompt: 'x' });
    expect(res.status).toBe(402);
    expect(res.body).toMatchObject({ detail: 'Insufficient tokens', code: 'insufficient_tokens', price: 1000000, available: 50 });
    const me = await t.app.http().get('/api/v2/user/me').set(...auth(user));
    expect(me.headers['x-ratelimit-remaining-hour']).toBe('5');
  });

  it('fails uncharged when the provider refuses, with its message', async () => {
    const user = await registerUser(t.app);
    fake.next({ kind: 'refuse', message: 'Your request was rejected by the safety system' });
    const res = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-text', prompt: 'x' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'failed', error: 'Your request was rejected by the safety system', tokens_used: 0, tokens_spent: 0 });
    expect(await balance(user)).toMatchObject({ token_balance: 50, held_tokens: 0 });
  });

  it('retries a transient failure once within the request', async () => {
    const user = await registerUser(t.app);
    fake.next({ kind: 'rate_limited' });
    const res = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-text', prompt: 'x' });
    expect(res.body.status).toBe('completed');
    fake.next({ kind: 'unavailable' }, { kind: 'unavailable' });
    const failed = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-text', prompt: 'x' });
    expect(failed.body.status).toBe('failed');
    expect(await balance(user)).toMatchObject({ token_balance: 48, held_tokens: 0 });
  });

  it('fails a model that does not answer within its timeout, uncharged', async () => {
    const user = await registerUser(t.app);
    fake.next({ kind: 'hang' }, { kind: 'hang' });
    const res = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-text', prompt: 'x' });
    expect(res.body).toMatchObject({ status: 'failed', tokens_used: 0 });
    expect(res.body.error).toMatch(/did not answer in time/);
    expect(await balance(user)).toMatchObject({ token_balance: 50, held_tokens: 0 });
  }, 20_000);

  it('falls back to the next provider when the first is down', async () => {
    const user = await registerUser(t.app);
    const res = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fallback-text', prompt: 'x' });
    expect(res.body.status).toBe('completed');
    expect((fake.calls[0]?.request as { upstreamModel: string }).upstreamModel).toBe('fake-fallback');
  });

  it('blocks prompts with a blocklisted whole word as a failed, uncharged generation', async () => {
    const user = await registerUser(t.app);
    const res = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-text', prompt: 'this is FORBIDDEN stuff' });
    expect(res.body).toMatchObject({ status: 'failed', error: 'Content policy violation', tokens_used: 0 });
    expect(fake.calls).toHaveLength(0);
    const sys = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-text', prompt: 'fine', system: 'say a bad word' });
    expect(sys.body.status).toBe('failed');
    const partial = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-text', prompt: 'unforbiddenness is fine' });
    expect(partial.body.status).toBe('completed');
  });
});

describe('images, aliases and prices', () => {
  it('prices by size and quality with the catalog rule, returns the seed and a file URL', async () => {
    const user = await userOnPlan(t.app, 'basic');
    const cases: Array<[Record<string, unknown>, number]> = [
      [{}, 4],
      [{ size: '1792x1024' }, 8],
      [{ quality: 'hd' }, 8],
      [{ size: '1024x1792', quality: 'hd' }, 16],
    ];
    for (const [params, price] of cases) {
      const before = (await balance(user)).token_balance;
      const quote = await t.app.http().post('/api/v2/models/fake-image/calculate-price').send({ params });
      expect(quote.body.token_cost).toBe(price);
      const res = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-image', prompt: 'a cat', params, seed: 7 });
      expect(res.body).toMatchObject({ id: expect.any(Number), status: 'completed', tokens_spent: price, seed: 7 });
      expect(res.body.result_url).toMatch(/\/files\/results\/\d{4}\/\d{2}\/[0-9a-f]{32}\.png$/);
      expect((await balance(user)).token_balance).toBe(before - price);
    }
  });

  it("uses the account's default image size when a request names none (and the model offers it), in the price too", async () => {
    const user = await userOnPlan(t.app, 'basic');
    const settings = await t.app.http().patch('/api/v2/user/settings').set(...auth(user)).send({ default_image_size: '1792x1024' });
    expect(settings.status).toBe(200);

    // Quoted to the account as charged: the wide size costs double.
    expect((await t.app.http().post('/api/v2/models/fake-image/calculate-price').set(...auth(user)).send({})).body).toMatchObject({ token_cost: 8, params: { size: '1792x1024' } });
    // A visitor without an account is quoted the model's own default.
    expect((await t.app.http().post('/api/v2/models/fake-image/calculate-price').send({})).body).toMatchObject({ token_cost: 4, params: { size: '1024x1024' } });

    // The size the generation was made with, as stored with its request.
    const sizeOf = async (id: number) => (await t.app.container.generations.requestOf(await t.app.container.db.repo(Generation).findOneByOrFail({ id }))).params.size;
    const wide = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-image', prompt: 'a wide cat' });
    expect(wide.body).toMatchObject({ status: 'completed', tokens_spent: 8 });
    expect(await sizeOf(wide.body.id)).toBe('1792x1024');

    // A size in the request wins, at the top level or in params.
    const square = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-image', prompt: 'a cat', size: '1024x1024' });
    expect(square.body).toMatchObject({ tokens_spent: 4 });
    expect(await sizeOf(square.body.id)).toBe('1024x1024');
    const tall = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-image', prompt: 'a cat', params: { size: '1024x1792' } });
    expect(tall.body).toMatchObject({ tokens_spent: 8 });
    expect(await sizeOf(tall.body.id)).toBe('1024x1792');

    // A size the model does not offer leaves the model's default.
    await t.app.http().patch('/api/v2/user/settings').set(...auth(user)).send({ default_image_size: '512x768' });
    const fallback = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-image', prompt: 'a cat' });
    expect(fallback.body).toMatchObject({ status: 'completed', tokens_spent: 4 });
    expect(await sizeOf(fallback.body.id)).toBe('1024x1024');
  });

  it('serves the result file with its content type, length and ranges', async () => {
    const user = await registerUser(t.app);
    const res = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-image', prompt: 'a cat' });
    const filePath = new URL(res.body.result_url).pathname;
    const file = await t.app.http().get(filePath).buffer(true);
    expect(file.status).toBe(200);
    expect(file.headers['content-type']).toBe('image/png');
    expect(Number(file.headers['content-length'])).toBeGreaterThan(50);
    const range = await t.app.http().get(filePath).set('range', 'bytes=0-7').buffer(true);
    expect(range.status).toBe(206);
    expect(range.headers['content-range']).toMatch(/^bytes 0-7\/\d+$/);
    const size = Number(file.headers['content-length']);
    const beyond = await t.app.http().get(filePath).set('range', `bytes=${size}-`);
    expect(beyond.status).toBe(416);
    expect(beyond.headers['content-range']).toBe(`bytes */${size}`);
    expect(beyond.body).toEqual({ detail: 'Range not satisfiable', code: 'range_not_satisfiable' });
    expect((await t.app.http().get('/files/results/2026/11/00000000000000000000000000000000.png')).status).toBe(404);
    expect((await t.app.http().get('/files/../../etc/passwd')).status).toBe(404);
  });

  it('keeps an old slug working as an alias', async () => {
    const user = await registerUser(t.app);
    const res = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'old-fake-image', prompt: 'a cat' });
    expect(res.body).toMatchObject({ status: 'completed', model_slug: 'fake-image' });
  });
});

describe('asynchronous generations', () => {
  it('answers pending at once and completes through the worker, charged on completion', async () => {
    const user = await userOnPlan(t.app, 'basic');
    const res = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-video', prompt: 'the sea', duration: 10, resolution: '1080p' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: expect.any(Number), status: 'pending', tokens_spent: 0, processing_ms: null, result_url: null });
    // The balance as the hold left it (a hold does not lower it; the capture will).
    expect(res.body.balance_remaining).toBe(1000);
    expect(res.body.created_at).toEqual(expect.any(String));
    const done = await poll(user, res.body.id);
    expect(done).toMatchObject({ status: 'completed', tokens_spent: 93, result_metadata: { width: 1280, height: 720, duration: 10 } });
    expect(done.thumbnail_url).toMatch(/\.png$/);
    const status = await t.app.http().get(`/api/v2/generate/status/gen_${res.body.id}`).set(...auth(user));
    expect(status.body).toMatchObject({ id: `gen_${res.body.id}`, status: 'completed', duration: 10, width: 1280, height: 720, tokens_used: 93 });
    expect(status.body.balance_remaining).toBe(1000 - 93);
    expect(status.body.completed_at).toEqual(expect.any(String));
  });

  it('shows progress and eta while pending, and a failed async generation costs nothing', async () => {
    const user = await registerUser(t.app);
    fake.next({ kind: 'succeed', delayMs: 300 });
    const res = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-art', prompt: 'a castle' });
    expect(res.body.status).toBe('pending');
    expect(res.body.eta_seconds).toBeGreaterThan(0);
    const status = await t.app.http().get(`/api/v2/generate/status/${res.body.id}`).set(...auth(user));
    expect(status.body).toMatchObject({ status: 'pending', progress: expect.any(Number), eta_seconds: expect.any(Number) });
    await poll(user, res.body.id);

    fake.next({ kind: 'refuse', message: 'Content policy: nope' });
    const refused = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-art', prompt: 'a castle' });
    const end = await poll(user, refused.body.id);
    expect(end).toMatchObject({ status: 'failed', error: 'Content policy: nope', tokens_spent: 0 });
    expect(await balance(user)).toMatchObject({ token_balance: 44, held_tokens: 0 });
  });

  it('holds the price while pending; cancel fails it uncharged and releases the hold', async () => {
    const user = await registerUser(t.app);
    fake.next({ kind: 'hang' });
    const res = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-art', prompt: 'slow' });
    expect(await balance(user)).toMatchObject({ token_balance: 50, held_tokens: 6 });
    const cancel = await t.app.http().post(`/api/v2/generate/gen_${res.body.id}/cancel`).set(...auth(user));
    expect(cancel.status).toBe(200);
    expect(cancel.body).toMatchObject({ id: res.body.id, status: 'failed', error: 'Cancelled', tokens_spent: 0 });
    expect(await balance(user)).toMatchObject({ token_balance: 50, held_tokens: 0 });
    const again = await t.app.http().post(`/api/v2/generate/${res.body.id}/cancel`).set(...auth(user));
    expect(again.body.status).toBe('failed');
  });

  it('retries a transient failure in the job and completes once', async () => {
    const user = await registerUser(t.app);
    fake.next({ kind: 'unavailable' });
    const res = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-art', prompt: 'retry me' });
    const done = await poll(user, res.body.id, 20_000);
    expect(done).toMatchObject({ status: 'completed', tokens_spent: 6 });
    const row = await t.app.container.db.repo(Generation).findOneByOrFail({ id: res.body.id });
    expect(row.attempts).toBe(2);
    expect(await t.app.container.db.repo(LedgerEntry).countBy({ generationId: res.body.id })).toBe(1);
  }, 30_000);
});

describe('ids and ownership', () => {
  it('accepts 123 and gen_123 everywhere, and another user\'s generation is 404', async () => {
    const owner = await registerUser(t.app);
    const stranger = await registerUser(t.app);
    const res = await t.app.http().post('/api/v2/generate').set(...auth(owner)).send({ model: 'fake-text', prompt: 'x' });
    const n = Number(String(res.body.id).replace('gen_', ''));
    for (const path of [`/api/v2/generate/${n}`, `/api/v2/generate/gen_${n}`, `/api/v2/generate/status/${n}`, `/api/v2/generate/status/gen_${n}`]) {
      expect((await t.app.http().get(path).set(...auth(owner))).status).toBe(200);
      expect((await t.app.http().get(path).set(...auth(stranger))).status).toBe(404);
    }
    expect((await t.app.http().get('/api/v2/generate/gen_abc').set(...auth(owner))).status).toBe(404);
    expect((await t.app.http().post(`/api/v2/generate/${n}/cancel`).set(...auth(stranger))).status).toBe(404);
    expect((await t.app.http().get(`/api/v2/generate/${n}`)).status).toBe(401);
  });
});

describe('idempotency', () => {
  it('returns the first generation for a repeated key and charges once', async () => {
    const user = await registerUser(t.app);
    const send = () => t.app.http().post('/api/v2/generate').set(...auth(user)).set('idempotency-key', 'k-1').send({ model: 'fake-text', prompt: 'once' });
    const [a, b] = await Promise.all([send(), send()]);
    const c = await send();
    expect(a.body.id).toBe(b.body.id);
    expect(c.body.id).toBe(a.body.id);
    expect(await balance(user)).toMatchObject({ token_balance: 48 });
    expect(c.headers['x-ratelimit-remaining-hour']).toBe('4');
    const other = await t.app.http().post('/api/v2/generate').set(...auth(user)).set('idempotency-key', 'k-1').send({ model: 'fake-text', prompt: 'different' });
    expect(other.status).toBe(422);
    t.app.clock.advance(24 * 3600 + 1);
    const later = await send();
    expect(later.body.id).not.toBe(a.body.id);
  });
});

describe('limits', () => {
  it('counts accepted generations: the 6th in an hour on free is 429 with retry_after', async () => {
    const user = await registerUser(t.app);
    await t.app.container.users.grantTokens(user.id, 100);
    for (let i = 0; i < 5; i++) {
      const res = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-text', prompt: `n${i}` });
      expect(res.status).toBe(200);
      expect(res.headers['x-ratelimit-remaining-hour']).toBe(String(4 - i));
    }
    const refused = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-text', prompt: 'six' });
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ detail: 'Rate limit exceeded', retry_after: expect.any(Number) });
    expect(refused.headers['retry-after']).toBe(String(refused.body.retry_after));
  });
});

describe('capturing a hold', () => {
  it('charges subscription tokens first, then bonus tokens, with the balances after in the ledger', async () => {
    const user = await registerUser(t.app);
    await t.app.container.db.repo(User).update({ id: user.id }, { subscriptionTokens: 3, bonusTokens: 10 });
    const res = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-image', prompt: 'a kite' });
    expect(res.body).toMatchObject({ status: 'completed', tokens_spent: 4 });
    const ledger = await t.app.container.db.repo(LedgerEntry).find({ where: { userId: user.id, reason: 'generation' } });
    expect(ledger).toHaveLength(1);
    expect(ledger[0]).toMatchObject({ amount: -4, subscriptionAfter: 0, bonusAfter: 9 });
    expect(await t.app.container.db.repo(User).findOneByOrFail({ id: user.id })).toMatchObject({ subscriptionTokens: 0, bonusTokens: 9, heldTokens: 0 });
  });

  it('charges only what is left when an operator took tokens from under a pending hold', async () => {
    const user = await registerUser(t.app);
    fake.next({ kind: 'succeed', delayMs: 300 });
    const res = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-art', prompt: 'a kite' });
    expect(res.body.status).toBe('pending');
    // An operator's correction while the generation runs: 3 tokens left of the 6 held.
    await t.app.container.db.repo(User).update({ id: user.id }, { subscriptionTokens: 2, bonusTokens: 1 });
    expect(await poll(user, res.body.id)).toMatchObject({ status: 'completed', tokens_spent: 3 });
    const ledger = await t.app.container.db.repo(LedgerEntry).find({ where: { userId: user.id, reason: 'generation' } });
    expect(ledger).toHaveLength(1);
    expect(ledger[0]).toMatchObject({ amount: -3, subscriptionAfter: 0, bonusAfter: 0 });
    expect(await t.app.container.db.repo(User).findOneByOrFail({ id: user.id })).toMatchObject({ subscriptionTokens: 0, bonusTokens: 0, heldTokens: 0 });
  });
});

describe('billing under concurrency', () => {
  it('never overdraws or double-charges with 50 concurrent requests', async () => {
    const user = await userOnPlan(t.app, 'elite');
    await t.app.container.users.grantTokens(user.id, -(25000 - 30));
    expect((await balance(user)).token_balance).toBe(30);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-text', prompt: `c${i}` })),
    );
    const completed = results.filter((r) => r.status === 200 && r.body.status === 'completed').length;
    const refused = results.filter((r) => r.status === 402).length;
    expect(completed).toBe(15);
    expect(refused).toBe(35);
    const row = await t.app.container.db.repo(User).findOneByOrFail({ id: user.id });
    expect(row.subscriptionTokens + row.bonusTokens).toBe(0);
    expect(row.heldTokens).toBe(0);
    const spent = await t.app.container.db.repo(LedgerEntry).findBy({ userId: user.id, reason: 'generation' });
    expect(spent).toHaveLength(15);
    expect(spent.reduce((n, e) => n + e.amount, 0)).toBe(-30);
  });
});

describe('streaming', () => {
  function parseEvents(text: string) {
    return text
      .split('\n\n')
      .filter((block) => block.trim())
      .map((block) => {
        const event = /event: (.+)/.exec(block)?.[1];
        const data = JSON.parse(/data: (.+)/.exec(block)?.[1] ?? 'null');
        return { event, data };
      });
  }

  it('streams generation_start, content_delta… and generation_end, charged once at the end', async () => {
    const user = await registerUser(t.app);
    const res = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-text', prompt: 'stream', stream: true }).buffer(true).parse((response, done) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => done(null, text));
    });
    expect(res.headers['content-type']).toMatch(/text\/event-stream/);
    const events = parseEvents(res.body as string);
    expect(events[0]).toMatchObject({ event: 'generation_start', data: { id: expect.stringMatching(/^gen_/), model: 'fake-text' } });
    const deltas = events.filter((e) => e.event === 'content_delta').map((e) => e.data.delta).join('');
    expect(deltas).toBe('Hello from the fake model');
    expect(events.at(-1)).toMatchObject({
      event: 'generation_end',
      data: { status: 'completed', content: 'Hello from the fake model', tokens_used: 2, balance_remaining: 48, usage: { completion_tokens: 5 } },
    });
    expect(await balance(user)).toMatchObject({ token_balance: 48, held_tokens: 0 });
  });

  it('ends with a failed generation_end when the provider fails mid-way, uncharged', async () => {
    const user = await registerUser(t.app);
    fake.next({ kind: 'refuse', message: 'refused mid-stream' });
    const res = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-text', prompt: 'x', stream: true }).buffer(true).parse((response, done) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => done(null, text));
    });
    const end = parseEvents(res.body as string).at(-1);
    // Not charged: the balance it reports is the owner's as it stands.
    expect(end).toMatchObject({ event: 'generation_end', data: { status: 'failed', tokens_used: 0, error: 'refused mid-stream', balance_remaining: 50 } });
    expect(await balance(user)).toMatchObject({ token_balance: 50, held_tokens: 0 });
  });

  it('does not charge a client that disconnects mid-stream, and stops the provider', async () => {
    const user = await registerUser(t.app);
    fake.reply = Array.from({ length: 400 }, (_, i) => `w${i}`).join(' ');
    const address = t.app.server.address();
    if (!address || typeof address === 'string') throw new Error('no address');
    const controller = new AbortController();
    const response = await fetch(`http://127.0.0.1:${address.port}/api/v2/generate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${user.accessToken}` },
      body: JSON.stringify({ model: 'fake-text', prompt: 'long', stream: true }),
      signal: controller.signal,
    });
    const reader = response.body?.getReader();
    await reader?.read();
    controller.abort();
    const deadline = Date.now() + 5000;
    let row: Generation | null = null;
    while (Date.now() < deadline) {
      row = await t.app.container.db.repo(Generation).findOne({ where: { userId: user.id }, order: { id: 'DESC' } });
      if (row?.status !== 'pending') break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(row).toMatchObject({ status: 'failed', tokensSpent: 0 });
    expect(await balance(user)).toMatchObject({ token_balance: 50, held_tokens: 0 });
  });

  it('stops a stream that is cancelled, uncharged, and ends it with the cancellation', async () => {
    const user = await registerUser(t.app);
    fake.reply = Array.from({ length: 400 }, (_, i) => `w${i}`).join(' ');
    const address = t.app.server.address();
    if (!address || typeof address === 'string') throw new Error('no address');
    const response = await fetch(`http://127.0.0.1:${address.port}/api/v2/generate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${user.accessToken}` },
      body: JSON.stringify({ model: 'fake-text', prompt: 'long', stream: true }),
    });
    const reader = response.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    const id = /"id":"(gen_\d+)"/.exec(first)?.[1];
    expect(id).toBeDefined();
    const cancel = await t.app.http().post(`/api/v2/generate/${id}/cancel`).set(...auth(user));
    expect(cancel.body).toMatchObject({ status: 'failed', error: 'Cancelled' });
    let text = first;
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      text += new TextDecoder().decode(chunk.value);
    }
    // The provider call stopped: the client got only part of the 400 words.
    const events = parseEvents(text);
    expect(events.filter((e) => e.event === 'content_delta').length).toBeLessThan(400);
    expect(events.at(-1)).toMatchObject({ event: 'generation_end', data: { status: 'failed', tokens_used: 0, error: 'Cancelled' } });
    expect(await balance(user)).toMatchObject({ token_balance: 50, held_tokens: 0 });
  });
});

describe('models', () => {
  it('lists offered models with prices and filters by category and plan; hides unconfigured ones', async () => {
    const all = await t.app.http().get('/api/v2/models');
    expect(all.status).toBe(200);
    const slugs = all.body.models.map((m: { slug: string }) => m.slug);
    expect(slugs).toContain('fake-image');
    expect(slugs).not.toContain('missing-provider');
    expect(all.body.total).toBe(all.body.models.length);
    const image = all.body.models.find((m: { slug: string }) => m.slug === 'fake-image');
    expect(image).toMatchObject({ token_cost: 4, min_token_cost: 4, max_token_cost: 16, category: 'image', min_plan: 'free', is_free: true });
    const video = await t.app.http().get('/api/v2/models/fake-video');
    expect(video.body).toMatchObject({ min_token_cost: 15, max_token_cost: 93 });
    const texts = await t.app.http().get('/api/v2/models?category=text&min_plan=free');
    expect(texts.body.models.every((m: { category: string; min_plan: string }) => m.category === 'text' && m.min_plan === 'free')).toBe(true);
    expect((await t.app.http().get('/api/v2/models?category=nope')).status).toBe(422);
    expect((await t.app.http().get('/api/v2/models/nope')).status).toBe(404);
  });

  it('calculate-price returns the normalized params with defaults', async () => {
    const res = await t.app.http().post('/api/v2/models/fake-video/calculate-price').send({ duration: 10 });
    expect(res.body).toMatchObject({ model: 'fake-video', token_cost: 45, min_token_cost: 15, max_token_cost: 93, params: { duration: 10, resolution: '720p', aspect_ratio: '16:9' } });
    expect((await t.app.http().post('/api/v2/models/fake-video/calculate-price').send({ duration: 3 })).status).toBe(422);
  });

  it('avg-time reports the mean processing time of completed generations', async () => {
    const before = await t.app.http().get('/api/v2/models/fake-premium/avg-time');
    expect(before.body).toEqual({ slug: 'fake-premium', avg_time_ms: null, samples: 0 });
    const after = await t.app.http().get('/api/v2/models/fake-text/avg-time');
    expect(after.body.samples).toBeGreaterThan(0);
    expect(typeof after.body.avg_time_ms).toBe('number');
  });
});

describe('history and transactions', () => {
  it('lists, filters, favorites, rates and deletes', async () => {
    const user = await userOnPlan(t.app, 'basic');
    const text = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-text', prompt: 'first' });
    const image = await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-image', prompt: 'second' });
    const textId = Number(String(text.body.id).replace('gen_', ''));

    const list = await t.app.http().get('/api/v2/user/history').set(...auth(user));
    expect(list.body).toMatchObject({ total: 2, page: 1, limit: 20, pages: 1 });
    expect(list.body.items[0]).toMatchObject({ id: image.body.id, model_slug: 'fake-image', model_name: 'Fake image', category: 'image', prompt: 'second', is_favorited: false, user_rating: null });

    expect((await t.app.http().get('/api/v2/user/history?category=text').set(...auth(user))).body.total).toBe(1);
    expect((await t.app.http().get('/api/v2/user/history?type=image').set(...auth(user))).body.total).toBe(1);
    expect((await t.app.http().get('/api/v2/user/history?model=fake-text').set(...auth(user))).body.total).toBe(1);
    expect((await t.app.http().get('/api/v2/user/history?status=failed').set(...auth(user))).body.total).toBe(0);
    expect((await t.app.http().get('/api/v2/user/history?limit=1&page=2').set(...auth(user))).body).toMatchObject({ pages: 2, items: [{ id: textId }] });
    expect((await t.app.http().get('/api/v2/user/history?limit=101').set(...auth(user))).status).toBe(422);

    const fav = await t.app.http().post(`/api/v2/user/history/gen_${textId}/favorite`).set(...auth(user));
    expect(fav.body).toEqual({ id: textId, is_favorited: true });
    expect((await t.app.http().get('/api/v2/user/history?favorites_only=true').set(...auth(user))).body.total).toBe(1);
    const rate = await t.app.http().post(`/api/v2/user/history/${textId}/rate`).set(...auth(user)).send({ rating: 5 });
    expect(rate.body).toEqual({ id: textId, user_rating: 5 });
    expect((await t.app.http().post(`/api/v2/user/history/${textId}/rate`).set(...auth(user)).send({ rating: 6 })).status).toBe(422);

    const stranger = await registerUser(t.app);
    expect((await t.app.http().post(`/api/v2/user/history/${textId}/favorite`).set(...auth(stranger))).status).toBe(404);
    expect((await t.app.http().delete(`/api/v2/user/history/${textId}`).set(...auth(stranger))).status).toBe(404);

    const filePath = new URL(image.body.result_url).pathname;
    expect((await t.app.http().delete(`/api/v2/user/history/${image.body.id}`).set(...auth(user))).status).toBe(204);
    expect((await t.app.http().get(filePath)).status).toBe(404);
    expect((await t.app.http().get(`/api/v2/generate/${image.body.id}`).set(...auth(user))).status).toBe(404);
    expect((await t.app.http().get('/api/v2/user/history').set(...auth(user))).body.total).toBe(1);
    // The ledger still refers to the deleted generation.
    expect(await t.app.container.db.repo(LedgerEntry).countBy({ generationId: image.body.id })).toBe(1);
  });

  it('lists the ledger with balance_after', async () => {
    const user = await registerUser(t.app);
    await t.app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-text', prompt: 'x' });
    const res = await t.app.http().get('/api/v2/user/transactions').set(...auth(user));
    expect(res.body).toMatchObject({ total: 2, page: 1, limit: 20, pages: 1 });
    expect(res.body.items[0]).toMatchObject({ amount: -2, reason: 'generation', balance_after: 48, generation_id: expect.any(Number) });
    expect(res.body.items[1]).toMatchObject({ amount: 50, reason: 'signup_allowance', balance_after: 50, generation_id: null });
  });
});
