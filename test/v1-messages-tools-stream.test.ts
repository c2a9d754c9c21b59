/**
 * Tool use in streamed Messages (POST /v1/messages with `stream: true`) over the fake provider, as
 * Anthropic streams it: a `tool_use` block opened with its id, name and an empty input, its JSON
 * in `input_json_delta` pieces, closed, and `stop_reason: "tool_use"`; text said before the calls
 * in its own block first. The official SDK's `.stream()` helpers assemble the `input` objects and
 * its tool runner completes the loop; a replay streams the same blocks whole; each turn is charged
 * once.
 */
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import { useTestApp } from './helpers/app';
import { anthropicBaseURL, anthropicClient, balanceOf, parseSse, RawEvent } from './helpers/anthropic-client';
import { speakingFirst, textRequests, WEATHER, weatherCall } from './helpers/anthropic-tools';
import { FakeProvider } from './helpers/fake-provider';

const fake = new FakeProvider('fake');
let lead = '';
const t = useTestApp({ CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json') }, { providers: [speakingFirst(fake, () => lead)] });
beforeEach(() => {
  fake.reset();
  lead = '';
});

const question: Anthropic.MessageParam = { role: 'user', content: 'What is the weather in Oslo?' };

async function rawEvents(key: string, body: Record<string, unknown>): Promise<RawEvent[]> {
  const res = await fetch(`${anthropicBaseURL(t.app)}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'fake-tools', max_tokens: 100, tools: [WEATHER], messages: [question], stream: true, ...body }),
  });
  expect(res.status).toBe(200);
  return parseSse(await res.text());
}

const data = (events: RawEvent[]) => events.map((e) => e.data);

describe('streamed tool use', () => {
  it("streams a call as Anthropic does: a tool_use block with id, name and empty input, input_json_delta pieces, its stop, stop_reason tool_use", async () => {
    const { key } = await anthropicClient(t.app);
    fake.toolCalls = [weatherCall()];
    const events = await rawEvents(key, {});
    expect(events.map((e) => e.event)).toEqual(['message_start', 'content_block_start', 'ping', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    expect(data(events).slice(1)).toEqual([
      { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'call_abc', name: 'get_weather', input: {} } },
      { type: 'ping' },
      // The fake sends the arguments in two pieces; each is passed on as it comes.
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"city":' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '"Oslo"}' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { input_tokens: 3, output_tokens: 1 } },
      { type: 'message_stop' },
    ]);
  });

  it('streams text said before the calls in its own block, then one block per call, numbered in order', async () => {
    const { key } = await anthropicClient(t.app);
    lead = 'Let me look.';
    fake.toolCalls = [weatherCall('call_1', 'Oslo'), weatherCall('call_2', 'Bergen')];
    const events = data(await rawEvents(key, {})) as Array<{ type: string; index?: number; content_block?: unknown; delta?: unknown }>;
    const blocks = events.filter((e) => e.type.startsWith('content_block')).map((e) => [e.type.replace('content_block_', ''), e.index]);
    expect(blocks).toEqual([
      ['start', 0], ['delta', 0], ['stop', 0],
      ['start', 1], ['delta', 1], ['delta', 1], ['stop', 1],
      ['start', 2], ['delta', 2], ['delta', 2], ['stop', 2],
    ]);
    expect(events.filter((e) => e.type === 'content_block_start').map((e) => e.content_block)).toEqual([
      { type: 'text', text: '' },
      { type: 'tool_use', id: 'call_1', name: 'get_weather', input: {} },
      { type: 'tool_use', id: 'call_2', name: 'get_weather', input: {} },
    ]);
    expect(events[3]).toEqual({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Let me look.' } });
  });

  it("has the SDK's .stream() helpers assemble each tool_use input; the tool_result turn streams the answer; one charge a turn", async () => {
    const { user, anthropic } = await anthropicClient(t.app);
    const before = await balanceOf(t.app, user.id);
    fake.toolCalls = [weatherCall('call_1', 'Oslo'), weatherCall('call_2', 'Bergen')];
    const stream = anthropic.messages.stream({ model: 'fake-tools', max_tokens: 100, tools: [WEATHER], messages: [question] });
    const pieces: string[] = [];
    stream.on('inputJson', (partial) => pieces.push(partial));
    const first = await stream.finalMessage();
    expect(first).toMatchObject({
      content: [
        { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Oslo' } },
        { type: 'tool_use', id: 'call_2', name: 'get_weather', input: { city: 'Bergen' } },
      ],
      stop_reason: 'tool_use',
    });
    expect(pieces.join('')).toBe('{"city":"Oslo"}{"city":"Bergen"}');

    const answer = await anthropic.messages
      .stream({
        model: 'fake-tools',
        max_tokens: 100,
        tools: [WEATHER],
        messages: [
          question,
          { role: 'assistant', content: first.content },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'call_1', content: 'Rain' },
              { type: 'tool_result', tool_use_id: 'call_2', content: 'Sun' },
            ],
          },
        ],
      })
      .finalMessage();
    expect(answer).toMatchObject({ content: [{ type: 'text', text: 'Hello from the fake model' }], stop_reason: 'end_turn' });
    expect(textRequests(fake)[1]?.messages.slice(2)).toEqual([
      { role: 'tool', tool_call_id: 'call_1', content: 'Rain' },
      { role: 'tool', tool_call_id: 'call_2', content: 'Sun' },
    ]);
    expect(await balanceOf(t.app, user.id)).toEqual({ total: before.total - 6, held: 0 });
  });

  it('streams a replay (same Idempotency-Key) whole: the same tool_use blocks, charged once', async () => {
    const { user, anthropic } = await anthropicClient(t.app);
    const before = await balanceOf(t.app, user.id);
    lead = 'Checking.';
    fake.toolCalls = [weatherCall()];
    const body = { model: 'fake-tools', max_tokens: 100, tools: [WEATHER], messages: [question] };
    const headers = { 'Idempotency-Key': 'tool-stream-replay' };
    const first = await anthropic.messages.stream(body, { headers }).finalMessage();
    const replayed = await anthropic.messages.stream(body, { headers }).finalMessage();
    expect(replayed).toEqual(first);
    expect(first.content).toEqual([
      { type: 'text', text: 'Checking.' },
      { type: 'tool_use', id: 'call_abc', name: 'get_weather', input: { city: 'Oslo' } },
    ]);
    expect(fake.calls).toHaveLength(1);
    expect(await balanceOf(t.app, user.id)).toEqual({ total: before.total - 3, held: 0 });
  });

  it("lets the SDK's tool runner complete the whole loop, streamed (its message thread sent whole again when told it is not held)", async () => {
    const { user, anthropic } = await anthropicClient(t.app);
    const before = await balanceOf(t.app, user.id);
    fake.toolCalls = [weatherCall()];
    let requests = 0;
    const count = (): void => void requests++;
    const asked: unknown[] = [];
    const weather = betaTool({
      name: 'get_weather',
      description: 'The current weather in a city',
      inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } as const,
      run: (input) => {
        asked.push(input);
        return 'Rain, 12 degrees';
      },
    });
    t.app.server.on('request', count);
    try {
      const final = await anthropic.beta.messages.toolRunner({ model: 'fake-tools', max_tokens: 100, messages: [question], tools: [weather], stream: true });
      expect(final.content).toEqual([{ type: 'text', text: 'Hello from the fake model' }]);
    } finally {
      t.app.server.off('request', count);
    }
    expect(asked).toEqual([{ city: 'Oslo' }]);
    // The runner's second turn continued its thread with only the tool's answer: refused (404
    // thread_not_found, nothing held), it sent the whole conversation, which was answered.
    expect(requests).toBe(3);
    expect(textRequests(fake).map((r) => r.messages.length)).toEqual([1, 3]);
    expect(textRequests(fake)[1]?.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_abc', content: 'Rain, 12 degrees' });
    expect(await balanceOf(t.app, user.id)).toEqual({ total: before.total - 6, held: 0 });
  });
});
