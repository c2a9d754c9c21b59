/**
 * Function tools, tool choice, structured output and finish reasons over OpenAI's Responses API,
 * driven by the official `openai` client against the real app (fixture catalog: `fake-tools`
 * declares tools and response formats, `fake-text` neither): the loop Codex runs on every turn
 * (tools → a function_call item → its function_call_output, continued by previous_response_id or
 * sent whole → the answer), the input items that carry calls and outputs, every form of
 * tool_choice, `text.format` through `responses.parse`, `incomplete` for a reply cut short, and
 * what is refused before anything is held or sent. Streaming is in v1-responses-tools-stream.test.ts,
 * the real OpenAI adapter in v1-responses-upstream.test.ts.
 */
import path from 'node:path';
import OpenAI from 'openai';
import { zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { Generation, LedgerEntry } from '../shared/db/entities';
import type { TextRequest } from '../shared/providers/types';
import { useTestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { asChatTool, READ_FILE, responseGenerationId, Script, scriptedAdapter, SHELL } from './helpers/responses';
import { moneyOf, vipClient } from './helpers/v1-clients';

const fake = new FakeProvider('fake');
const script: Script = { preamble: null, finish: null };
const t = useTestApp({ CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json') }, { providers: [scriptedAdapter(fake, script)] });
beforeEach(() => {
  fake.reset();
  Object.assign(script, { preamble: null, finish: null });
});

const REPLY = 'Hello from the fake model';
const LS = { id: 'call_ls', type: 'function' as const, function: { name: 'shell', arguments: '{"command":["ls"]}' } };
const lastSent = () => fake.calls.at(-1)?.request as TextRequest;

function functionCalls(response: OpenAI.Responses.Response): OpenAI.Responses.ResponseFunctionToolCall[] {
  return response.output.filter((item): item is OpenAI.Responses.ResponseFunctionToolCall => item.type === 'function_call');
}

describe("Codex's loop", () => {
  it('tools → function_call → function_call_output with previous_response_id → the answer; the provider gets the whole conversation; each turn charged once', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    fake.toolCalls = [LS];
    const first = await openai.responses.create({
      model: 'fake-tools',
      instructions: 'You are a coding agent.',
      input: [{ role: 'user', content: 'List the files' }],
      tools: [SHELL],
      tool_choice: 'auto',
      parallel_tool_calls: false,
      store: true,
    });
    const firstId = responseGenerationId(first);
    expect(first).toMatchObject({
      status: 'completed',
      incomplete_details: null,
      output: [{ type: 'function_call', id: `fc_${firstId}_0`, call_id: 'call_ls', name: 'shell', arguments: '{"command":["ls"]}', status: 'completed' }],
      tools: [SHELL],
      tool_choice: 'auto',
      // Not applied (the providers take no such switch), so not echoed as if it were.
      parallel_tool_calls: true,
      usage: { output_tokens: 1 },
    });
    // A response that only calls has no message, and so no text.
    expect(first.output).toHaveLength(1);
    expect(first.output_text).toBe('');
    expect(lastSent()).toMatchObject({ tools: [asChatTool(SHELL)], toolChoice: 'auto' });

    const [call] = functionCalls(first);
    const second = await openai.responses.create({
      model: 'fake-tools',
      instructions: 'You are a coding agent.',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call!.call_id, output: 'README.md\nsrc' }],
      tools: [SHELL],
    });
    expect(second).toMatchObject({ status: 'completed', output_text: REPLY, previous_response_id: first.id });
    expect(second.output).toEqual([expect.objectContaining({ type: 'message', role: 'assistant' })]);
    expect(lastSent().messages).toEqual([
      { role: 'system', content: 'You are a coding agent.' },
      { role: 'user', content: 'List the files' },
      { role: 'assistant', content: null, tool_calls: [LS] },
      { role: 'tool', tool_call_id: 'call_ls', content: 'README.md\nsrc' },
    ]);

    // Two generations at fake-tools' price, one ledger row and one history row each.
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total - 6, held: 0 });
    for (const response of [first, second]) expect(await t.app.container.db.repo(LedgerEntry).countBy({ generationId: responseGenerationId(response) })).toBe(1);
    const history = await t.app.http().get('/api/v2/user/history').set('authorization', `Bearer ${user.accessToken}`);
    expect(history.body.items.slice(0, 2)).toMatchObject([
      { id: responseGenerationId(second), status: 'completed', tokens_spent: 3 },
      { id: firstId, status: 'completed', tokens_spent: 3 },
    ]);
    // The call is kept with its generation: a GET answers the same items.
    expect(await openai.responses.retrieve(first.id)).toEqual(first);
  });

  it('carries what the model said before its calls, and several calls, through a chain', async () => {
    const { openai } = await vipClient(t.app);
    script.preamble = 'Reading both.';
    fake.toolCalls = [
      { id: 'call_a', type: 'function', function: { name: 'read_file', arguments: '{"path":"a"}' } },
      { id: 'call_b', type: 'function', function: { name: 'read_file', arguments: '{"path":"b"}' } },
    ];
    const first = await openai.responses.create({ model: 'fake-tools', input: 'Read a and b', tools: [READ_FILE] });
    const id = responseGenerationId(first);
    // The message first, then the calls in the order the model made them.
    expect(first.output).toMatchObject([
      { type: 'message', id: `msg_${id}`, status: 'completed', content: [{ type: 'output_text', text: 'Reading both.' }] },
      { type: 'function_call', id: `fc_${id}_0`, call_id: 'call_a', name: 'read_file', arguments: '{"path":"a"}' },
      { type: 'function_call', id: `fc_${id}_1`, call_id: 'call_b', name: 'read_file', arguments: '{"path":"b"}' },
    ]);
    expect(first.output_text).toBe('Reading both.');
    await openai.responses.create({
      model: 'fake-tools',
      previous_response_id: first.id,
      input: [
        { type: 'function_call_output', call_id: 'call_a', output: 'A' },
        { type: 'function_call_output', call_id: 'call_b', output: 'B' },
      ],
      tools: [READ_FILE],
    });
    expect(lastSent().messages).toEqual([
      { role: 'user', content: 'Read a and b' },
      { role: 'assistant', content: 'Reading both.', tool_calls: fake.toolCalls },
      { role: 'tool', tool_call_id: 'call_a', content: 'A' },
      { role: 'tool', tool_call_id: 'call_b', content: 'B' },
    ]);
  });

  it('takes the whole conversation as input items instead (store: false, as Codex sends it): a call joins the assistant message before it', async () => {
    const { openai } = await vipClient(t.app);
    const response = await openai.responses.create({
      model: 'fake-tools',
      store: false,
      tools: [READ_FILE],
      input: [
        { role: 'user', content: 'Read a and b' },
        { type: 'message', role: 'assistant', id: 'msg_1', status: 'completed', content: [{ type: 'output_text', text: 'Reading both.', annotations: [] }] },
        { type: 'function_call', id: 'fc_1', call_id: 'call_a', name: 'read_file', arguments: '{"path":"a"}', status: 'completed' },
        { type: 'function_call', call_id: 'call_b', name: 'read_file', arguments: '{"path":"b"}' },
        { type: 'function_call_output', call_id: 'call_a', output: 'A' },
        { type: 'function_call_output', call_id: 'call_b', output: [{ type: 'input_text', text: 'B' }] },
        { role: 'user', content: 'Summarize' },
      ],
    });
    expect(response.output_text).toBe(REPLY);
    expect(lastSent().messages).toEqual([
      { role: 'user', content: 'Read a and b' },
      {
        role: 'assistant',
        content: 'Reading both.',
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'read_file', arguments: '{"path":"a"}' } },
          { id: 'call_b', type: 'function', function: { name: 'read_file', arguments: '{"path":"b"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a', content: 'A' },
      { role: 'tool', tool_call_id: 'call_b', content: [{ type: 'text', text: 'B' }] },
      { role: 'user', content: 'Summarize' },
    ]);
  });
});

