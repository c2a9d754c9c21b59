/**
 * OpenAI's Responses API (POST /v1/responses, GET /v1/responses/{id}), driven by the official
 * `openai` client against the real app: a response to a string and to input items, the streamed
 * event sequence (on the wire, and as the SDK's stream helper assembles it), retrieval while in
 * progress and after, failures, every refusal with its `param`, and billing and history the same
 * as the same work through /api/v2. Chains (previous_response_id, store) are in
 * v1-responses-chain.test.ts.
 */
import path from 'node:path';
import OpenAI from 'openai';
import { Generation, LedgerEntry, WebhookDelivery } from '../shared/db/entities';
import { useTestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { registerUser } from './helpers/users';
import { eventually, moneyOf, openAIClient, v1BaseURL, vipClient } from './helpers/v1-clients';

const fake = new FakeProvider('fake');
// Webhooks may point at 127.0.0.1:9 (nothing listens: no worker runs here, the delivery stays queued).
const t = useTestApp(
  { CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json'), CONTENT_POLICY_BLOCKLIST: 'forbidden', URL_FETCH_ALLOW: '127.0.0.1:9' },
  { providers: [fake.adapter()] },
);
beforeEach(() => fake.reset());

const REPLY = 'Hello from the fake model';
const idOf = (response: { id: string }): number => Number(response.id.replace('resp_', ''));
const lastSent = () => fake.calls.at(-1)?.request as { messages: unknown[]; temperature: number; maxTokens: number | null };

/** A streamed request's raw server-sent events: each block's `event:` name and its JSON data. */
async function rawEvents(key: string, body: Record<string, unknown>): Promise<{ status: number; contentType: string; events: Array<{ event: string; data: Record<string, unknown> }>; text: string }> {
  const res = await fetch(`${v1BaseURL(t.app)}/responses`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true }),
  });
  const text = await res.text();
  const events = text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? '';
      const data = JSON.parse(/^data: (.*)$/m.exec(block)?.[1] ?? 'null') as Record<string, unknown>;
      return { event, data };
    });
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', events, text };
}

