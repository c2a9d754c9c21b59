/**
 * The OpenAI-compatible front door, driven by the official `openai` client (and one round of the
 * Vercel AI SDK's OpenAI-compatible provider) against the real app: models, chat completions plain
 * and streamed, every error class as the client library raises it, billing and history the same
 * as the same work through /api/v2.
 */
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Generation, LedgerEntry, User } from '../shared/db/entities';
import { useTestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { registerUser, TestUser, userOnPlan } from './helpers/users';

const fake = new FakeProvider('fake');
const t = useTestApp({ CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json') }, { providers: [fake.adapter()] });
beforeEach(() => fake.reset());

function baseURL(): string {
  return `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/v1`;
}

async function keyOf(user: TestUser): Promise<string> {
  const res = await t.app.http().post('/api/v2/keys').set('authorization', `Bearer ${user.accessToken}`).send({ name: 'sdk' });
  expect(res.status).toBe(201);
  return res.body.key as string;
}

/** A vip account (API keys need vip or elite) and the official client on its key. */
async function client(bonus = 0, options: { maxRetries?: number } = {}): Promise<{ user: TestUser; openai: OpenAI }> {
  const user = await userOnPlan(t.app, 'vip', bonus);
  return { user, openai: new OpenAI({ apiKey: await keyOf(user), baseURL: baseURL(), maxRetries: options.maxRetries ?? 0 }) };
}

async function balanceOf(userId: number): Promise<{ total: number; held: number }> {
  const row = await t.app.container.db.repo(User).findOneByOrFail({ id: userId });
  return { total: row.subscriptionTokens + row.bonusTokens, held: row.heldTokens };
}

describe('models', () => {
  it('lists the models the plan may use, by slug, and finds one by slug or upstream name', async () => {
    const { openai } = await client();
    const ids = [];
    for await (const model of openai.models.list()) ids.push(model.id);
    expect(ids).toEqual(expect.arrayContaining(['fake-text', 'fake-image', 'fake-vision']));
    expect(ids).not.toContain('missing-provider');
    expect(await openai.models.retrieve('fake-text')).toMatchObject({ id: 'fake-text', object: 'model' });
    await expect(openai.models.retrieve('no-such-model')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('hides models above the plan', async () => {
    const user = await registerUser(t.app);
    const openai = new OpenAI({ apiKey: user.accessToken, baseURL: baseURL(), maxRetries: 0 });
    const ids = [];
    for await (const model of openai.models.list()) ids.push(model.id);
    expect(ids).toContain('fake-text');
    expect(ids).not.toContain('fake-premium');
    await expect(openai.models.retrieve('fake-premium')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });
});

describe('chat completions', () => {
  it('answers a chat completion, charged and in history like the same request through /api/v2', async () => {
    const { user, openai } = await client();
    const before = await balanceOf(user.id);
    const completion = await openai.chat.completions.create({
      model: 'fake-text',
      messages: [
        { role: 'developer', content: 'Be brief.' },
        { role: 'user', content: 'Hello?' },
      ],
      temperature: 0.2,
      max_completion_tokens: 50,
    });
    expect(completion).toMatchObject({
      object: 'chat.completion',
      model: 'fake-text',
      choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'Hello from the fake model' } }],
      usage: { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 },
    });
    const id = Number(completion.id.replace('chatcmpl-', ''));
    const sent = fake.calls.at(-1)?.request as { messages: Array<{ role: string; content: string }>; temperature: number; maxTokens: number };
    expect(sent).toMatchObject({ temperature: 0.2, maxTokens: 50, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello?' }] });
    expect(await balanceOf(user.id)).toEqual({ total: before.total - 2, held: 0 });
    expect(await t.app.container.db.repo(LedgerEntry).countBy({ generationId: id })).toBe(1);
    const history = await t.app.http().get('/api/v2/user/history').set('authorization', `Bearer ${user.accessToken}`);
    expect(history.body.items[0]).toMatchObject({ id, model_slug: 'fake-text', status: 'completed', tokens_spent: 2 });

    // The same request through /api/v2 costs the same.
    const direct = await t.app.http().post('/api/v2/generate').set('authorization', `Bearer ${user.accessToken}`).send({ model: 'fake-text', messages: [{ role: 'user', content: 'Hello?' }] });
    expect(direct.body.tokens_used).toBe(2);
  });

  it('accepts an upstream name as the model, vision parts, and ignores fields it does not use', async () => {
    const { openai } = await client();
    // fake-text's upstream calls it fake-chat: a client may use that name.
    const byUpstreamName = await openai.chat.completions.create({ model: 'fake-chat', messages: [{ role: 'user', content: 'hi' }] });
    expect(byUpstreamName.model).toBe('fake-chat');
    expect(await t.app.container.db.repo(Generation).findOneByOrFail({ id: Number(byUpstreamName.id.replace('chatcmpl-', '')) })).toMatchObject({ modelSlug: 'fake-text' });
    const completion = await openai.chat.completions.create({
      model: 'fake-vision',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'low' } }] }],
      top_p: 0.9,
      user: 'someone',
    });
    expect(completion.choices[0]?.message.content).toBe('Hello from the fake model');
    const sent = fake.calls.at(-1)?.request as { messages: Array<{ content: unknown }> };
    expect(sent.messages[0]?.content).toEqual([{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }]);
  });

  it('streams OpenAI chunks ending in [DONE], with the usage when asked, billed once at the end', async () => {
    const { user, openai } = await client();
    const before = await balanceOf(user.id);
    const stream = await openai.chat.completions.create({ model: 'fake-text', messages: [{ role: 'user', content: 'stream' }], stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('Hello from the fake model');
    expect(finish).toBe('stop');
    expect(usage).toMatchObject({ prompt_tokens: 3, completion_tokens: 5 });
    expect(await balanceOf(user.id)).toEqual({ total: before.total - 2, held: 0 });
  });

  it('does not charge a client that goes away mid-stream, and stops the provider', async () => {
    const { user, openai } = await client();
    fake.reply = Array.from({ length: 300 }, (_, i) => `w${i}`).join(' ');
    const before = await balanceOf(user.id);
    const controller = new AbortController();
    const stream = await openai.chat.completions.create({ model: 'fake-text', messages: [{ role: 'user', content: 'long' }], stream: true }, { signal: controller.signal });
    let chunks = 0;
    try {
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta.content && ++chunks === 3) controller.abort();
      }
    } catch {
      // The client library ends (or throws from) an aborted stream: either way it went away.
    }
    expect(chunks).toBe(3);
    const deadline = Date.now() + 5000;
    let row: Generation | null = null;
    while (Date.now() < deadline) {
      row = await t.app.container.db.repo(Generation).findOne({ where: { userId: user.id }, order: { id: 'DESC' } });
      if (row && row.status !== 'pending') break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(row).toMatchObject({ status: 'failed', tokensSpent: 0 });
    expect(await balanceOf(user.id)).toEqual({ total: before.total, held: 0 });
  });

  it('works through the Vercel AI SDK\'s OpenAI-compatible provider, plain and streamed', async () => {
    const user = await userOnPlan(t.app, 'vip');
    // The SDK is ES modules only, which jest's sandbox cannot load: a plain node process runs the round.
    const script = path.join(__dirname, 'helpers/ai-sdk-round.mjs');
    const { stdout } = await promisify(execFile)(process.execPath, [script, baseURL(), await keyOf(user), 'fake-text', 'Hello?'], { cwd: path.join(__dirname, '..') });
    expect(JSON.parse(stdout)).toEqual({ text: 'Hello from the fake model', inputTokens: 3, streamed: 'Hello from the fake model', streamedUsage: 3 });
  });
});

describe('errors, as the client library raises them', () => {
  it('401 for a bad key', async () => {
    const openai = new OpenAI({ apiKey: 'gsk_' + 'x'.repeat(44), baseURL: baseURL(), maxRetries: 0 });
    const error = await openai.chat.completions.create({ model: 'fake-text', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(error).toMatchObject({ status: 401, code: 'invalid_api_key', type: 'authentication_error' });
  });

  it('403 for a model above the plan, 404 for an unknown one, 400 naming the parameter', async () => {
    const user = await registerUser(t.app);
    const openai = new OpenAI({ apiKey: user.accessToken, baseURL: baseURL(), maxRetries: 0 });
    const messages = [{ role: 'user' as const, content: 'x' }];
    await expect(openai.chat.completions.create({ model: 'fake-premium', messages })).rejects.toBeInstanceOf(OpenAI.PermissionDeniedError);
    const unknown = await openai.chat.completions.create({ model: 'nope', messages }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    expect(unknown).toMatchObject({ code: 'model_not_found' });
    const two = await openai.chat.completions.create({ model: 'fake-text', messages, n: 2 }).catch((e: unknown) => e);
    expect(two).toBeInstanceOf(OpenAI.BadRequestError);
    expect(two).toMatchObject({ param: 'n', type: 'invalid_request_error' });
    const hot = await openai.chat.completions.create({ model: 'fake-text', messages, temperature: 3 }).catch((e: unknown) => e);
    expect(hot).toMatchObject({ status: 400, param: 'temperature' });
    const empty = await openai.chat.completions.create({ model: 'fake-text', messages: [] }).catch((e: unknown) => e);
    expect(empty).toMatchObject({ status: 400, param: 'messages' });
    const image = await openai.chat.completions.create({ model: 'fake-image', messages }).catch((e: unknown) => e);
    expect(image).toMatchObject({ status: 400, param: 'model' });
    // Nothing reached the provider, nothing was charged.
    expect(fake.calls).toEqual([]);
    expect(await t.app.container.db.repo(Generation).countBy({ userId: user.id })).toBe(0);
  });

  it('an empty balance is insufficient_quota, which the client does not retry', async () => {
    const { user, openai } = await client(0, { maxRetries: 2 });
    let requests = 0;
    const count = (): void => void requests++;
    t.app.server.on('request', count);
    try {
      const error = await openai.chat.completions.create({ model: 'fake-expensive', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.RateLimitError);
      expect(error).toMatchObject({ status: 429, code: 'insufficient_quota', type: 'insufficient_quota' });
    } finally {
      t.app.server.off('request', count);
    }
    expect(requests).toBe(1);
    expect((await balanceOf(user.id)).held).toBe(0);
  });

  it('a plan limit is 429 with Retry-After and the limit headers', async () => {
    const user = await registerUser(t.app);
    const openai = new OpenAI({ apiKey: user.accessToken, baseURL: baseURL(), maxRetries: 0 });
    for (let i = 0; i < 5; i++) await openai.chat.completions.create({ model: 'fake-text', messages: [{ role: 'user', content: `${i}` }] });
    const error = await openai.chat.completions.create({ model: 'fake-text', messages: [{ role: 'user', content: 'six' }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    const limited = error as InstanceType<typeof OpenAI.RateLimitError>;
    expect(limited.code).toBe('rate_limit_exceeded');
    expect(Number(limited.headers?.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.headers?.get('x-ratelimit-remaining-hour')).toBe('0');
  });

  it('a provider refusal is 400 content_policy_violation and an outage 502, both uncharged', async () => {
    const { user, openai } = await client();
    const before = await balanceOf(user.id);
    fake.next({ kind: 'refuse', message: 'Your request was rejected by the safety system' });
    const refused = await openai.chat.completions.create({ model: 'fake-text', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect(refused).toMatchObject({ code: 'content_policy_violation', message: expect.stringContaining('safety system') });
    fake.next({ kind: 'unavailable' }, { kind: 'unavailable' });
    const down = await openai.chat.completions.create({ model: 'fake-text', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(down).toBeInstanceOf(OpenAI.InternalServerError);
    expect(down).toMatchObject({ status: 502, code: 'upstream_unavailable' });
    expect(await balanceOf(user.id)).toEqual({ total: before.total, held: 0 });
  });

  it('keeps its error shape for malformed JSON and routes that do not exist', async () => {
    const { user } = await client();
    const malformed = await t.app.http().post('/v1/chat/completions').set('authorization', `Bearer ${user.accessToken}`).set('content-type', 'application/json').send('{"model":');
    expect(malformed.status).toBe(400);
    expect(malformed.body).toEqual({ error: { message: expect.any(String), type: 'invalid_request_error', param: null, code: 'malformed_request' } });
    const missing = await t.app.http().get('/v1/nothing-here').set('authorization', `Bearer ${user.accessToken}`);
    expect(missing.status).toBe(404);
    expect(missing.body.error).toMatchObject({ type: 'invalid_request_error', code: 'not_found' });
  });

  it('replays a request with the same Idempotency-Key and charges once', async () => {
    const { user, openai } = await client();
    const before = await balanceOf(user.id);
    const body = { model: 'fake-text', messages: [{ role: 'user' as const, content: 'once' }] };
    // OpenAI's own client sends no Idempotency-Key by itself; a caller adds the header.
    const first = await openai.chat.completions.create(body, { headers: { 'Idempotency-Key': 'v1-replay-1' } });
    const second = await openai.chat.completions.create(body, { headers: { 'Idempotency-Key': 'v1-replay-1' } });
    expect(second.id).toBe(first.id);
    expect(await balanceOf(user.id)).toEqual({ total: before.total - 2, held: 0 });
  });

  it('answers a replay of a request still running with 409, which the client may retry, and then the completion', async () => {
    const { user, openai } = await client();
    const before = await balanceOf(user.id);
    const body = { model: 'fake-text', messages: [{ role: 'user' as const, content: 'slow' }] };
    const headers = { 'Idempotency-Key': 'v1-replay-running' };
    fake.next({ kind: 'succeed', delayMs: 800 });
    const first = openai.chat.completions.create(body, { headers });
    await new Promise((r) => setTimeout(r, 200));
    const early = await openai.chat.completions.create(body, { headers }).catch((e: unknown) => e);
    expect(early).toBeInstanceOf(OpenAI.ConflictError);
    expect(early).toMatchObject({ status: 409, code: 'idempotent_request_in_progress' });
    const done = await first;
    expect((await openai.chat.completions.create(body, { headers })).id).toBe(done.id);
    expect(await balanceOf(user.id)).toEqual({ total: before.total - 2, held: 0 });
  });
});