describe('tool_choice', () => {
  it('auto, required, none and a named function reach the provider; each is echoed as asked', async () => {
    const { openai } = await vipClient(t.app);
    fake.toolCalls = [{ id: 'call_r', type: 'function', function: { name: 'read_file', arguments: '{"path":"x"}' } }];
    const tools = [SHELL, READ_FILE];
    const named = await openai.responses.create({ model: 'fake-tools', input: 'Read x', tools, tool_choice: { type: 'function', name: 'read_file' } });
    expect(lastSent().toolChoice).toEqual({ type: 'function', function: { name: 'read_file' } });
    expect(named).toMatchObject({ tool_choice: { type: 'function', name: 'read_file' }, tools, output: [{ type: 'function_call', name: 'read_file' }] });
    const required = await openai.responses.create({ model: 'fake-tools', input: 'Read x', tools, tool_choice: 'required' });
    expect(lastSent().toolChoice).toBe('required');
    expect(required).toMatchObject({ tool_choice: 'required', output: [{ type: 'function_call' }] });
    const none = await openai.responses.create({ model: 'fake-tools', input: 'Read x', tools, tool_choice: 'none' });
    expect(lastSent().toolChoice).toBe('none');
    expect(none).toMatchObject({ tool_choice: 'none', output_text: REPLY, output: [{ type: 'message' }] });
    const unsaid = await openai.responses.create({ model: 'fake-tools', input: 'Read x', tools });
    expect(lastSent().toolChoice).toBeUndefined();
    expect(unsaid.tool_choice).toBe('auto');
  });
});

