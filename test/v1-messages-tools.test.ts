/**
 * Tool use through POST /v1/messages, driven by the official `@anthropic-ai/sdk` against the real
 * app over the fake provider: a round trip (tools → tool_use → tool_result → the answer) with what
 * reaches the provider at each turn and one charge and one history row per turn, the forms of
 * tool_choice and of tool results, tool-call ids both ways, and what is refused before anything is
 * held. Streamed: v1-messages-tools-stream.test.ts; over an OpenAI-compatible upstream:
 * v1-messages-upstream-tools.test.ts; Claude Code's own requests: v1-messages-claude-code.test.ts.
 */
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { Generation, LedgerEntry } from '../shared/db/entities';
import { useTestApp } from './helpers/app';
import { anthropicClient, balanceOf } from './helpers/anthropic-client';
import { generationIdOf, speakingFirst, textRequests, WEATHER, WEATHER_FUNCTION, WEATHER_SCHEMA, weatherCall } from './helpers/anthropic-tools';
import { FakeProvider } from './helpers/fake-provider';

const fake = new FakeProvider('fake');
let lead = '';
const t = useTestApp({ CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json') }, { providers: [speakingFirst(fake, () => lead)] });
beforeEach(() => {
  fake.reset();
  lead = '';
});

type APIError = InstanceType<typeof Anthropic.APIError>;
const question: Anthropic.MessageParam = { role: 'user', content: 'What is the weather in Oslo?' };

describe('a tool round trip', () => {
  it('tools go to the provider, its call comes back as a tool_use block, the tool_result goes back as a tool message, the answer comes back; one charge and one history row a turn', async () => {
    const { user, anthropic } = await anthropicClient(t.app);
    const before = await balanceOf(t.app, user.id);
    fake.toolCalls = [weatherCall()];
    const first = await anthropic.messages.create({ model: 'fake-tools', max_tokens: 100, tools: [WEATHER], messages: [question] });
    expect(first).toMatchObject({
      content: [{ type: 'tool_use', id: 'call_abc', name: 'get_weather', input: { city: 'Oslo' } }],
      stop_reason: 'tool_use',
      stop_sequence: null,
    });
    expect(textRequests(fake)[0]).toMatchObject({ tools: [WEATHER_FUNCTION], messages: [{ role: 'user', content: 'What is the weather in Oslo?' }] });
    expect(textRequests(fake)[0]?.toolChoice).toBeUndefined();

    const use = first.content[0] as Anthropic.ToolUseBlock;
    const second = await anthropic.messages.create({
      model: 'fake-tools',
      max_tokens: 100,
      tools: [WEATHER],
      messages: [question, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'Rain, 12 degrees' }] }],
    });
    expect(second).toMatchObject({ content: [{ type: 'text', text: 'Hello from the fake model' }], stop_reason: 'end_turn' });
    expect(textRequests(fake)[1]?.messages).toEqual([
      { role: 'user', content: 'What is the weather in Oslo?' },
      { role: 'assistant', content: null, tool_calls: [weatherCall()] },
      { role: 'tool', tool_call_id: 'call_abc', content: 'Rain, 12 degrees' },
    ]);

    // fake-tools costs 3 a generation: one hold and capture, one ledger row, one history row per turn.
    expect(await balanceOf(t.app, user.id)).toEqual({ total: before.total - 6, held: 0 });
    for (const message of [first, second]) {
      expect(await t.app.container.db.repo(LedgerEntry).findBy({ generationId: generationIdOf(message) })).toMatchObject([{ amount: -3, reason: 'generation' }]);
    }
    const history = await t.app.http().get('/api/v2/user/history').set('authorization', `Bearer ${user.accessToken}`);
    expect(history.body.items).toHaveLength(2);
    const polled = await t.app.http().get(`/api/v2/generate/gen_${generationIdOf(first)}`).set('authorization', `Bearer ${user.accessToken}`);
    expect(polled.body).toMatchObject({ status: 'completed', tokens_spent: 3, result_metadata: { finish_reason: 'tool_calls', tool_calls: [weatherCall()] } });
  });

  it('gives the text said before the calls as a text block before the tool_use blocks; several calls are several blocks, answered in one message', async () => {
    const { anthropic } = await anthropicClient(t.app);
    lead = 'Let me look that up.';
    fake.toolCalls = [weatherCall('call_1', 'Oslo'), weatherCall('call_2', 'Bergen')];
    const first = await anthropic.messages.create({ model: 'fake-tools', max_tokens: 100, tools: [WEATHER], messages: [question] });
    expect(first.content).toEqual([
      { type: 'text', text: 'Let me look that up.' },
      { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Oslo' } },
      { type: 'tool_use', id: 'call_2', name: 'get_weather', input: { city: 'Bergen' } },
    ]);
    await anthropic.messages.create({
      model: 'fake-tools',
      max_tokens: 100,
      tools: [WEATHER],
      messages: [
        question,
        { role: 'assistant', content: first.content },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'call_1', content: [{ type: 'text', text: 'Rain' }, { type: 'text', text: '12 degrees' }] },
            { type: 'tool_result', tool_use_id: 'call_2', content: 'No such city', is_error: true },
            { type: 'text', text: 'Answer in one line.' },
          ],
        },
      ],
    });
    // The tool messages right after the calls (as OpenAI's wire needs them), then the rest of the user's message.
    expect(textRequests(fake)[1]?.messages.slice(1)).toEqual([
      { role: 'assistant', content: [{ type: 'text', text: 'Let me look that up.' }], tool_calls: [weatherCall('call_1', 'Oslo'), weatherCall('call_2', 'Bergen')] },
      { role: 'tool', tool_call_id: 'call_1', content: 'Rain\n\n12 degrees' },
      { role: 'tool', tool_call_id: 'call_2', content: 'Error: No such city' },
      { role: 'user', content: [{ type: 'text', text: 'Answer in one line.' }] },
    ]);
  });

  it('passes an image a tool returned as a note saying it is not shown, and drops earlier thinking blocks', async () => {
    const { anthropic } = await anthropicClient(t.app);
    const screenshot: Anthropic.ImageBlockParam = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } };
    const message = await anthropic.messages.create({
      model: 'fake-tools',
      max_tokens: 100,
      tools: [WEATHER],
      messages: [
        question,
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'The user wants the weather.', signature: 'c2ln' },
            { type: 'redacted_thinking', data: 'cmVkYWN0ZWQ=' },
            { type: 'tool_use', id: 'toolu_01A', name: 'get_weather', input: { city: 'Oslo' } },
          ],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01A', content: [{ type: 'text', text: 'See the map.' }, screenshot] }] },
      ],
    });
    expect(message.content).toEqual([{ type: 'text', text: 'Hello from the fake model' }]);
    expect(textRequests(fake)[0]?.messages.slice(1)).toEqual([
      { role: 'assistant', content: null, tool_calls: [weatherCall('toolu_01A')] },
      { role: 'tool', tool_call_id: 'toolu_01A', content: 'See the map.\n\n[An image the tool returned (image/png) is not shown: images in tool results are not passed to the model]' },
    ]);
  });
});

