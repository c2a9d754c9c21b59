/**
 * Anthropic's Messages API (POST /v1/messages), driven by the official `@anthropic-ai/sdk`
 * against the real app over the fake provider: the Message and what reaches the provider, both
 * credentials, what is refused before anything is held, every error class as the client raises
 * it, Idempotency-Key, and billing and history the same as the same work through /api/v2.
 * Streaming: v1-messages-stream.test.ts; the built-in demo model: v1-messages-local.test.ts;
 * tool use: v1-messages-tools*.test.ts; stop sequences: v1-messages-stop.test.ts.
 */
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { Generation, LedgerEntry } from '../shared/db/entities';
import { useTestApp } from './helpers/app';
import { anthropicBaseURL, anthropicClient, anthropicWithBearer, balanceOf } from './helpers/anthropic-client';
import { FakeProvider } from './helpers/fake-provider';
import { registerUser } from './helpers/users';

const fake = new FakeProvider('fake');
const t = useTestApp({ CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json'), CONTENT_POLICY_BLOCKLIST: 'forbidden' }, { providers: [fake.adapter()] });
beforeEach(() => fake.reset());

type APIError = InstanceType<typeof Anthropic.APIError>;

const hello = [{ role: 'user' as const, content: 'Hello?' }];

async function historyItem(accessToken: string, id: number): Promise<Record<string, unknown>> {
  const res = await t.app.http().get('/api/v2/user/history').set('authorization', `Bearer ${accessToken}`);
  const item = (res.body.items as Array<Record<string, unknown>>).find((i) => i.id === id);
  if (!item) throw new Error(`generation ${id} is not in the history`);
  return item;
}

function idOf(message: { id: string }): number {
  return Number(message.id.replace(/^msg_/, ''));
}

describe('messages', () => {
  it('answers a Message, charged and in history exactly like the same request through /api/v2', async () => {
    const { user, anthropic } = await anthropicClient(t.app);
    const before = await balanceOf(t.app, user.id);
    // The client's types no longer name `temperature` (deprecated); older clients send it, and it is taken.
    const params: Anthropic.MessageCreateParamsNonStreaming & { temperature: number } = { model: 'fake-text', system: 'Be brief.', messages: hello, temperature: 0.2, max_tokens: 50, metadata: { user_id: 'someone' } };
    const message = await anthropic.messages.create(params);
    expect(message).toMatchObject({
      id: expect.stringMatching(/^msg_\d+$/),
      type: 'message',
      role: 'assistant',
      model: 'fake-text',
      content: [{ type: 'text', text: 'Hello from the fake model' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 3, output_tokens: 5 },
    });
    expect(message._request_id).toEqual(expect.any(String));
    // The system prompt, the temperature and max_tokens reach the provider.
    expect(fake.calls.at(-1)?.request).toMatchObject({ temperature: 0.2, maxTokens: 50, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello?' }] });
    const id = idOf(message);
    expect(await balanceOf(t.app, user.id)).toEqual({ total: before.total - 2, held: 0 });
    const ledger = await t.app.container.db.repo(LedgerEntry).findBy({ generationId: id });
    expect(ledger).toMatchObject([{ amount: -2, reason: 'generation' }]);

    // The same request through /api/v2: the same charge, ledger row and history row.
    const direct = await t.app.http().post('/api/v2/generate').set('authorization', `Bearer ${user.accessToken}`)
      .send({ model: 'fake-text', system: 'Be brief.', messages: hello, temperature: 0.2, max_tokens: 50 });
    expect(direct.status).toBe(200);
    const directId = Number(String(direct.body.id).replace(/^gen_/, ''));
    const directLedger = await t.app.container.db.repo(LedgerEntry).findBy({ generationId: directId });
    expect(directLedger.map((e) => [e.amount, e.reason])).toEqual(ledger.map((e) => [e.amount, e.reason]));
    const strip = ({ id: _id, created_at: _created, ...rest }: Record<string, unknown>) => rest;
    expect(strip(await historyItem(user.accessToken, id))).toEqual(strip(await historyItem(user.accessToken, directId)));
    expect(await historyItem(user.accessToken, id)).toMatchObject({ model_slug: 'fake-text', status: 'completed', tokens_spent: 2, prompt: 'Hello?', result_text: 'Hello from the fake model' });
    const rows = await t.app.container.db.repo(Generation).findBy([{ id }, { id: directId }]);
    expect(rows.map((r) => r.source)).toEqual(['api', 'api']);
  });

  it('takes system text blocks, a conversation, and image blocks as the vision parts of a vision model', async () => {
    const { anthropic } = await anthropicClient(t.app);
    const message = await anthropic.messages.create({
      model: 'fake-vision',
      max_tokens: 100,
      system: [{ type: 'text', text: 'You describe pictures.' }, { type: 'text', text: 'Be exact.', cache_control: { type: 'ephemeral' } }],
      messages: [
        { role: 'user', content: 'Hi.' },
        { role: 'assistant', content: 'Hello. Show me.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What are these?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
          ],
        },
      ],
    });
    expect(message.content).toEqual([{ type: 'text', text: 'Hello from the fake model' }]);
    expect(fake.calls.at(-1)?.request).toMatchObject({
      messages: [
        { role: 'system', content: 'You describe pictures.\n\nBe exact.' },
        { role: 'user', content: 'Hi.' },
        { role: 'assistant', content: 'Hello. Show me.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What are these?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
          ],
        },
      ],
    });
  });

  it("accepts an upstream's model name, and stops with max_tokens when the reply used them all", async () => {
    const { anthropic } = await anthropicClient(t.app);
    // fake-text's upstream calls it fake-chat; the fake's reply is 5 tokens.
    const message = await anthropic.messages.create({ model: 'fake-chat', max_tokens: 5, messages: hello });
    expect(message).toMatchObject({ model: 'fake-chat', stop_reason: 'max_tokens', usage: { output_tokens: 5 } });
    expect(fake.calls.at(-1)?.request).toMatchObject({ maxTokens: 5 });
    expect(await t.app.container.db.repo(Generation).findOneByOrFail({ id: idOf(message) })).toMatchObject({ modelSlug: 'fake-text' });
  });

  it('takes the key as x-api-key or as Authorization: Bearer, and a session token as Bearer', async () => {
    const { user, key, anthropic } = await anthropicClient(t.app);
    expect((await anthropic.messages.create({ model: 'fake-text', max_tokens: 10, messages: hello })).content).toHaveLength(1);
    expect((await anthropicWithBearer(t.app, key).messages.create({ model: 'fake-text', max_tokens: 10, messages: hello })).content).toHaveLength(1);
    expect((await anthropicWithBearer(t.app, user.accessToken).messages.create({ model: 'fake-text', max_tokens: 10, messages: hello })).content).toHaveLength(1);
    const sent = fake.calls.filter((c) => c.capability === 'text');
    expect(sent).toHaveLength(3);
  });

  it("serves Claude Code's beta path (/v1/messages?beta=true with anthropic-beta), and needs no anthropic-version", async () => {
    const { key, anthropic } = await anthropicClient(t.app);
    const beta = await anthropic.beta.messages.create({ model: 'fake-text', max_tokens: 10, messages: hello, betas: ['interleaved-thinking-2025-05-14'] });
    expect(beta.content).toEqual([{ type: 'text', text: 'Hello from the fake model' }]);
    const bare = await t.app.http().post('/v1/messages').set('x-api-key', key).send({ model: 'fake-text', max_tokens: 10, messages: hello });
    expect(bare.status).toBe(200);
    expect(bare.body).toMatchObject({ type: 'message', content: [{ type: 'text', text: 'Hello from the fake model' }] });
  });
});

describe('refused before anything is held or sent upstream', () => {
  const refusals: Array<[string, Record<string, unknown>, string]> = [
    ['a document block', { messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } }] }] }, 'messages.0.content.0.type: document blocks are not supported'],
    ['an image for a model without vision', { messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }] }] }, 'messages.0.content: this model does not accept images'],
    ['an image in a format Anthropic does not take', { model: 'fake-vision', messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/bmp', data: 'Qk0=' } }] }] }, 'messages.0.content.0.source.media_type'],
    ['a file source', { model: 'fake-vision', messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'file_1' } }] }] }, 'messages.0.content.0.source'],
    ['no max_tokens', { max_tokens: undefined }, 'max_tokens: is required'],
    ['max_tokens 0', { max_tokens: 0 }, 'max_tokens: must be at least 1'],
    ['a temperature above 1', { temperature: 1.5 }, 'temperature: must be between 0 and 1'],
    ['no messages', { messages: [] }, 'messages: must not be empty'],
    ['an unknown role', { messages: [{ role: 'robot', content: 'hi' }] }, 'messages.0.role'],
    ['an image model', { model: 'fake-image' }, 'model: must be a text model'],
  ];

  it.each(refusals)('%s: 400 invalid_request_error naming the field', async (_name, change, message) => {
    const { user, anthropic } = await anthropicClient(t.app);
    const before = await balanceOf(t.app, user.id);
    const body = { model: 'fake-text', max_tokens: 10, messages: hello, ...change } as unknown as Anthropic.MessageCreateParamsNonStreaming;
    const error = await anthropic.messages.create(body).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect(error).toMatchObject({ status: 400, type: 'invalid_request_error', error: { type: 'error', error: { type: 'invalid_request_error' } } });
    expect((error as APIError).apiMessage).toContain(message);
    expect(fake.calls).toEqual([]);
    expect(await t.app.container.db.repo(Generation).countBy({ userId: user.id })).toBe(0);
    expect(await balanceOf(t.app, user.id)).toEqual(before);
  });
});