describe('text.format', () => {
  it('passes a JSON schema to the provider, and the client parses the answer (responses.parse with zodTextFormat)', async () => {
    const { openai } = await vipClient(t.app);
    fake.reply = '{"city":"Paris","temperature":18}';
    const Weather = z.object({ city: z.string(), temperature: z.number() });
    const parsed = await openai.responses.parse({ model: 'fake-tools', input: 'The weather in Paris as JSON', text: { format: zodTextFormat(Weather, 'weather') } });
    expect(parsed.output_parsed).toEqual({ city: 'Paris', temperature: 18 });
    const schema = { type: 'object', properties: { city: { type: 'string' }, temperature: { type: 'number' } }, required: ['city', 'temperature'] };
    expect(lastSent().responseFormat).toMatchObject({ type: 'json_schema', json_schema: { name: 'weather', strict: true, schema } });
    expect(parsed.text?.format).toMatchObject({ type: 'json_schema', name: 'weather', strict: true, schema });
  });

  it('passes json_object; text is what every model does and is not sent', async () => {
    const { openai } = await vipClient(t.app);
    await openai.responses.create({ model: 'fake-tools', input: 'JSON please', text: { format: { type: 'json_object' } } });
    expect(lastSent().responseFormat).toEqual({ type: 'json_object' });
    const plain = await openai.responses.create({ model: 'fake-text', input: 'hi', text: { format: { type: 'text' } } });
    expect(lastSent().responseFormat).toBeUndefined();
    expect(plain.text).toEqual({ format: { type: 'text' } });
  });
});

