/**
 * Tool use and stop sequences through POST /v1/messages end to end over an OpenAI-compatible
 * upstream: the official `@anthropic-ai/sdk` against the real app, whose shipped catalog models
 * run on the real OpenAI-compatible adapter over a fake upstream speaking OpenAI's wire protocol.
 * A tool turn plain and streamed (the upstream's `call_…` id kept both ways), tool_choice on the
 * wire, stop sequences (reported only when the upstream says which matched: vLLM does, OpenAI
 * does not), and a model that declares no tools refused before anything is held or sent.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { Generation } from '../shared/db/entities';
import { startTestApp, TestApp } from './helpers/app';
import { anthropicClient, balanceOf } from './helpers/anthropic-client';
import { WEATHER } from './helpers/anthropic-tools';
import { FakeOpenAI } from './helpers/fake-openai';

const upstream = new FakeOpenAI({ apiKey: 'sk-upstream' });
let app: TestApp;
let dir: string;

/** The shipped catalog, plus `chat-plain`: chat-fast's upstream model declaring no tools. */
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
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'v1-messages-tools-'));
  await upstream.start();
  app = await startTestApp({ OPENAI_BASE_URL: upstream.baseUrl, OPENAI_API_KEY: 'sk-upstream', CATALOG_PATH: catalogWithPlainChat() });
});
afterAll(async () => {
  await app?.close();
  await upstream.close();
  fs.rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => upstream.reset());

const question: Anthropic.MessageParam = { role: 'user', content: 'What is the weather in Paris?' };
const OPENAI_WEATHER = { type: 'function', function: { name: 'get_weather', description: WEATHER.description, parameters: WEATHER.input_schema } };
const sent = () => upstream.apiRequests().map((r) => r.json ?? {});

describe('a tool turn over the OpenAI-compatible upstream', () => {
  it('plain: tools go up as functions, the call comes back as tool_use with its call_ id, the tool_result goes up as the tool message answering it; one charge a turn', async () => {
    const { user, anthropic } = await anthropicClient(app);
    const before = await balanceOf(app, user.id);
    const first = await anthropic.messages.create({ model: 'chat-fast', max_tokens: 200, tools: [WEATHER], messages: [question] });
    expect(first).toMatchObject({
      content: [{ type: 'tool_use', id: expect.stringMatching(/^call_fake\d+$/), name: 'get_weather', input: { city: 'Paris', unit: 'celsius' } }],
      stop_reason: 'tool_use',
    });
    const use = first.content[0] as Anthropic.ToolUseBlock;
    const second = await anthropic.messages.create({
      model: 'chat-fast',
      max_tokens: 200,
      tools: [WEATHER],
      messages: [question, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '18 degrees, clear' }] }],
    });
    expect(second).toMatchObject({ content: [{ type: 'text', text: 'Hello from the fake upstream' }], stop_reason: 'end_turn', usage: { input_tokens: 11, output_tokens: 5 } });

    const [up1, up2] = sent();
    expect(up1).toMatchObject({ model: 'gpt-4o-mini', max_tokens: 200, tools: [OPENAI_WEATHER], messages: [{ role: 'user', content: 'What is the weather in Paris?' }] });
    expect(up1?.tool_choice).toBeUndefined();
    expect(up2?.messages).toEqual([
      { role: 'user', content: 'What is the weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: use.id, type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris","unit":"celsius"}' } }] },
      { role: 'tool', tool_call_id: use.id, content: '18 degrees, clear' },
    ]);
    expect(await balanceOf(app, user.id)).toEqual({ total: before.total - 2, held: 0 });
  });

  it("streamed: the SDK's .stream() assembles the input from the upstream's pieces, then streams the answer", async () => {
    const { user, anthropic } = await anthropicClient(app);
    const before = await balanceOf(app, user.id);
    const stream = anthropic.messages.stream({ model: 'chat-fast', max_tokens: 200, tools: [WEATHER], messages: [question] });
    const pieces: string[] = [];
    stream.on('inputJson', (partial) => pieces.push(partial));
    const first = await stream.finalMessage();
    expect(first).toMatchObject({ content: [{ type: 'tool_use', name: 'get_weather', input: { city: 'Paris', unit: 'celsius' } }], stop_reason: 'tool_use', usage: { input_tokens: 11 } });
    // The upstream sends the arguments five characters at a time; each piece is passed on as it comes.
    expect(pieces.length).toBe(Math.ceil(upstream.toolArguments.length / 5));
    expect(pieces.join('')).toBe(upstream.toolArguments);
    const use = first.content[0] as Anthropic.ToolUseBlock;
    const answer = await anthropic.messages
      .stream({ model: 'chat-fast', max_tokens: 200, tools: [WEATHER], messages: [question, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '18' }] }] })
      .finalMessage();
    expect(answer).toMatchObject({ content: [{ type: 'text', text: 'Hello from the fake upstream' }], stop_reason: 'end_turn' });
    expect(sent()[1]).toMatchObject({ stream: true, messages: expect.arrayContaining([{ role: 'tool', tool_call_id: use.id, content: '18' }]) });
    expect(await balanceOf(app, user.id)).toEqual({ total: before.total - 2, held: 0 });
  });

  it('tool_choice reaches the wire as OpenAI says it: any is required, tool names the function, none', async () => {
    const { anthropic } = await anthropicClient(app);
    const lookup: Anthropic.Tool = { name: 'lookup', input_schema: { type: 'object', properties: {} } };
    const named = await anthropic.messages.create({ model: 'chat-fast', max_tokens: 50, tools: [WEATHER, lookup], tool_choice: { type: 'tool', name: 'lookup' }, messages: [question] });
    expect(named.content[0]).toMatchObject({ type: 'tool_use', name: 'lookup' });
    await anthropic.messages.create({ model: 'chat-fast', max_tokens: 50, tools: [WEATHER], tool_choice: { type: 'any' }, messages: [question] });
    const none = await anthropic.messages.create({ model: 'chat-fast', max_tokens: 50, tools: [WEATHER], tool_choice: { type: 'none' }, messages: [question] });
    expect(none).toMatchObject({ content: [{ type: 'text', text: 'Hello from the fake upstream' }], stop_reason: 'end_turn' });
    expect(sent().map((r) => r.tool_choice)).toEqual([{ type: 'function', function: { name: 'lookup' } }, 'required', 'none']);
  });

  it('a model that declares no tools is refused with a 400 naming tools: nothing held, nothing sent upstream', async () => {
    const { user, anthropic } = await anthropicClient(app);
    const before = await balanceOf(app, user.id);
    for (const stream of [false, true]) {
      const error = await anthropic.messages.create({ model: 'chat-plain', max_tokens: 50, tools: [WEATHER], messages: [question], stream }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Anthropic.BadRequestError);
      expect(error).toMatchObject({ error: { error: { type: 'invalid_request_error', message: 'tools: chat-plain does not support tools' } } });
    }
    expect(upstream.apiRequests()).toEqual([]);
    expect(await app.container.db.repo(Generation).countBy({ userId: user.id })).toBe(0);
    expect(await balanceOf(app, user.id)).toEqual(before);
  });
});

