/**
 * The OpenAI-compatible adapter's tools, response formats and stop sequences, against the fake
 * upstream speaking OpenAI's wire protocol: what we send (only what was asked), the tool calls and
 * finish reasons we read back, whole and streamed in indexed pieces, and a tool-call conversation
 * sent in the API's own message shape.
 */
import { createOpenAIProvider } from '../shared/providers/openai';
import type { ChatMessage, ProviderAdapter, TextChunk, TextRequest, ToolDefinition } from '../shared/providers/types';
import { finishReasonFrom, toolCallDeltasFrom, toolCallsFrom } from '../shared/providers/openai/chat-wire';
import { FakeOpenAI } from './helpers/fake-openai';

const fake = new FakeOpenAI();
let adapter: ProviderAdapter;

beforeAll(async () => {
  await fake.start();
  adapter = createOpenAIProvider({ baseUrl: fake.baseUrl });
});
afterAll(() => fake.close());
beforeEach(() => fake.reset());

const WEATHER: ToolDefinition = {
  type: 'function',
  function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};

function request(overrides: Partial<TextRequest> = {}): TextRequest {
  return { upstreamModel: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Weather in Paris?' }], temperature: 0.3, maxTokens: null, maxContext: 128_000, ...overrides };
}

function text() {
  if (!adapter.text) throw new Error('no text capability');
  return adapter.text;
}

async function collect(chunks: AsyncIterable<TextChunk>): Promise<TextChunk[]> {
  const all: TextChunk[] = [];
  for await (const chunk of chunks) all.push(chunk);
  return all;
}

const signal = (): AbortSignal => AbortSignal.timeout(10_000);

describe('what is sent', () => {
  it('sends tools, tool_choice, response_format and stop when given, in the API\'s shape', async () => {
    const format = { type: 'json_schema' as const, json_schema: { name: 'weather', schema: { type: 'object' }, strict: true } };
    await text().complete(request({ tools: [WEATHER], toolChoice: { type: 'function', function: { name: 'get_weather' } }, responseFormat: format, stop: ['END', '\n\n'] }), { signal: signal() });
    expect(fake.apiRequests()[0]?.json).toMatchObject({
      tools: [WEATHER],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      response_format: format,
      stop: ['END', '\n\n'],
    });
  });

  it('sends none of them when none is given (a server that knows none of them is never sent one)', async () => {
    await text().complete(request(), { signal: signal() });
    await collect(text().stream(request(), { signal: signal() }));
    for (const sent of fake.apiRequests()) {
      for (const field of ['tools', 'tool_choice', 'response_format', 'stop']) expect(sent.json).not.toHaveProperty(field);
    }
  });

  it('sends a tool-call conversation as the API takes it: assistant tool_calls with null content, then the tool message', async () => {
    const call = { id: 'call_1', type: 'function' as const, function: { name: 'get_weather', arguments: '{"city":"Paris"}' } };
    const messages: ChatMessage[] = [
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', content: '18°C and sunny', tool_call_id: 'call_1' },
    ];
    const result = await text().complete(request({ tools: [WEATHER], messages }), { signal: signal() });
    expect(fake.apiRequests()[0]?.json?.messages).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', content: '18°C and sunny', tool_call_id: 'call_1' },
    ]);
    // The tool answered: the model answers in text now.
    expect(result).toMatchObject({ content: 'Hello from the fake upstream', toolCalls: [], finishReason: 'stop' });
  });
});

describe('what is read back', () => {
  it('reads a completion\'s tool calls and finish_reason "tool_calls"; empty content', async () => {
    const result = await text().complete(request({ tools: [WEATHER] }), { signal: signal() });
    expect(result).toEqual({
      content: '',
      toolCalls: [{ id: expect.stringMatching(/^call_/), type: 'function', function: { name: 'get_weather', arguments: fake.toolArguments } }],
      finishReason: 'tool_calls',
      usage: fake.usage,
    });
  });

  it('passes a stream\'s tool-call pieces on as indexed (id and name first, then the arguments), then the finish, then the usage', async () => {
    const chunks = await collect(text().stream(request({ tools: [WEATHER] }), { signal: signal() }));
    const pieces = chunks.flatMap((c) => ('toolCall' in c ? [c.toolCall] : []));
    expect(pieces[0]).toEqual({ index: 0, id: expect.stringMatching(/^call_/), name: 'get_weather' });
    expect(pieces.slice(1).every((p) => p.index === 0 && p.id === undefined && p.name === undefined)).toBe(true);
    expect(pieces.length).toBeGreaterThan(3);
    expect(pieces.map((p) => p.arguments ?? '').join('')).toBe(fake.toolArguments);
    expect(chunks.filter((c) => 'delta' in c)).toEqual([]);
    expect(chunks.slice(-2)).toEqual([{ finish: 'tool_calls' }, { usage: fake.usage }]);
  });

  it('reports stop when the upstream cut its reply at the stop sequence, plain and streamed', async () => {
    const stopped = await text().complete(request({ stop: [' fake'] }), { signal: signal() });
    expect(stopped).toMatchObject({ content: 'Hello from the', finishReason: 'stop' });
    const streamed = await collect(text().stream(request({ stop: [' fake'] }), { signal: signal() }));
    expect(streamed.flatMap((c) => ('delta' in c ? [c.delta] : [])).join('')).toBe('Hello from the');
    expect(streamed).toContainEqual({ finish: 'stop' });
  });
});

describe('reading what other compatible servers send', () => {
  it('takes a finish reason it does not know as stop, and the older functions API\'s function_call as tool_calls', () => {
    expect(finishReasonFrom('function_call')).toBe('tool_calls');
    expect(finishReasonFrom('eos')).toBe('stop');
    expect(finishReasonFrom(null)).toBeNull();
  });

  it('gives a streamed piece without an index its place in the list, and passes arguments sent as an object on as JSON', () => {
    expect(toolCallDeltasFrom({ tool_calls: [{ id: 'a', function: { name: 'f', arguments: '{}' } }, { id: 'b', function: { name: 'g' } }] })).toEqual([
      { index: 0, id: 'a', name: 'f', arguments: '{}' },
      { index: 1, id: 'b', name: 'g' },
    ]);
    expect(toolCallsFrom({ tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: { city: 'Oslo' } } }] })).toEqual([
      { id: 'c', type: 'function', function: { name: 'f', arguments: '{"city":"Oslo"}' } },
    ]);
  });

  it('finds malformed tool calls malformed (the adapter then fails as unavailable) instead of passing them on', () => {
    expect(toolCallsFrom({ tool_calls: 'get_weather' })).toBeNull();
    expect(toolCallsFrom({ tool_calls: [{ id: 'c', function: {} }] })).toBeNull();
    expect(toolCallDeltasFrom({ tool_calls: [{ index: 100_000, function: { arguments: 'x' } }] })).toBeNull();
    expect(toolCallDeltasFrom({ tool_calls: [{ index: -1 }] })).toBeNull();
    expect(toolCallDeltasFrom({ tool_calls: {} })).toBeNull();
  });
});