describe('finish reasons', () => {
  it('a reply cut at max_output_tokens is incomplete (max_output_tokens), still charged; the SDK still reads its text', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    script.finish = 'length';
    const cut = await openai.responses.create({ model: 'fake-tools', input: 'Tell me everything', max_output_tokens: 5 });
    expect(cut).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      completed_at: null,
      max_output_tokens: 5,
      output: [{ type: 'message', status: 'incomplete', content: [{ type: 'output_text', text: REPLY }] }],
      usage: { output_tokens: 5 },
      error: null,
    });
    expect(cut.output_text).toBe(REPLY);
    expect(await openai.responses.retrieve(cut.id)).toEqual(cut);
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total - 3, held: 0 });
    // The last item is the one that was cut: here a call after the text.
    script.preamble = 'Let me run';
    fake.toolCalls = [LS];
    const cutCall = await openai.responses.create({ model: 'fake-tools', input: 'Run ls', tools: [SHELL], max_output_tokens: 2 });
    expect(cutCall.output.map((item) => [item.type, 'status' in item ? item.status : null])).toEqual([['message', 'completed'], ['function_call', 'incomplete']]);
  });

  it('a reply a content filter stopped is incomplete (content_filter); one that ended of itself is completed', async () => {
    const { openai } = await vipClient(t.app);
    script.finish = 'content_filter';
    expect(await openai.responses.create({ model: 'fake-tools', input: 'x' })).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'content_filter' } });
    script.finish = null;
    expect(await openai.responses.create({ model: 'fake-tools', input: 'x', max_output_tokens: 50 })).toMatchObject({ status: 'completed', incomplete_details: null });
  });
});

