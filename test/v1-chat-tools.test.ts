/**
 * Tools, response formats and stop sequences through /v1/chat/completions, driven by the official
 * `openai` client against the real app, whose catalog models run on the OpenAI-compatible adapter
 * over a fake upstream speaking OpenAI's wire protocol (and on the built-in demo model): a tool
 * round trip plain and streamed (the client's own helpers assembling the call), a response format
 * passed through and parsed by the client, stop sequences honoured, and a model that declares no
 * tools refused before anything is held or sent upstream.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { Generation, LedgerEntry, User } from '../shared/db/entities';
import { startTestApp, TestApp } from './helpers/app';
import { FakeOpenAI } from './helpers/fake-openai';
import { TestUser, userOnPlan } from './helpers/users';

const upstream = new FakeOpenAI({ apiKey: 'sk-upstream' });
let app: TestApp;
let dir: string;

/** The shipped catalog, plus `chat-plain`: chat-fast's upstream model as a model that declares neither tools nor response formats. */
function catalogWithPlainChat(): string {
  const catalog = JSON.parse(fs.readFileSync(path.join(__dirname, '../product/catalog.json'), 'utf8')) as { models: Array<Record<string, unknown>> };
  const fast = catalog.models.find((m) => m.slug === 'chat-fast');
  if (!fast) throw new Error('chat-fast is not in the shipped catalog');
  catalog.models.push({ ...fast, slug: 'chat-plain', name: 'Plain chat', config: { max_context: 128000, supports_vision: false } });
  const file = path.join(dir, 'catalog.json');
  fs.writeFileSync(file, JSON.stringify(catalog));
  return file;
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'v1-tools-'));
  await upstream.start();
  app = await startTestApp({ OPENAI_BASE_URL: upstream.baseUrl, OPENAI_API_KEY: 'sk-upstream', CATALOG_PATH: catalogWithPlainChat() });
});
afterAll(async () => {
  await app?.close();
  await upstream.close();
  fs.rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => upstream.reset());

async function client(): Promise<{ user: TestUser; openai: OpenAI }> {
  const user = await userOnPlan(app, 'vip');
  const res = await app.http().post('/api/v2/keys').set('authorization', `Bearer ${user.accessToken}`).send({ name: 'sdk' });
  expect(res.status).toBe(201);
  const baseURL = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1`;
  return { user, openai: new OpenAI({ apiKey: res.body.key as string, baseURL, maxRetries: 0 }) };
}

async function balanceOf(userId: number): Promise<{ total: number; held: number }> {
  const row = await app.container.db.repo(User).findOneByOrFail({ id: userId });
  return { total: row.subscriptionTokens + row.bonusTokens, held: row.heldTokens };
}

const generationId = (completion: { id: string }): number => Number(completion.id.replace('chatcmpl-', ''));

const WEATHER_PARAMETERS = { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } }, required: ['city'] };
const WEATHER: OpenAI.ChatCompletionFunctionTool = {
  type: 'function',
  function: { name: 'get_weather', description: 'The current weather in a city', parameters: WEATHER_PARAMETERS },
};

function functionCall(call: OpenAI.ChatCompletionMessageToolCall | undefined): OpenAI.ChatCompletionMessageFunctionToolCall {
  if (call?.type !== 'function') throw new Error('expected a function tool call');
  return call;
}

describe('a tool-call round trip over the OpenAI-compatible upstream', () => {
  it('plain: tools go up, the call comes back (content null, finish_reason tool_calls), the tool\'s answer goes up, the answer comes back; each turn charged once', async () => {
    const { user, openai } = await client();
    const before = await balanceOf(user.id);
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
    const first = await openai.chat.completions.create({ model: 'chat-fast', messages, tools: [WEATHER], tool_choice: 'auto' });
    expect(first.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      message: { role: 'assistant', content: null, tool_calls: [{ id: expect.stringMatching(/^call_/), type: 'function', function: { name: 'get_weather', arguments: upstream.toolArguments } }] },
    });
    const call = functionCall(first.choices[0]?.message.tool_calls?.[0]);
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'Paris', unit: 'celsius' });

    messages.push(first.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content: '{"temperature": 18, "sky": "clear"}' });
    const second = await openai.chat.completions.create({ model: 'chat-fast', messages, tools: [WEATHER] });
    expect(second.choices[0]).toMatchObject({ finish_reason: 'stop', message: { role: 'assistant', content: 'Hello from the fake upstream' } });
    expect(second.choices[0]?.message.tool_calls).toBeUndefined();

    const [up1, up2] = upstream.apiRequests().map((r) => r.json);
    expect(up1).toMatchObject({ model: 'gpt-4o-mini', tools: [WEATHER], tool_choice: 'auto', messages: [{ role: 'user', content: 'What is the weather in Paris?' }] });
    expect(up2?.messages).toEqual([
      { role: 'user', content: 'What is the weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: call.id, type: 'function', function: { name: 'get_weather', arguments: upstream.toolArguments } }] },
      { role: 'tool', tool_call_id: call.id, content: '{"temperature": 18, "sky": "clear"}' },
    ]);
    // Two generations at chat-fast's price, one ledger row each; the call is kept with the first.
    expect(await balanceOf(user.id)).toEqual({ total: before.total - 2, held: 0 });
    for (const completion of [first, second]) expect(await app.container.db.repo(LedgerEntry).countBy({ generationId: generationId(completion) })).toBe(1);
    const polled = await app.http().get(`/api/v2/generate/status/gen_${generationId(first)}`).set('authorization', `Bearer ${user.accessToken}`);
    expect(polled.body).toMatchObject({ status: 'completed', content: '', result_metadata: { finish_reason: 'tool_calls', tool_calls: [{ id: call.id, function: { name: 'get_weather' } }] } });
  });

  it('streamed: the client\'s stream helper assembles the call from indexed pieces, then streams the answer; usage and charges as plain', async () => {
    const { user, openai } = await client();
    const before = await balanceOf(user.id);
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
    const stream = openai.chat.completions.stream({ model: 'chat-fast', messages, tools: [WEATHER], stream_options: { include_usage: true } });
    const pieces: OpenAI.ChatCompletionChunk.Choice.Delta.ToolCall[] = [];
    stream.on('chunk', (chunk) => pieces.push(...(chunk.choices[0]?.delta.tool_calls ?? [])));
    const final = await stream.finalChatCompletion();
    expect(final.choices[0]).toMatchObject({ finish_reason: 'tool_calls', message: { tool_calls: [{ type: 'function', function: { name: 'get_weather', arguments: upstream.toolArguments } }] } });
    expect(final.usage).toMatchObject(upstream.usage);
    // As OpenAI streams a call: id, type and name first, then only arguments, all under index 0.
    expect(pieces[0]).toMatchObject({ index: 0, id: expect.stringMatching(/^call_/), type: 'function', function: { name: 'get_weather' } });
    expect(pieces.length).toBeGreaterThan(3);
    expect(pieces.slice(1).every((p) => p.index === 0 && p.id === undefined && p.function?.name === undefined)).toBe(true);
    expect(upstream.apiRequests()[0]?.json).toMatchObject({ stream: true, tools: [WEATHER] });

    const call = functionCall(final.choices[0]?.message.tool_calls?.[0]);
    messages.push(final.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content: '18 degrees' });
    const answer = await openai.chat.completions.stream({ model: 'chat-fast', messages, tools: [WEATHER] }).finalChatCompletion();
    expect(answer.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'Hello from the fake upstream' } });
    expect(upstream.apiRequests()[1]?.json?.messages).toContainEqual({ role: 'tool', tool_call_id: call.id, content: '18 degrees' });
    expect(await balanceOf(user.id)).toEqual({ total: before.total - 2, held: 0 });
  });

  it('the client\'s own tool runner completes the whole loop, streamed', async () => {
    const { openai } = await client();
    const asked: unknown[] = [];
    const runner = openai.chat.completions.runTools({
      model: 'chat-fast',
      stream: true,
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'The current weather in a city',
            parameters: WEATHER_PARAMETERS,
            parse: JSON.parse,
            function: (args: unknown) => (asked.push(args), { temperature: 18 }),
          },
        },
      ],
    });
    expect(await runner.finalContent()).toBe('Hello from the fake upstream');
    expect(asked).toEqual([{ city: 'Paris', unit: 'celsius' }]);
    expect(upstream.apiRequests()[1]?.json?.messages).toContainEqual(expect.objectContaining({ role: 'tool', content: '{"temperature":18}' }));
  });

  it('tool_choice naming a function is passed up; none makes the model answer in text', async () => {
    const { openai } = await client();
    const lookup: OpenAI.ChatCompletionFunctionTool = { type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: {} } } };
    const named = await openai.chat.completions.create({
      model: 'chat-fast',
      messages: [{ role: 'user', content: 'Weather?' }],
      tools: [WEATHER, lookup],
      tool_choice: { type: 'function', function: { name: 'lookup' } },
    });
    expect(functionCall(named.choices[0]?.message.tool_calls?.[0]).function.name).toBe('lookup');
    const none = await openai.chat.completions.create({ model: 'chat-fast', messages: [{ role: 'user', content: 'Weather?' }], tools: [WEATHER], tool_choice: 'none' });
    expect(none.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'Hello from the fake upstream' } });
    expect(upstream.apiRequests().map((r) => r.json?.tool_choice)).toEqual([{ type: 'function', function: { name: 'lookup' } }, 'none']);
  });
});

describe('response_format', () => {
  it('passes a JSON schema up, and the client parses the answer (zodResponseFormat)', async () => {
    const { openai } = await client();
    upstream.reply = '{"city":"Paris","temperature":18}';
    const Weather = z.object({ city: z.string(), temperature: z.number() });
    const completion = await openai.chat.completions.parse({
      model: 'chat-fast',
      messages: [{ role: 'user', content: 'The weather in Paris as JSON' }],
      response_format: zodResponseFormat(Weather, 'weather'),
    });
    expect(completion.choices[0]?.message.parsed).toEqual({ city: 'Paris', temperature: 18 });
    expect(upstream.apiRequests()[0]?.json?.response_format).toMatchObject({
      type: 'json_schema',
      json_schema: { name: 'weather', strict: true, schema: { type: 'object', properties: { city: { type: 'string' }, temperature: { type: 'number' } } } },
    });
  });

  it('passes json_object up, streamed too; a text format is what every model does and is not sent', async () => {
    const { openai } = await client();
    upstream.reply = '{"ok": true}';
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Answer in JSON' }];
    const plain = await openai.chat.completions.create({ model: 'chat-fast', messages, response_format: { type: 'json_object' } });
    expect(JSON.parse(plain.choices[0]?.message.content ?? '')).toEqual({ ok: true });
    const streamed = await openai.chat.completions.stream({ model: 'chat-fast', messages, response_format: { type: 'json_object' } }).finalChatCompletion();
    expect(streamed.choices[0]?.message.content).toBe('{"ok": true}');
    await openai.chat.completions.create({ model: 'chat-plain', messages, response_format: { type: 'text' } });
    const sent = upstream.apiRequests().map((r) => r.json?.response_format);
    expect(sent).toEqual([{ type: 'json_object' }, { type: 'json_object' }, undefined]);
  });
});

describe('stop', () => {
  it('is passed to the upstream (a string as a list of one), which ends its answer before it', async () => {
    const { openai } = await client();
    const plain = await openai.chat.completions.create({ model: 'chat-fast', messages: [{ role: 'user', content: 'Hi' }], stop: ' fake' });
    expect(plain.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'Hello from the' } });
    const stream = await openai.chat.completions.create({ model: 'chat-fast', messages: [{ role: 'user', content: 'Hi' }], stop: [' upstream', ' from'], stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('Hello');
    expect(upstream.apiRequests().map((r) => r.json?.stop)).toEqual([[' fake'], [' upstream', ' from']]);
  });

  it('is honoured by the built-in demo model: its answer ends before the first stop sequence, plain and streamed', async () => {
    const { openai } = await client();
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Tell me about the sea and the birds' }];
    // The demo model answers the same messages the same way, so its whole answer shows where a stop must cut.
    const whole = (await openai.chat.completions.create({ model: 'demo-text', messages })).choices[0]?.message.content ?? '';
    const words = whole.split(' ');
    expect(words.length).toBeGreaterThan(20);
    const stop = ` ${words[10]} ${words[11]}`;
    const expected = whole.slice(0, whole.indexOf(stop));
    const plain = await openai.chat.completions.create({ model: 'demo-text', messages, stop: [stop, 'never appears'] });
    expect(plain.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: expected } });
    expect(plain.usage?.completion_tokens).toBe(expected.split(' ').length);
    const streamed = await openai.chat.completions.stream({ model: 'demo-text', messages, stop }).finalChatCompletion();
    expect(streamed.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: expected } });
    expect(upstream.apiRequests()).toEqual([]);
  });

  it('the demo model reports length when max_tokens cut its answer', async () => {
    const { openai } = await client();
    const cut = await openai.chat.completions.create({ model: 'demo-text', messages: [{ role: 'user', content: 'Tell me about the sea' }], max_tokens: 3 });
    expect(cut.choices[0]?.finish_reason).toBe('length');
    expect(cut.usage?.completion_tokens).toBe(3);
  });
});

describe('a model that declares no tools or response formats', () => {
  async function refused(openai: OpenAI, body: OpenAI.ChatCompletionCreateParamsNonStreaming | OpenAI.ChatCompletionCreateParamsStreaming) {
    const error = await openai.chat.completions.create(body).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    return error as InstanceType<typeof OpenAI.BadRequestError>;
  }

  it('is refused with a 400 naming the param, plain or streamed, before anything is held, counted or sent upstream', async () => {
    const { user, openai } = await client();
    const before = await balanceOf(user.id);
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather?' }];
    for (const model of ['chat-plain', 'demo-text']) {
      const tools = await refused(openai, { model, messages, tools: [WEATHER] });
      expect(tools).toMatchObject({ status: 400, param: 'tools', type: 'invalid_request_error', message: expect.stringContaining(`tools: ${model} does not support tools`) });
      expect(await refused(openai, { model, messages, tools: [WEATHER], stream: true })).toMatchObject({ param: 'tools' });
      const format = await refused(openai, { model, messages, response_format: { type: 'json_object' } });
      expect(format).toMatchObject({ param: 'response_format', message: expect.stringContaining(`response_format: ${model} does not support response formats`) });
      const schema = await refused(openai, { model, messages, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } } });
      expect(schema).toMatchObject({ param: 'response_format' });
      // A conversation with tool turns needs tools too.
      const turns = await refused(openai, {
        model,
        messages: [
          { role: 'user', content: 'Weather?' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }] },
          { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
        ],
      });
      expect(turns).toMatchObject({ param: 'messages.1', message: expect.stringContaining(`messages.1: ${model} does not support tools`) });
    }
    expect(upstream.apiRequests()).toEqual([]);
    expect(await balanceOf(user.id)).toEqual(before);
    expect(await app.container.db.repo(Generation).countBy({ userId: user.id })).toBe(0);
    // Nothing counted against the plan's limits either.
    const quota = await app.http().get('/api/v2/user/me').set('authorization', `Bearer ${user.accessToken}`);
    expect(quota.headers['x-ratelimit-limit-hour']).toBe('100');
    expect(quota.headers['x-ratelimit-remaining-hour']).toBe('100');
  });
});