describe('tool-call ids', () => {
  it("keeps an id Anthropic would take, and carries one it would not in Anthropic's alphabet, read back to the upstream's id when answered", async () => {
    const { anthropic } = await anthropicClient(t.app);
    const upstreamId = 'functions.get_weather:0';
    fake.toolCalls = [weatherCall(upstreamId)];
    const first = await anthropic.messages.create({ model: 'fake-tools', max_tokens: 100, tools: [WEATHER], messages: [question] });
    const use = first.content[0] as Anthropic.ToolUseBlock;
    expect(use.id).toMatch(/^toolu_[A-Za-z0-9_-]+$/);
    await anthropic.messages.create({
      model: 'fake-tools',
      max_tokens: 100,
      tools: [WEATHER],
      messages: [question, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'Rain' }] }],
    });
    expect(textRequests(fake)[1]?.messages.slice(1)).toEqual([
      { role: 'assistant', content: null, tool_calls: [weatherCall(upstreamId)] },
      { role: 'tool', tool_call_id: upstreamId, content: 'Rain' },
    ]);
  });
});

describe('tool_choice', () => {
  it('auto, any (required), tool (that function) and none reach the provider; disable_parallel_tool_use is accepted', async () => {
    const { anthropic } = await anthropicClient(t.app);
    fake.toolCalls = [weatherCall()];
    const lookup: Anthropic.Tool = { name: 'lookup', input_schema: { type: 'object', properties: {} } };
    const choices: Anthropic.ToolChoice[] = [
      { type: 'auto' },
      { type: 'any', disable_parallel_tool_use: true },
      { type: 'tool', name: 'lookup' },
      { type: 'none' },
      { type: 'auto', disable_parallel_tool_use: true },
    ];
    const stops: string[] = [];
    for (const tool_choice of choices) {
      const message = await anthropic.messages.create({ model: 'fake-tools', max_tokens: 100, tools: [WEATHER, lookup], tool_choice, messages: [question] });
      stops.push(message.stop_reason ?? '');
    }
    expect(textRequests(fake).map((r) => r.toolChoice)).toEqual(['auto', 'required', { type: 'function', function: { name: 'lookup' } }, 'none', 'auto']);
    // The fake answers in text when told none.
    expect(stops).toEqual(['tool_use', 'tool_use', 'tool_use', 'end_turn', 'tool_use']);
  });

  it('auto and none ask nothing without tools; an empty tools list is no tools, on any model', async () => {
    const { anthropic } = await anthropicClient(t.app);
    for (const tool_choice of [{ type: 'auto' }, { type: 'none' }] as Anthropic.ToolChoice[]) {
      const message = await anthropic.messages.create({ model: 'fake-text', max_tokens: 100, tools: [], tool_choice, messages: [question] });
      expect(message.stop_reason).toBe('end_turn');
    }
    expect(textRequests(fake).map((r) => [r.tools, r.toolChoice])).toEqual([
      [undefined, undefined],
      [undefined, undefined],
    ]);
  });
});