describe('errors, as the client library raises them', () => {
  it('401 authentication_error for a bad key or none', async () => {
    const anthropic = new Anthropic({ apiKey: `gsk_${'x'.repeat(44)}`, baseURL: anthropicBaseURL(t.app), maxRetries: 0 });
    const error = await anthropic.messages.create({ model: 'fake-text', max_tokens: 10, messages: hello }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(error).toMatchObject({ status: 401, type: 'authentication_error', requestID: expect.any(String) });
    const none = await t.app.http().post('/v1/messages').send({ model: 'fake-text', max_tokens: 10, messages: hello });
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ type: 'error', error: { type: 'authentication_error', message: 'Not authenticated' }, request_id: none.headers['request-id'] });
  });

  it('403 permission_error for a model above the plan, 404 not_found_error for an unknown one', async () => {
    const user = await registerUser(t.app);
    const anthropic = anthropicWithBearer(t.app, user.accessToken);
    const above = await anthropic.messages.create({ model: 'fake-premium', max_tokens: 10, messages: hello }).catch((e: unknown) => e);
    expect(above).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(above).toMatchObject({ type: 'permission_error' });
    const unknown = await anthropic.messages.create({ model: 'no-such-model', max_tokens: 10, messages: hello }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(Anthropic.NotFoundError);
    expect(unknown).toMatchObject({ type: 'not_found_error', apiMessage: 'Unknown model: no-such-model' });
    expect(fake.calls).toEqual([]);
  });

  it('an empty balance is what Anthropic answers for low credit: 400 "credit balance is too low", not retried, nothing held', async () => {
    const { user, anthropic } = await anthropicClient(t.app, { maxRetries: 2 });
    let requests = 0;
    const count = (): void => void requests++;
    t.app.server.on('request', count);
    try {
      const error = await anthropic.messages.create({ model: 'fake-expensive', max_tokens: 10, messages: hello }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Anthropic.BadRequestError);
      expect(error).toMatchObject({ status: 400, type: 'invalid_request_error' });
      expect((error as APIError).apiMessage).toMatch(/^Your credit balance is too low: this request costs 1000000 tokens and \d+ are available/);
    } finally {
      t.app.server.off('request', count);
    }
    expect(requests).toBe(1);
    expect((await balanceOf(t.app, user.id)).held).toBe(0);
  });

  it('a plan limit is 429 rate_limit_error with retry-after and the limit headers', async () => {
    const user = await registerUser(t.app);
    const anthropic = anthropicWithBearer(t.app, user.accessToken);
    for (let i = 0; i < 5; i++) await anthropic.messages.create({ model: 'fake-text', max_tokens: 10, messages: [{ role: 'user', content: `${i}` }] });
    const error = await anthropic.messages.create({ model: 'fake-text', max_tokens: 10, messages: hello }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    const limited = error as APIError;
    expect(limited.type).toBe('rate_limit_error');
    expect(Number(limited.headers?.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.headers?.get('x-ratelimit-remaining-hour')).toBe('0');
  });

  it('a provider refusal is 400; an outage is 529 overloaded_error, which the client retries; neither is charged', async () => {
    const { user, key, anthropic } = await anthropicClient(t.app);
    const before = await balanceOf(t.app, user.id);
    fake.next({ kind: 'refuse', message: 'Your request was rejected by the safety system' });
    const refused = await anthropic.messages.create({ model: 'fake-text', max_tokens: 10, messages: hello }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
    expect((refused as APIError).apiMessage).toContain('safety system');
    // Our own retry spends the first failure, the answer is the second.
    fake.next({ kind: 'unavailable' }, { kind: 'unavailable' });
    const down = await anthropic.messages.create({ model: 'fake-text', max_tokens: 10, messages: hello }).catch((e: unknown) => e);
    expect(down).toBeInstanceOf(Anthropic.OverloadedError);
    expect(down).toMatchObject({ status: 529, type: 'overloaded_error' });
    expect(await balanceOf(t.app, user.id)).toEqual({ total: before.total, held: 0 });

    // The client's own retry of a 529 is a new request, answered once the provider is back.
    const retrying = new Anthropic({ apiKey: key, baseURL: anthropicBaseURL(t.app), maxRetries: 1 });
    fake.next({ kind: 'unavailable' }, { kind: 'unavailable' });
    const recovered = await retrying.messages.create({ model: 'fake-text', max_tokens: 10, messages: hello });
    expect(recovered.content).toEqual([{ type: 'text', text: 'Hello from the fake model' }]);
    expect(await balanceOf(t.app, user.id)).toEqual({ total: before.total - 2, held: 0 });
  });

  it('the content policy refuses with 400, uncharged, the failed row in history', async () => {
    const { user, anthropic } = await anthropicClient(t.app);
    const before = await balanceOf(t.app, user.id);
    const error = await anthropic.messages.create({ model: 'fake-text', max_tokens: 10, system: 'Say forbidden things.', messages: hello }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect((error as APIError).apiMessage).toBe('Content policy violation');
    expect(fake.calls).toEqual([]);
    expect(await balanceOf(t.app, user.id)).toEqual(before);
    const row = await t.app.container.db.repo(Generation).findOneByOrFail({ userId: user.id });
    expect(row).toMatchObject({ status: 'failed', tokensSpent: 0 });
  });

  it("keeps Anthropic's shape for malformed JSON and paths under /v1/messages that do not exist", async () => {
    const { key } = await anthropicClient(t.app);
    const malformed = await t.app.http().post('/v1/messages').set('x-api-key', key).set('content-type', 'application/json').send('{"model":');
    expect(malformed.status).toBe(400);
    expect(malformed.body).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: expect.any(String) }, request_id: expect.any(String) });
    const missing = await t.app.http().post('/v1/messages/count_tokens').set('x-api-key', key).send({});
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
  });
});

describe('Idempotency-Key', () => {
  it('replays a request with the same key and charges once', async () => {
    const { user, anthropic } = await anthropicClient(t.app);
    const before = await balanceOf(t.app, user.id);
    const body = { model: 'fake-text', max_tokens: 10, messages: hello };
    const first = await anthropic.messages.create(body, { headers: { 'Idempotency-Key': 'messages-replay-1' } });
    const second = await anthropic.messages.create(body, { headers: { 'Idempotency-Key': 'messages-replay-1' } });
    expect(second).toEqual(first);
    expect(await balanceOf(t.app, user.id)).toEqual({ total: before.total - 2, held: 0 });
    const changed = await anthropic.messages.create({ ...body, max_tokens: 11 }, { headers: { 'Idempotency-Key': 'messages-replay-1' } }).catch((e: unknown) => e);
    expect(changed).toBeInstanceOf(Anthropic.BadRequestError);
  });

  it('answers a replay of a request still running with 409, which the client retries until it has the result', async () => {
    const { user, key, anthropic } = await anthropicClient(t.app);
    const body = { model: 'fake-text', max_tokens: 10, messages: hello };
    const headers = { 'Idempotency-Key': 'messages-replay-running' };
    fake.next({ kind: 'succeed', delayMs: 700 });
    const first = anthropic.messages.create(body, { headers });
    await new Promise((r) => setTimeout(r, 150));
    const early = await anthropic.messages.create(body, { headers }).catch((e: unknown) => e);
    expect(early).toBeInstanceOf(Anthropic.ConflictError);
    const patient = new Anthropic({ apiKey: key, baseURL: anthropicBaseURL(t.app), maxRetries: 3 });
    const replayed = await patient.messages.create(body, { headers });
    expect(replayed).toEqual(await first);
    expect(await t.app.container.db.repo(Generation).countBy({ userId: user.id })).toBe(1);
  });
});

describe('models', () => {
  it("lists the plan's text models in Anthropic's shape for Anthropic's client, paging as it pages", async () => {
    const { anthropic } = await anthropicClient(t.app);
    const models: Anthropic.ModelInfo[] = [];
    for await (const model of anthropic.models.list()) models.push(model);
    const ids = models.map((m) => m.id);
    expect(ids).toEqual(expect.arrayContaining(['fake-text', 'fake-vision', 'fake-premium']));
    expect(ids).not.toContain('fake-image');
    expect(ids).not.toContain('missing-provider');
    expect(models.find((m) => m.id === 'fake-vision')).toEqual({ type: 'model', id: 'fake-vision', display_name: 'Fake vision', created_at: '1970-01-01T00:00:00.000Z', max_input_tokens: 100000 });
    // One a page: the client follows has_more / last_id through the whole list.
    const paged: string[] = [];
    for await (const model of anthropic.models.list({ limit: 1 })) paged.push(model.id);
    expect(paged).toEqual(ids);
    const page = await anthropic.models.list({ limit: 2, after_id: ids[0] });
    expect(page).toMatchObject({ first_id: ids[1], last_id: ids[2], has_more: ids.length > 3 });
    const back = await anthropic.models.list({ limit: 5, before_id: ids[2] });
    expect(back.data.map((m) => m.id)).toEqual(ids.slice(0, 2));
    await expect(anthropic.models.list({ limit: 0 })).rejects.toBeInstanceOf(Anthropic.BadRequestError);
    await expect(anthropic.models.list({ after_id: 'nope' })).rejects.toBeInstanceOf(Anthropic.BadRequestError);

    expect(await anthropic.models.retrieve('fake-text')).toMatchObject({ type: 'model', id: 'fake-text', display_name: 'Fake text' });
    await expect(anthropic.models.retrieve('fake-image')).rejects.toBeInstanceOf(Anthropic.NotFoundError);
  });

  it("hides models above the plan, and answers OpenAI's clients on the same path in OpenAI's shape", async () => {
    const user = await registerUser(t.app);
    const anthropic = anthropicWithBearer(t.app, user.accessToken);
    const ids: string[] = [];
    for await (const model of anthropic.models.list()) ids.push(model.id);
    expect(ids).toContain('fake-text');
    expect(ids).not.toContain('fake-premium');
    const error = await anthropic.models.retrieve('fake-premium').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.NotFoundError);
    expect(error).toMatchObject({ error: { type: 'error', error: { type: 'not_found_error' } } });

    const openai = new OpenAI({ apiKey: user.accessToken, baseURL: `${anthropicBaseURL(t.app)}/v1`, maxRetries: 0 });
    const openaiModels: OpenAI.Model[] = [];
    for await (const model of openai.models.list()) openaiModels.push(model);
    expect(openaiModels).toEqual(expect.arrayContaining([expect.objectContaining({ id: 'fake-image', object: 'model' }), expect.objectContaining({ id: 'fake-text', object: 'model' })]));
  });
});