describe('refusals: 400 naming the param, before anything is held, counted or sent', () => {
  async function refusal(openai: OpenAI, body: Record<string, unknown>): Promise<InstanceType<typeof OpenAI.BadRequestError>> {
    const error = await openai.responses.create({ model: 'fake-tools', input: 'x', ...body } as OpenAI.Responses.ResponseCreateParamsNonStreaming).catch((e: unknown) => e);
    expect({ body, error }).toEqual({ body, error: expect.any(OpenAI.BadRequestError) });
    return error as InstanceType<typeof OpenAI.BadRequestError>;
  }

  async function nothingHappened(user: { id: number; accessToken: string }, before: { total: number; held: number }): Promise<void> {
    expect(fake.calls).toEqual([]);
    expect(await moneyOf(t.app, user.id)).toEqual(before);
    expect(await t.app.container.db.repo(Generation).countBy({ userId: user.id })).toBe(0);
    const quota = await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${user.accessToken}`);
    expect(quota.headers['x-ratelimit-remaining-hour']).toBe(quota.headers['x-ratelimit-limit-hour']);
  }

  it("OpenAI's built-in tools and custom tools, each named by its type", async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    const builtIn = ['web_search', 'web_search_preview', 'file_search', 'computer_use_preview', 'code_interpreter', 'mcp', 'local_shell', 'shell', 'image_generation'];
    for (const type of builtIn) {
      const error = await refusal(openai, { tools: [SHELL, { type }] });
      expect(error).toMatchObject({ param: 'tools[1].type', message: expect.stringContaining(`the built-in tool ${type} is not offered by this server`) });
    }
    const custom = await refusal(openai, { tools: [{ type: 'custom', name: 'apply_patch', format: { type: 'text' } }] });
    expect(custom).toMatchObject({ param: 'tools[0].type', message: expect.stringContaining('custom (free-form) tools are not supported') });
    await nothingHappened(user, before);
  });

  it('malformed tools, tool choices, formats and call items', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ tools: [{ type: 'function', name: 'has space', parameters: {} }] }, 'tools[0].name'],
      [{ tools: [SHELL, { ...READ_FILE, name: 'shell' }] }, 'tools[1].name'],
      [{ tools: [{ ...SHELL, parameters: 'object' }] }, 'tools[0].parameters'],
      [{ tools: ['shell'] }, 'tools[0]'],
      [{ tools: [{ name: 'shell' }] }, 'tools[0].type'],
      [{ tools: [SHELL], tool_choice: { type: 'function', name: 'missing' } }, 'tool_choice.name'],
      [{ tools: [SHELL], tool_choice: { type: 'web_search_preview' } }, 'tool_choice'],
      [{ tools: [SHELL], tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'function', name: 'shell' }] } }, 'tool_choice'],
      [{ tools: [SHELL], tool_choice: 'sometimes' }, 'tool_choice'],
      [{ tool_choice: 'required' }, 'tool_choice'],
      [{ text: { format: { type: 'json_schema', schema: { type: 'object' } } } }, 'text.format.name'],
      [{ input: [{ type: 'function_call', name: 'shell', arguments: '{}' }] }, 'input[0].call_id'],
      [{ input: [{ type: 'function_call', call_id: 'c', name: 'shell', arguments: { command: ['ls'] } }] }, 'input[0].arguments'],
      [{ input: [{ type: 'function_call', call_id: 'c', arguments: '{}' }] }, 'input[0].name'],
      [{ input: [{ type: 'function_call_output', output: 'x' }] }, 'input[0].call_id'],
      [{ input: [{ type: 'function_call_output', call_id: 'c' }] }, 'input[0].output'],
      [{ input: [{ role: 'user', content: 'x' }, { type: 'function_call', call_id: 'c', name: 'shell', arguments: '{}' }, { type: 'function_call_output', call_id: 'c', output: [{ type: 'input_image', image_url: 'data:image/png;base64,AA==' }] }] }, 'input[2].output[0].type'],
      [{ input: [{ type: 'custom_tool_call', call_id: 'c', name: 'apply_patch', input: '' }] }, 'input[0].type'],
      // Checked by the domain: an output answering no call, a call's name; named as the client sent them.
      [{ input: [{ role: 'user', content: 'x' }, { type: 'function_call_output', call_id: 'call_nowhere', output: 'x' }] }, 'input'],
      [{ input: [{ role: 'user', content: 'x' }, { type: 'function_call', call_id: 'c', name: 'has space', arguments: '{}' }] }, 'input'],
    ];
    for (const [body, param] of cases) {
      const error = await refusal(openai, body);
      expect({ body, param: error.param, type: error.type }).toEqual({ body, param, type: 'invalid_request_error' });
    }
    await nothingHappened(user, before);
  });

  it('a model that declares no tools or response formats: tools, call items and structured formats, plain or streamed', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    const tools = await refusal(openai, { model: 'fake-text', tools: [SHELL] });
    expect(tools).toMatchObject({ param: 'tools', message: expect.stringContaining('fake-text does not support tools') });
    expect(await refusal(openai, { model: 'fake-text', tools: [SHELL], stream: true })).toMatchObject({ param: 'tools' });
    const items = [{ role: 'user', content: 'x' }, { type: 'function_call', call_id: 'c', name: 'shell', arguments: '{}' }, { type: 'function_call_output', call_id: 'c', output: 'ok' }];
    expect(await refusal(openai, { model: 'fake-text', input: items })).toMatchObject({ param: 'input', message: expect.stringContaining('fake-text does not support tools') });
    const format = await refusal(openai, { model: 'fake-text', text: { format: { type: 'json_object' } } });
    expect(format).toMatchObject({ param: 'text.format', message: expect.stringContaining('fake-text does not support response formats') });
    // An empty tools list and tool_choice auto or none ask nothing of a model: accepted anywhere (test/v1-responses.test.ts).
    await nothingHappened(user, before);
  });
});

describe('a response stored before tools were taken', () => {
  it('still reads: it echoes no tools, tool choice auto and a text format', async () => {
    const { openai } = await vipClient(t.app);
    const created = await openai.responses.create({ model: 'fake-tools', input: 'old', tools: [SHELL], tool_choice: 'none' });
    const repo = t.app.container.db.repo(Generation);
    const row = await repo.findOneByOrFail({ id: responseGenerationId(created) });
    const input = JSON.parse(row.input) as { protocol: Record<string, unknown> };
    for (const key of ['tools', 'tool_choice', 'text']) delete input.protocol[key];
    await repo.update({ id: row.id }, { input: JSON.stringify(input) });
    expect(await openai.responses.retrieve(created.id)).toEqual({ ...created, tools: [], tool_choice: 'auto', text: { format: { type: 'text' } } });
  });
});