describe('message threads (the SDK tool runner\'s `thread`)', () => {
  it('serves a thread create as any request, and answers a continue as a thread not held (404 thread_not_found), holding nothing', async () => {
    const { user, key } = await anthropicClient(t.app);
    const post = (thread: Record<string, unknown>) =>
      t.app.http().post('/v1/messages').set('x-api-key', key).set('anthropic-beta', 'message-threads-2026-08-12').send({ model: 'fake-tools', max_tokens: 100, messages: [question], thread });
    const created = await post({ type: 'create' });
    expect(created.status).toBe(200);
    const before = await balanceOf(t.app, user.id);
    const continued = await post({ type: 'continue', previous_message_id: created.body.id });
    expect(continued.status).toBe(404);
    expect(continued.body).toMatchObject({
      type: 'error',
      error: { type: 'not_found_error', message: expect.stringContaining(`${created.body.id} is not held here`), details: { error_code: 'thread_not_found' } },
    });
    expect(fake.calls).toHaveLength(1);
    expect(await balanceOf(t.app, user.id)).toEqual(before);
  });
});

describe('refused with a 400 naming the field, before anything is held, counted or sent', () => {
  const use = (input: unknown = { city: 'Oslo' }) => ({ role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input }] });
  const result = (extra: Record<string, unknown> = {}) => ({ type: 'tool_result', tool_use_id: 'toolu_1', content: 'Rain', ...extra });
  const refusals: Array<[string, Record<string, unknown>, string]> = [
    ['a model without tools', { model: 'fake-text' }, 'tools: fake-text does not support tools'],
    ['tool turns on a model without tools', { model: 'fake-text', tools: undefined, messages: [question, use(), { role: 'user', content: [result()] }] }, 'messages.1: fake-text does not support tools'],
    ["Anthropic's web search", { tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 5 }] }, 'tools.0.type: web_search_20250305 (web_search) is one of the tools Anthropic defines'],
    ["Anthropic's bash", { tools: [WEATHER, { type: 'bash_20250124', name: 'bash' }] }, 'tools.1.type: bash_20250124 (bash) is one of the tools'],
    ["Anthropic's text editor", { tools: [{ type: 'text_editor_20250728', name: 'str_replace_based_edit_tool' }] }, 'tools.0.type: text_editor_20250728 (str_replace_based_edit_tool)'],
    ["Anthropic's computer use", { tools: [{ type: 'computer_20250124', name: 'computer', display_width_px: 1024, display_height_px: 768 }] }, 'tools.0.type: computer_20250124 (computer)'],
    ['a tool without input_schema', { tools: [{ name: 'get_weather' }] }, 'tools.0.input_schema: is required'],
    ['a tool type that is no name', { tools: [{ type: 5, name: 'get_weather', input_schema: WEATHER_SCHEMA }] }, 'tools.0.type: must be custom, or absent'],
    ['a tool name Anthropic would not take', { tools: [{ name: 'get weather', input_schema: WEATHER_SCHEMA }] }, 'tools.0.name: must be 1–64 letters'],
    ['two tools of one name', { tools: [WEATHER, WEATHER] }, 'tools.1.name: is the name of an earlier tool'],
    ['tool_choice naming no tool', { tool_choice: { type: 'tool', name: 'nope' } }, 'tool_choice.name: names no tool of this request: nope'],
    ['tool_choice any without tools', { tools: undefined, tool_choice: { type: 'any' } }, 'tool_choice: needs tools'],
    ['an unknown tool_choice', { tool_choice: { type: 'sometimes' } }, 'tool_choice'],
    ['a tool_result answering nothing', { messages: [{ role: 'user', content: [result()] }] }, 'messages.0.content.0.tool_use_id: answers no tool_use of the message before: toolu_1'],
    ['a tool_use left unanswered', { messages: [question, use(), { role: 'user', content: 'Well?' }] }, 'messages.1.content.0.id: toolu_1 has no tool_result in the next message'],
    ['a tool_use at the end', { messages: [question, use()] }, 'messages.1.content.0.id: toolu_1 has no tool_result in the next message'],
    ['a tool_result after text', { messages: [question, use(), { role: 'user', content: [{ type: 'text', text: 'Here:' }, result()] }] }, 'messages.2.content.1.type: tool_result blocks must come before'],
    ['a tool_use whose input is not an object', { messages: [question, use('Oslo'), { role: 'user', content: [result()] }] }, 'messages.1.content.0.input: must be an object'],
    ['a tool_use in a user message', { messages: [{ role: 'user', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} }] }] }, 'messages.0.content.0.type: tool_use blocks belong in an assistant message'],
    ['a document in a tool_result', { messages: [question, use(), { role: 'user', content: [result({ content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } }] })] }] }, 'messages.2.content.0.content.0.type: document blocks are not supported in a tool_result'],
    // The domain's refusal of the user's text after the tool's answer, named where the client sent it.
    ['an image after a tool_result, for a model without vision', { messages: [question, use(), { role: 'user', content: [result(), { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }] }] }, 'messages.2.content: this model does not accept images'],
  ];

  it.each(refusals)('%s', async (_name, change, message) => {
    const { user, anthropic } = await anthropicClient(t.app);
    const before = await balanceOf(t.app, user.id);
    const body = { model: 'fake-tools', max_tokens: 100, tools: [WEATHER], messages: [question], ...change } as unknown as Anthropic.MessageCreateParamsNonStreaming;
    for (const stream of [false, true]) {
      const error = await anthropic.messages.create({ ...body, stream } as Anthropic.MessageCreateParamsNonStreaming).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Anthropic.BadRequestError);
      expect(error).toMatchObject({ status: 400, error: { type: 'error', error: { type: 'invalid_request_error' } } });
      expect((error as APIError).apiMessage).toContain(message);
    }
    expect(fake.calls).toEqual([]);
    expect(await t.app.container.db.repo(Generation).countBy({ userId: user.id })).toBe(0);
    expect(await balanceOf(t.app, user.id)).toEqual(before);
    // Nothing counted against the plan's limits either.
    const quota = await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${user.accessToken}`);
    expect(quota.headers['x-ratelimit-limit-hour']).toEqual(expect.any(String));
    expect(quota.headers['x-ratelimit-remaining-hour']).toBe(quota.headers['x-ratelimit-limit-hour']);
  });
});
