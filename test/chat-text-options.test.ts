/**
 * Text options in the generation domain, through /v1/chat/completions with the official `openai`
 * client over the in-process fake provider: what the domain checks (each refusal a 400 naming
 * the param, with nothing held, counted or run), what it keeps with the generation (the options
 * in its input, so a retried run has them; the tool calls and finish reason in its result
 * metadata, where polling shows them) and tool calls streamed from a provider in pieces.
 */
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { Generation, User } from '../shared/db/entities';
import { textMetadata, ToolCallAssembly } from '../shared/generation/tool-calls';
import type { TextRequest } from '../shared/providers/types';
import { useTestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { TestUser, userOnPlan } from './helpers/users';

const fake = new FakeProvider('fake');
const t = useTestApp({ CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json') }, { providers: [fake.adapter()] });
beforeEach(() => fake.reset());

const CALL = { id: 'call_abc', type: 'function' as const, function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } };
const WEATHER: OpenAI.ChatCompletionFunctionTool = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };

async function client(): Promise<{ user: TestUser; openai: OpenAI }> {
  const user = await userOnPlan(t.app, 'vip');
  const res = await t.app.http().post('/api/v2/keys').set('authorization', `Bearer ${user.accessToken}`).send({ name: 'sdk' });
  const baseURL = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/v1`;
  return { user, openai: new OpenAI({ apiKey: res.body.key as string, baseURL, maxRetries: 0 }) };
}

const textCalls = (): TextRequest[] => fake.calls.filter((c) => c.capability.startsWith('text')).map((c) => c.request as TextRequest);
const generationId = (completion: { id: string }): number => Number(completion.id.replace('chatcmpl-', ''));

describe('what the domain keeps', () => {
  it('keeps the options with the generation\'s input, so a retried run sends them again', async () => {
    const { openai } = await client();
    fake.toolCalls = [CALL];
    // The first attempt fails transiently; the request's one retry reads the stored input again.
    fake.next({ kind: 'unavailable' });
    const completion = await openai.chat.completions.create({
      model: 'fake-tools',
      messages: [{ role: 'user', content: 'Weather in Oslo?' }],
      tools: [WEATHER],
      tool_choice: 'required',
      response_format: { type: 'json_object' },
      stop: 'END',
    });
    expect(completion.choices[0]?.finish_reason).toBe('tool_calls');
    const expected = {
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: WEATHER.function.parameters } }],
      toolChoice: 'required',
      responseFormat: { type: 'json_object' },
      stop: ['END'],
    };
    expect(textCalls()).toEqual([expect.objectContaining(expected), expect.objectContaining(expected)]);
    const row = await t.app.container.db.repo(Generation).findOneByOrFail({ id: generationId(completion) });
    expect(JSON.parse(row.input)).toMatchObject({ textOptions: expected });
  });

  it('keeps the tool calls and the finish reason in the result metadata, which polling shows; a text answer finished with stop', async () => {
    const { user, openai } = await client();
    fake.toolCalls = [CALL];
    const called = await openai.chat.completions.create({ model: 'fake-tools', messages: [{ role: 'user', content: 'Weather?' }], tools: [WEATHER] });
    expect(called.choices[0]?.message).toMatchObject({ content: null, tool_calls: [CALL] });
    const polled = await t.app.http().get(`/api/v2/generate/${generationId(called)}`).set('authorization', `Bearer ${user.accessToken}`);
    expect(polled.body).toMatchObject({ status: 'completed', result_metadata: { finish_reason: 'tool_calls', tool_calls: [CALL] }, tokens_spent: 3 });

    const answered = await openai.chat.completions.create({
      model: 'fake-tools',
      messages: [
        { role: 'user', content: 'Weather?' },
        { role: 'assistant', content: null, tool_calls: [CALL] },
        { role: 'tool', tool_call_id: CALL.id, content: 'rain' },
      ],
      tools: [WEATHER],
    });
    expect(answered.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'Hello from the fake model' } });
    expect(textCalls().at(-1)?.messages).toEqual([
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: null, tool_calls: [CALL] },
      { role: 'tool', content: 'rain', tool_call_id: CALL.id },
    ]);
    const text = await t.app.http().get(`/api/v2/generate/${generationId(answered)}`).set('authorization', `Bearer ${user.accessToken}`);
    expect(text.body.result_metadata).toEqual({ finish_reason: 'stop' });
  });

  it('streams a provider\'s tool-call pieces as OpenAI does and keeps the joined call', async () => {
    const { user, openai } = await client();
    fake.toolCalls = [CALL, { ...CALL, id: 'call_def', function: { name: 'get_weather', arguments: '{"city":"Bergen"}' } }];
    const final = await openai.chat.completions
      .stream({ model: 'fake-tools', messages: [{ role: 'user', content: 'Weather in two cities?' }], tools: [WEATHER], stream_options: { include_usage: true } })
      .finalChatCompletion();
    expect(final.choices[0]).toMatchObject({ finish_reason: 'tool_calls', message: { tool_calls: fake.toolCalls } });
    expect(final.usage).toMatchObject({ prompt_tokens: 3, completion_tokens: 2 });
    const row = await t.app.container.db.repo(Generation).findOneByOrFail({ id: generationId(final) });
    expect(JSON.parse(row.resultMetadata ?? '{}')).toEqual({ finish_reason: 'tool_calls', tool_calls: fake.toolCalls });
    expect(row).toMatchObject({ status: 'completed', tokensSpent: 3, userId: user.id });
  });

  it('leaves stop sequences to the provider, which ends its answer before them', async () => {
    const { openai } = await client();
    const completion = await openai.chat.completions.create({ model: 'fake-text', messages: [{ role: 'user', content: 'Hi' }], stop: ['fake', 'from'] });
    expect(completion.choices[0]?.message.content).toBe('Hello ');
    expect(textCalls()[0]?.stop).toEqual(['fake', 'from']);
  });
});

describe('joining streamed tool calls', () => {
  it('fixes a call\'s id by its first piece (one by its place when the server sent none), so what is streamed is what is kept', () => {
    const assembly = new ToolCallAssembly();
    const passed = [
      assembly.add({ index: 0, name: 'get_weather', arguments: '{"ci' }),
      assembly.add({ index: 1, id: 'call_x', name: 'lookup' }),
      assembly.add({ index: 0, id: 'call_late', arguments: 'ty":"Oslo"}' }),
    ];
    expect(passed).toEqual([
      { index: 0, id: 'call_0', name: 'get_weather', arguments: '{"ci' },
      { index: 1, id: 'call_x', name: 'lookup' },
      { index: 0, arguments: 'ty":"Oslo"}' },
    ]);
    expect(assembly.calls('fake')).toEqual([
      { id: 'call_0', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
      { id: 'call_x', type: 'function', function: { name: 'lookup', arguments: '' } },
    ]);
  });

  it('finds a call whose name never came malformed, and an answer with calls that says stop to have called tools', () => {
    const nameless = new ToolCallAssembly();
    nameless.add({ index: 0, arguments: '{}' });
    expect(() => nameless.calls('fake')).toThrow(expect.objectContaining({ kind: 'unavailable' }));
    expect(textMetadata({ finishReason: 'stop', toolCalls: [CALL] })).toEqual({ finish_reason: 'tool_calls', tool_calls: [CALL] });
    expect(textMetadata({ finishReason: 'length', toolCalls: [CALL] })).toEqual({ finish_reason: 'length', tool_calls: [CALL] });
  });
});

describe('what the domain refuses, as a 400 naming the param', () => {
  const user = { role: 'user' as const, content: 'Weather?' };
  type Body = Omit<OpenAI.ChatCompletionCreateParamsNonStreaming, 'model' | 'messages'> & { model?: string; messages?: unknown[] };
  const cases: Array<[string, Body, string]> = [
    ['five stop sequences', { stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop'],
    ['an empty stop sequence', { stop: '' }, 'stop'],
    ['a stop that is not text', { stop: 7 as unknown as string }, 'stop'],
    ['a tool without a name', { tools: [{ type: 'function', function: {} } as unknown as OpenAI.ChatCompletionTool] }, 'tools.0.function.name'],
    ['a tool name with spaces', { tools: [{ type: 'function', function: { name: 'get weather' } }] }, 'tools.0.function.name'],
    ['a tool that is not a function', { tools: [{ type: 'custom', custom: { name: 'x' } }] }, 'tools.0.type'],
    ['two tools of one name', { tools: [WEATHER, WEATHER] }, 'tools.1.function.name'],
    ['tool_choice required without tools', { tool_choice: 'required' }, 'tool_choice'],
    ['tool_choice naming no tool of the request', { tools: [WEATHER], tool_choice: { type: 'function', function: { name: 'lookup' } } }, 'tool_choice.function.name'],
    ['an unknown tool_choice', { tools: [WEATHER], tool_choice: 'sometimes' as unknown as 'auto' }, 'tool_choice'],
    ['an unknown response format', { response_format: { type: 'xml' } as unknown as OpenAI.ResponseFormatText }, 'response_format.type'],
    ['a JSON schema without a name', { response_format: { type: 'json_schema', json_schema: { schema: {} } } as unknown as OpenAI.ResponseFormatJSONSchema }, 'response_format.json_schema.name'],
    ['an assistant message with neither content nor tool calls', { messages: [user, { role: 'assistant', content: null }, user] }, 'messages.1.content'],
    ['a tool message answering no earlier call', { messages: [user, { role: 'tool', tool_call_id: 'call_nowhere', content: 'rain' }] }, 'messages.1.tool_call_id'],
    ['a tool message without its call id', { messages: [user, { role: 'assistant', content: null, tool_calls: [CALL] }, { role: 'tool', content: 'rain' }] }, 'messages.2.tool_call_id'],
    ['a tool call without arguments text', { messages: [user, { role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: {} } }] }] }, 'messages.1.tool_calls.0.function.arguments'],
    ['a tool message with an image', { messages: [user, { role: 'assistant', tool_calls: [CALL] }, { role: 'tool', tool_call_id: CALL.id, content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AA==' } }] }] }, 'messages.2.content'],
    ['tools for a model without them', { model: 'fake-text', tools: [WEATHER] }, 'tools'],
    ['a tool conversation for a model without tools', { model: 'fake-text', messages: [user, { role: 'assistant', tool_calls: [CALL] }, { role: 'tool', tool_call_id: CALL.id, content: 'rain' }] }, 'messages.1'],
    ['a response format for a model without them', { model: 'fake-text', response_format: { type: 'json_schema', json_schema: { name: 'w' } } }, 'response_format'],
  ];

  it.each(cases)('%s', async (_, body, param) => {
    const { user: caller, openai } = await client();
    const request = { model: 'fake-tools', messages: [user], ...body } as OpenAI.ChatCompletionCreateParamsNonStreaming;
    const error = await openai.chat.completions.create(request).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({ status: 400, param, type: 'invalid_request_error' });
    expect(fake.calls).toEqual([]);
    expect(await t.app.container.db.repo(Generation).countBy({ userId: caller.id })).toBe(0);
    expect(await t.app.container.db.repo(User).findOneByOrFail({ id: caller.id })).toMatchObject({ heldTokens: 0 });
  });

  it('takes what asks nothing of a model: an empty tool list, tool_choice none without tools, a text format', async () => {
    const { openai } = await client();
    const completion = await openai.chat.completions.create({ model: 'fake-text', messages: [user], tools: [], tool_choice: 'none', response_format: { type: 'text' } });
    expect(completion.choices[0]?.message.content).toBe('Hello from the fake model');
    expect(textCalls()[0]).not.toHaveProperty('tools');
    expect(textCalls()[0]).not.toHaveProperty('toolChoice');
    expect(textCalls()[0]).not.toHaveProperty('responseFormat');
  });
});