describe('stop_sequences over the OpenAI-compatible upstream', () => {
  it("go up as stop and cut the answer; OpenAI does not say which matched, so the stop reads as end_turn", async () => {
    const { anthropic } = await anthropicClient(app);
    const plain = await anthropic.messages.create({ model: 'chat-fast', max_tokens: 50, messages: [question], stop_sequences: [' fake'] });
    expect(plain).toMatchObject({ content: [{ type: 'text', text: 'Hello from the' }], stop_reason: 'end_turn', stop_sequence: null });
    expect(sent()[0]?.stop).toEqual([' fake']);
  });

  it('are reported with the sequence when the upstream names it, as vLLM does: plain and streamed', async () => {
    const { anthropic } = await anthropicClient(app);
    upstream.namesStopSequence = true;
    const plain = await anthropic.messages.create({ model: 'chat-fast', max_tokens: 50, messages: [question], stop_sequences: ['never', ' upstream'] });
    expect(plain).toMatchObject({ content: [{ type: 'text', text: 'Hello from the fake' }], stop_reason: 'stop_sequence', stop_sequence: ' upstream' });
    const streamed = await anthropic.messages.stream({ model: 'chat-fast', max_tokens: 50, messages: [question], stop_sequences: [' from'] }).finalMessage();
    expect(streamed).toMatchObject({ content: [{ type: 'text', text: 'Hello' }], stop_reason: 'stop_sequence', stop_sequence: ' from' });
    // A server's stop_reason that is none of the request's sequences (vLLM gives a token id, or null) tells nothing.
    const unmatched = await anthropic.messages.create({ model: 'chat-fast', max_tokens: 50, messages: [question], stop_sequences: ['never'] });
    expect(unmatched).toMatchObject({ stop_reason: 'end_turn', stop_sequence: null });
  });
});
