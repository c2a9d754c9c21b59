/**
 * The Responses API over the shipped catalog's real providers, with the official `openai` client:
 * Codex's loop served by the OpenAI-compatible adapter against a fake upstream speaking OpenAI's
 * Chat Completions wire (the function tools, the tool choice, the call and its output as they go
 * up; the call as it comes back, plain and streamed), a JSON schema format going up, and the
 * built-in demo model cut at max_output_tokens, which its own finish reason makes `incomplete`.
 */
import OpenAI from 'openai';
import { zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { startTestApp, TestApp } from './helpers/app';
import { FakeOpenAI } from './helpers/fake-openai';
import { rawResponseEvents, SHELL } from './helpers/responses';
import { moneyOf, vipClient } from './helpers/v1-clients';

const upstream = new FakeOpenAI({ apiKey: 'sk-upstream' });
let app: TestApp;

beforeAll(async () => {
  await upstream.start();
  app = await startTestApp({ OPENAI_BASE_URL: upstream.baseUrl, OPENAI_API_KEY: 'sk-upstream' });
});
afterAll(async () => {
  await app?.close();
  await upstream.close();
});
beforeEach(() => upstream.reset());

const SHELL_UP = { type: 'function', function: { name: SHELL.name, description: SHELL.description, parameters: SHELL.parameters, strict: false } };

describe('through the OpenAI-compatible adapter', () => {
  it("Codex's loop: the tools and the call go up in Chat's shape, the call comes back as a function_call item, its output answers it", async () => {
    const { user, openai } = await vipClient(app);
    const before = await moneyOf(app, user.id);
    const first = await openai.responses.create({ model: 'chat-fast', instructions: 'You are a coding agent.', input: 'What is the weather in Paris?', tools: [SHELL], tool_choice: 'auto' });
    const [call] = first.output;
    expect(call).toMatchObject({ type: 'function_call', call_id: expect.stringMatching(/^call_fake/), name: 'shell', arguments: upstream.toolArguments, status: 'completed' });
    if (call?.type !== 'function_call') throw new Error('expected a function call');
    const up1 = upstream.apiRequests()[0]?.json;
    expect(up1).toMatchObject({ model: 'gpt-4o-mini', tools: [SHELL_UP], tool_choice: 'auto' });

    // The second turn streamed, as Codex runs it.
    const second = await openai.responses
      .stream({ model: 'chat-fast', instructions: 'You are a coding agent.', previous_response_id: first.id, input: [{ type: 'function_call_output', call_id: call.call_id, output: '18 degrees' }], tools: [SHELL] })
      .finalResponse();
    expect(second).toMatchObject({ status: 'completed', output_text: 'Hello from the fake upstream' });
    expect(upstream.apiRequests()[1]?.json).toMatchObject({
      stream: true,
      messages: [
        { role: 'system', content: 'You are a coding agent.' },
        { role: 'user', content: 'What is the weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: [{ id: call.call_id, type: 'function', function: { name: 'shell', arguments: upstream.toolArguments } }] },
        { role: 'tool', tool_call_id: call.call_id, content: '18 degrees' },
      ],
    });
    // chat-fast's price, once a turn.
    expect(await moneyOf(app, user.id)).toEqual({ total: before.total - 2, held: 0 });
  });

  it('streams a call from the upstream as function_call events', async () => {
    const { key } = await vipClient(app);
    const { events } = await rawResponseEvents(app, key, { model: 'chat-fast', input: 'Weather?', tools: [SHELL] });
    const types = events.map((e) => e.event);
    expect(types.slice(0, 3)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added']);
    expect(types.slice(-3)).toEqual(['response.function_call_arguments.done', 'response.output_item.done', 'response.completed']);
    const deltas = events.filter((e) => e.event === 'response.function_call_arguments.delta').map((e) => e.data.delta);
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe(upstream.toolArguments);
    expect(events.at(-1)?.data.response).toMatchObject({ output: [{ type: 'function_call', name: 'shell', arguments: upstream.toolArguments }] });
  });

  it('sends a JSON schema format up as response_format, and the client parses the answer', async () => {
    const { openai } = await vipClient(app);
    upstream.reply = '{"city":"Paris","temperature":18}';
    const Weather = z.object({ city: z.string(), temperature: z.number() });
    const parsed = await openai.responses.parse({ model: 'chat-fast', input: 'Paris weather as JSON', text: { format: zodTextFormat(Weather, 'weather') } });
    expect(parsed.output_parsed).toEqual({ city: 'Paris', temperature: 18 });
    expect(upstream.apiRequests()[0]?.json?.response_format).toMatchObject({ type: 'json_schema', json_schema: { name: 'weather', strict: true, schema: { type: 'object' } } });
  });
});

describe('the built-in demo model at max_output_tokens', () => {
  it('is incomplete (max_output_tokens) plain and streamed, with the words it wrote; without the cap it completes', async () => {
    const { key, openai } = await vipClient(app);
    const input = 'Tell me about the sea and the birds';
    const cut = await openai.responses.create({ model: 'demo-text', input, max_output_tokens: 3 });
    expect(cut).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, usage: { output_tokens: 3 } });
    expect(cut.output_text.split(' ')).toHaveLength(3);
    const { events } = await rawResponseEvents(app, key, { model: 'demo-text', input, max_output_tokens: 3 });
    expect(events.at(-1)).toMatchObject({ event: 'response.incomplete', data: { response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } } } });
    const whole = await openai.responses.create({ model: 'demo-text', input });
    expect(whole).toMatchObject({ status: 'completed', incomplete_details: null });
    expect(upstream.apiRequests()).toEqual([]);
  });
});