describe('creating a response', () => {
  it('answers a string input as OpenAI does, charged and in history exactly like the same work through /api/v2', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    const response = await openai.responses.create({
      model: 'fake-text',
      input: 'Hello?',
      instructions: 'Be brief.',
      temperature: 0.2,
      max_output_tokens: 50,
      metadata: { ticket: '42' },
    });
    const id = idOf(response);
    expect(response).toMatchObject({
      id: `resp_${id}`,
      object: 'response',
      status: 'completed',
      model: 'fake-text',
      output: [{ type: 'message', id: `msg_${id}`, status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: REPLY, annotations: [] }] }],
      usage: { input_tokens: 3, output_tokens: 5, total_tokens: 8, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } },
      instructions: 'Be brief.',
      metadata: { ticket: '42' },
      temperature: 0.2,
      max_output_tokens: 50,
      store: true,
      previous_response_id: null,
      error: null,
      incomplete_details: null,
      tools: [],
    });
    // The SDK's convenience, computed from `output` as for OpenAI's own answers.
    expect(response.output_text).toBe(REPLY);
    expect(response.created_at).toBe(Math.floor(t.app.clock.now().getTime() / 1000));
    expect(lastSent()).toMatchObject({ temperature: 0.2, maxTokens: 50, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello?' }] });
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total - 2, held: 0 });

    // The same work through /api/v2: the same charge, the same history row, the same ledger row.
    const auth = `Bearer ${user.accessToken}`;
    const direct = await t.app.http().post('/api/v2/generate').set('authorization', auth).send({ model: 'fake-text', messages: [{ role: 'user', content: 'Hello?' }], system: 'Be brief.', temperature: 0.2, max_tokens: 50 });
    expect(direct.body.tokens_used).toBe(2);
    const history = (await t.app.http().get('/api/v2/user/history').set('authorization', auth)).body.items as Array<Record<string, unknown>>;
    const alike = ({ id: _id, created_at: _at, ...rest }: Record<string, unknown>) => rest;
    const [viaApi, viaResponses] = history;
    expect(viaResponses).toMatchObject({ id, status: 'completed', tokens_spent: 2, prompt: 'Hello?', result_text: REPLY });
    expect(alike(viaResponses ?? {})).toEqual(alike(viaApi ?? {}));
    const ledger = (await t.app.http().get('/api/v2/user/transactions').set('authorization', auth)).body.items as Array<Record<string, unknown>>;
    const debit = ({ amount, reason }: Record<string, unknown>) => ({ amount, reason });
    expect(ledger.slice(0, 2).map((e) => e.generation_id)).toEqual([Number(String(direct.body.id).replace('gen_', '')), id]);
    expect(ledger.slice(0, 2).map(debit)).toEqual([{ amount: -2, reason: 'generation' }, { amount: -2, reason: 'generation' }]);
    expect(await t.app.container.db.repo(LedgerEntry).countBy({ generationId: id })).toBe(1);
  });

  it('takes input items: roles, text and image parts, an earlier output passed back; and ignores what it does not use', async () => {
    const { openai } = await vipClient(t.app);
    const image = 'data:image/png;base64,iVBORw0KGgo=';
    const response = await openai.responses.create({
      model: 'fake-vision',
      input: [
        { role: 'developer', content: 'Be terse.' },
        { role: 'user', content: [{ type: 'input_text', text: 'What is this?' }, { type: 'input_image', image_url: image, detail: 'low' }] },
        { type: 'message', role: 'assistant', id: 'msg_1', status: 'completed', content: [{ type: 'output_text', text: 'A pixel.', annotations: [] }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Sure?' }] },
      ],
      // Sent by clients, changing nothing here:
      top_p: 0.9,
      user: 'someone',
      safety_identifier: 'someone',
      prompt_cache_key: 'k',
      service_tier: 'auto',
      truncation: 'disabled',
      parallel_tool_calls: false,
      tool_choice: 'auto',
      tools: [],
      include: ['reasoning.encrypted_content'],
      reasoning: { effort: 'low' },
      text: { format: { type: 'text' }, verbosity: 'low' },
    });
    expect(response.output_text).toBe(REPLY);
    expect(lastSent().messages).toEqual([
      { role: 'system', content: 'Be terse.' },
      { role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: image } }] },
      { role: 'assistant', content: 'A pixel.' },
      { role: 'user', content: [{ type: 'text', text: 'Sure?' }] },
    ]);
    // What was ignored is not echoed as if it had been applied.
    expect(response).toMatchObject({ top_p: null, instructions: null, metadata: {}, temperature: null, max_output_tokens: null });
  });

  it("tells the account's webhooks, like any generation", async () => {
    const { user, openai } = await vipClient(t.app);
    const hook = await t.app.http().post('/api/v2/webhooks').set('authorization', `Bearer ${user.accessToken}`).send({ url: 'http://127.0.0.1:9/hook', events: ['generation.completed'] });
    expect(hook.status).toBe(201);
    const response = await openai.responses.create({ model: 'fake-text', input: 'notify me' });
    const delivery = await eventually(() => t.app.container.db.repo(WebhookDelivery).findOneBy({ webhookId: hook.body.id, event: 'generation.completed' }), (d) => d !== null);
    expect(delivery).toMatchObject({ generationId: idOf(response) });
  });

  it('replays a request with the same Idempotency-Key (plain and streamed) and charges once', async () => {
    const { user, key, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    const first = await openai.responses.create({ model: 'fake-text', input: 'once' }, { headers: { 'Idempotency-Key': 'resp-replay-1' } });
    const second = await openai.responses.create({ model: 'fake-text', input: 'once' }, { headers: { 'Idempotency-Key': 'resp-replay-1' } });
    expect(second.id).toBe(first.id);
    const streamed = await openai.responses.stream({ model: 'fake-text', input: 'twice' }, { headers: { 'Idempotency-Key': 'resp-replay-2' } }).finalResponse();
    // The replay of a finished stream is that response's whole event sequence again.
    const replayed = await fetch(`${v1BaseURL(t.app)}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'resp-replay-2' },
      body: JSON.stringify({ model: 'fake-text', input: 'twice', stream: true }),
    });
    const types = [...(await replayed.text()).matchAll(/^event: (.*)$/gm)].map((m) => m[1]);
    expect(types).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed']);
    expect(streamed.output_text).toBe(REPLY);
    expect(fake.calls).toHaveLength(2);
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total - 4, held: 0 });
  });
});

describe('streaming', () => {
  const ORDER_HEAD = ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added'];
  const ORDER_TAIL = ['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed'];

  it('sends the Responses event sequence on the wire: named events, numbered in order, no [DONE]', async () => {
    const { user, key } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    const { status, contentType, events, text } = await rawEvents(key, { model: 'fake-text', input: 'stream' });
    expect(status).toBe(200);
    expect(contentType).toMatch(/^text\/event-stream/);
    const deltas = REPLY.split(' ').map((word, i) => (i === 0 ? word : ` ${word}`));
    expect(events.map((e) => e.event)).toEqual([...ORDER_HEAD, ...deltas.map(() => 'response.output_text.delta'), ...ORDER_TAIL]);
    for (const [i, { event, data }] of events.entries()) expect(data).toMatchObject({ type: event, sequence_number: i });
    expect(text).not.toContain('[DONE]');

    const [created, inProgress, itemAdded, partAdded] = events.map((e) => e.data);
    const id = String(created?.response && (created.response as { id: string }).id);
    const item = { item_id: id.replace('resp_', 'msg_'), output_index: 0, content_index: 0 };
    expect(created?.response).toMatchObject({ id, object: 'response', status: 'in_progress', output: [], usage: null, model: 'fake-text' });
    expect(inProgress?.response).toEqual(created?.response);
    expect(itemAdded).toMatchObject({ output_index: 0, item: { id: item.item_id, type: 'message', status: 'in_progress', role: 'assistant', content: [] } });
    expect(partAdded).toMatchObject({ ...item, part: { type: 'output_text', text: '', annotations: [] } });
    expect(events.slice(4, 4 + deltas.length).map((e) => e.data)).toEqual(deltas.map((delta, i) => ({ type: 'response.output_text.delta', sequence_number: 4 + i, ...item, delta, logprobs: [] })));
    const [textDone, partDone, itemDone, completed] = events.slice(-4).map((e) => e.data);
    expect(textDone).toMatchObject({ ...item, text: REPLY });
    expect(partDone).toMatchObject({ ...item, part: { type: 'output_text', text: REPLY, annotations: [] } });
    expect(itemDone).toMatchObject({ output_index: 0, item: { id: item.item_id, status: 'completed', content: [{ type: 'output_text', text: REPLY }] } });
    expect(completed?.response).toMatchObject({ id, status: 'completed', usage: { input_tokens: 3, output_tokens: 5, total_tokens: 8 }, output: [itemDone?.item] });
    // Billed once, at the end.
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total - 2, held: 0 });
  });

  it("is assembled by the SDK's stream helper: deltas with snapshots, and the final response", async () => {
    const { openai } = await vipClient(t.app);
    const stream = openai.responses.stream({ model: 'fake-text', input: 'stream', instructions: 'Be brief.' });
    const snapshots: string[] = [];
    stream.on('response.output_text.delta', (event) => snapshots.push(event.snapshot));
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    const final = await stream.finalResponse();
    expect(types.slice(0, 4)).toEqual(ORDER_HEAD);
    expect(types.slice(-4)).toEqual(ORDER_TAIL);
    expect(snapshots.at(-1)).toBe(REPLY);
    expect(snapshots[0]).toBe('Hello');
    expect(final).toMatchObject({ status: 'completed', output_text: REPLY, instructions: 'Be brief.', usage: { total_tokens: 8 } });
    // What a later GET answers is what the stream ended with.
    const retrieved = await openai.responses.retrieve(final.id);
    expect(retrieved).toMatchObject({ id: final.id, status: 'completed', output_text: REPLY, usage: final.usage, instructions: 'Be brief.' });
    expect(retrieved.output[0]?.id).toBe(final.output[0]?.id);
  });

  it('ends a stream whose generation fails with response.failed, uncharged', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    fake.next({ kind: 'refuse', message: 'Your request was rejected by the safety system' });
    const stream = await openai.responses.create({ model: 'fake-text', input: 'x', stream: true });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    expect(events.map((e) => e.type)).toEqual(['response.created', 'response.in_progress', 'response.failed']);
    const failed = events.at(-1) as OpenAI.Responses.ResponseFailedEvent;
    expect(failed.response).toMatchObject({ status: 'failed', output: [], error: { code: 'invalid_prompt', message: expect.stringContaining('safety system') } });
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total, held: 0 });
    // And so it stands afterwards.
    expect(await openai.responses.retrieve(failed.response.id)).toMatchObject({ status: 'failed', error: { code: 'invalid_prompt' } });
  });

  it('does not charge a client that goes away mid-stream', async () => {
    const { user, openai } = await vipClient(t.app);
    fake.reply = Array.from({ length: 300 }, (_, i) => `w${i}`).join(' ');
    const before = await moneyOf(t.app, user.id);
    const controller = new AbortController();
    const stream = await openai.responses.create({ model: 'fake-text', input: 'long', stream: true }, { signal: controller.signal });
    let deltas = 0;
    let id = '';
    try {
      for await (const event of stream) {
        if (event.type === 'response.created') id = event.response.id;
        if (event.type === 'response.output_text.delta' && ++deltas === 3) controller.abort();
      }
    } catch {
      // The client library ends (or throws from) an aborted stream: either way it went away.
    }
    expect(deltas).toBe(3);
    const row = await eventually(
      () => t.app.container.db.repo(Generation).findOneByOrFail({ id: Number(id.replace('resp_', '')) }),
      (g) => g.status !== 'pending',
    );
    expect(row).toMatchObject({ status: 'failed', tokensSpent: 0 });
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total, held: 0 });
  });
});

describe('retrieving a response', () => {
  it('answers the response object as created', async () => {
    const { openai } = await vipClient(t.app);
    const created = await openai.responses.create({ model: 'fake-text', input: 'keep me', metadata: { a: 'b' } });
    const retrieved = await openai.responses.retrieve(created.id);
    expect(retrieved).toEqual(created);
  });

  it('shows a pending one as in_progress, and a cancelled one as cancelled', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    fake.next({ kind: 'hang' });
    const stream = await openai.responses.create({ model: 'fake-text', input: 'wait', stream: true });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) {
      events.push(event);
      if (event.type === 'response.in_progress') {
        const pending = await openai.responses.retrieve(event.response.id);
        expect(pending).toMatchObject({ id: event.response.id, status: 'in_progress', output: [], usage: null, error: null, completed_at: null });
        // The same generation is cancelled through /api/v2: the stream ends, and nothing is charged.
        const cancel = await t.app.http().post(`/api/v2/generate/${event.response.id.replace('resp_', '')}/cancel`).set('authorization', `Bearer ${user.accessToken}`);
        expect(cancel.body.status).toBe('failed');
      }
    }
    const last = events.at(-1) as OpenAI.Responses.ResponseFailedEvent;
    expect(last).toMatchObject({ type: 'response.failed', response: { status: 'cancelled', error: { message: 'Cancelled' } } });
    expect(await openai.responses.retrieve(last.response.id)).toMatchObject({ status: 'cancelled' });
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total, held: 0 });
  });

  it('finds only responses: an unknown id, any other generation or a malformed id is 404', async () => {
    const { user, openai } = await vipClient(t.app);
    const chat = await openai.chat.completions.create({ model: 'fake-text', messages: [{ role: 'user', content: 'hi' }] });
    const direct = await t.app.http().post('/api/v2/generate').set('authorization', `Bearer ${user.accessToken}`).send({ model: 'fake-text', prompt: 'hi' });
    for (const id of [`resp_${chat.id.replace('chatcmpl-', '')}`, `resp_${String(direct.body.id).replace('gen_', '')}`, 'resp_2147000000', 'resp_x', chat.id, '1']) {
      const error = await openai.responses.retrieve(id).catch((e: unknown) => e);
      expect({ id, error }).toEqual({ id, error: expect.any(OpenAI.NotFoundError) });
      expect(error).toMatchObject({ status: 404, code: 'not_found', type: 'invalid_request_error' });
    }
  });
});

describe('refusals, as the client library raises them; none reaches the provider or charges', () => {
  it('400 naming the parameter for what is malformed or not supported', async () => {
    const { user, openai } = await vipClient(t.app);
    const base = { model: 'fake-text', input: 'x' };
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ temperature: 3 }, 'temperature'],
      [{ max_output_tokens: 0 }, 'max_output_tokens'],
      [{ max_output_tokens: 300_000 }, 'max_output_tokens'],
      [{ input: [] }, 'input'],
      [{ input: undefined }, 'input'],
      [{ model: '' }, 'model'],
      [{ model: 'fake-image' }, 'model'],
      // fake-text declares neither tools nor response formats (v1-responses-tools.test.ts has a model that does).
      [{ tools: [{ type: 'function', name: 'f', parameters: {} }] }, 'tools'],
      [{ tools: [{ type: 'web_search' }] }, 'tools[0].type'],
      [{ tool_choice: 'required' }, 'tool_choice'],
      [{ text: { format: { type: 'json_schema', name: 'x', schema: {} } } }, 'text.format'],
      [{ background: true }, 'background'],
      [{ conversation: 'conv_1' }, 'conversation'],
      [{ prompt: { id: 'pmpt_1' } }, 'prompt'],
      [{ metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) }, 'metadata'],
      [{ input: [{ type: 'reasoning', id: 'rs_1', summary: [] }] }, 'input[0].type'],
      [{ input: [{ type: 'item_reference', id: 'fc_1' }] }, 'input[0].type'],
      [{ input: [{ role: 'tool', content: 'x' }] }, 'input[0].role'],
      [{ input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file_1' }] }] }, 'input[0].content[0].type'],
      [{ input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file_1', detail: 'auto' }] }] }, 'input[0].content[0].file_id'],
      // Checked by the domain, named as the client sent it.
      [{ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'data:image/png;base64,AA==', detail: 'auto' }] }] }, 'input'],
      [{ input: [{ role: 'system', content: 'only a system message' }] }, 'input'],
      [{ model: 'fake-expensive', stream: true }, 'stream'],
    ];
    for (const [change, param] of cases) {
      const error = await openai.responses.create({ ...base, ...change } as OpenAI.Responses.ResponseCreateParamsNonStreaming).catch((e: unknown) => e);
      expect({ change, error }).toEqual({ change, error: expect.any(OpenAI.BadRequestError) });
      expect({ change, param: (error as { param?: string }).param, type: (error as { type?: string }).type }).toEqual({ change, param, type: 'invalid_request_error' });
    }
    expect(fake.calls).toEqual([]);
    expect(await t.app.container.db.repo(Generation).countBy({ userId: user.id })).toBe(0);
  });

  it('404 for an unknown model, 403 for one above the plan, 429 insufficient_quota for an empty balance', async () => {
    const free = await registerUser(t.app);
    const openai = openAIClient(t.app, free.accessToken);
    const unknown = await openai.responses.create({ model: 'nope', input: 'x' }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    expect(unknown).toMatchObject({ code: 'model_not_found' });
    await expect(openai.responses.create({ model: 'fake-premium', input: 'x' })).rejects.toBeInstanceOf(OpenAI.PermissionDeniedError);
    const broke = await openai.responses.create({ model: 'fake-expensive', input: 'x' }).catch((e: unknown) => e);
    expect(broke).toBeInstanceOf(OpenAI.RateLimitError);
    expect(broke).toMatchObject({ status: 429, code: 'insufficient_quota' });
    expect(fake.calls).toEqual([]);
    expect(await moneyOf(t.app, free.id)).toMatchObject({ held: 0 });
    expect(await t.app.container.db.repo(Generation).countBy({ userId: free.id })).toBe(0);
  });

  it('counts against the plan limit with the same headers, and 429 past it', async () => {
    const free = await registerUser(t.app);
    const openai = openAIClient(t.app, free.accessToken);
    const first = await openai.responses.create({ model: 'fake-text', input: '1' }).withResponse();
    expect(first.response.headers.get('x-ratelimit-remaining-hour')).toBe('4');
    for (let i = 2; i <= 5; i++) await openai.responses.create({ model: 'fake-text', input: `${i}` });
    const limited = await openai.responses.create({ model: 'fake-text', input: 'six' }).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect(limited).toMatchObject({ code: 'rate_limit_exceeded' });
    expect(Number((limited as InstanceType<typeof OpenAI.RateLimitError>).headers?.get('retry-after'))).toBeGreaterThan(0);
  });

  it('applies the content policy to the input and the instructions, uncharged', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    for (const body of [{ input: 'this is forbidden' }, { input: 'fine', instructions: 'say forbidden things' }]) {
      const refused = await openai.responses.create({ model: 'fake-text', ...body }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
      expect(refused).toMatchObject({ code: 'content_policy_violation' });
    }
    expect(fake.calls).toEqual([]);
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total, held: 0 });
  });

  it('a provider outage is 502, uncharged', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    fake.next({ kind: 'unavailable' }, { kind: 'unavailable' });
    const down = await openai.responses.create({ model: 'fake-text', input: 'x' }).catch((e: unknown) => e);
    expect(down).toBeInstanceOf(OpenAI.InternalServerError);
    expect(down).toMatchObject({ status: 502, code: 'upstream_unavailable' });
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total, held: 0 });
  });
});
