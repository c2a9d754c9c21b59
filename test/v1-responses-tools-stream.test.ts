/**
 * Function calls in a streamed response (/v1/responses, `stream: true`) with the official
 * `openai` client against the real app: the events as OpenAI sends them, on the wire (a
 * function_call item added, its arguments in deltas, done, the item done; the message before it
 * when the model says something first; each item closed before the next opens; numbered from 0),
 * as the SDK's stream helper assembles them, a streamed Codex loop, a streamed replay, and a reply
 * cut at max_output_tokens ending in `response.incomplete`.
 */
import path from 'node:path';
import OpenAI from 'openai';
import type { TextRequest } from '../shared/providers/types';
import { useTestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { rawResponseEvents, READ_FILE, responseGenerationId, Script, scriptedAdapter, SHELL } from './helpers/responses';
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
/** The fake streams a call's arguments in two halves. */
const halves = (text: string): string[] => [text.slice(0, Math.ceil(text.length / 2)), text.slice(Math.ceil(text.length / 2))];

const CALL_EVENTS = ['response.output_item.added', 'response.function_call_arguments.delta', 'response.function_call_arguments.delta', 'response.function_call_arguments.done', 'response.output_item.done'];
const MESSAGE_EVENTS = ['response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done'];

describe('on the wire', () => {
  it('a call: the function_call item added, its arguments in deltas, done, the item done, then response.completed; numbered in order', async () => {
    const { user, key } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    fake.toolCalls = [LS];
    const { status, events } = await rawResponseEvents(t.app, key, { model: 'fake-tools', input: 'List the files', tools: [SHELL] });
    expect(status).toBe(200);
    expect(events.map((e) => e.event)).toEqual(['response.created', 'response.in_progress', ...CALL_EVENTS, 'response.completed']);
    for (const [i, { event, data }] of events.entries()) expect(data).toMatchObject({ type: event, sequence_number: i });
    const id = responseGenerationId(events[0]?.data.response as { id: string });
    const item = { id: `fc_${id}_0`, type: 'function_call', call_id: 'call_ls', name: 'shell' };
    const [added, delta1, delta2, done, itemDone, completed] = events.slice(2).map((e) => e.data);
    expect(events[0]?.data.response).toMatchObject({ status: 'in_progress', output: [], tools: [SHELL] });
    expect(added).toMatchObject({ output_index: 0, item: { ...item, status: 'in_progress', arguments: '' } });
    expect([delta1, delta2]).toEqual(halves(LS.function.arguments).map((delta, i) => ({ type: 'response.function_call_arguments.delta', sequence_number: 3 + i, item_id: item.id, output_index: 0, delta })));
    expect(done).toMatchObject({ item_id: item.id, output_index: 0, arguments: LS.function.arguments });
    expect(itemDone).toMatchObject({ output_index: 0, item: { ...item, status: 'completed', arguments: LS.function.arguments } });
    expect(completed?.response).toMatchObject({ status: 'completed', output: [itemDone?.item], usage: { output_tokens: 1 } });
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total - 3, held: 0 });
  });

  it('text then two calls: the message closes before the first call opens, each call before the next', async () => {
    const { key, openai } = await vipClient(t.app);
    script.preamble = 'Reading both.';
    fake.toolCalls = [
      { id: 'call_a', type: 'function', function: { name: 'read_file', arguments: '{"path":"a"}' } },
      { id: 'call_b', type: 'function', function: { name: 'read_file', arguments: '{"path":"b"}' } },
    ];
    const { events } = await rawResponseEvents(t.app, key, { model: 'fake-tools', input: 'Read a and b', tools: [READ_FILE] });
    expect(events.map((e) => e.event)).toEqual(['response.created', 'response.in_progress', ...MESSAGE_EVENTS, ...CALL_EVENTS, ...CALL_EVENTS, 'response.completed']);
    const indexes = events.slice(2, -1).map((e) => [e.event.replace('response.', ''), e.data.output_index]);
    expect(new Set(indexes.slice(0, 6).map(([, index]) => index))).toEqual(new Set([0]));
    expect(new Set(indexes.slice(6, 11).map(([, index]) => index))).toEqual(new Set([1]));
    expect(new Set(indexes.slice(11).map(([, index]) => index))).toEqual(new Set([2]));
    const response = events.at(-1)?.data.response as OpenAI.Responses.Response;
    const doneItems = events.filter((e) => e.event === 'response.output_item.done').map((e) => e.data.item);
    expect(response.output).toEqual(doneItems);
    // A later GET is what the stream ended with.
    const retrieved = await openai.responses.retrieve(response.id);
    expect(retrieved.output).toEqual(response.output);
    expect(retrieved.output.map((item) => item.type)).toEqual(['message', 'function_call', 'function_call']);
  });

  it('a reply cut at max_output_tokens ends in response.incomplete, its item incomplete', async () => {
    const { key, openai } = await vipClient(t.app);
    script.finish = 'length';
    const { events } = await rawResponseEvents(t.app, key, { model: 'fake-tools', input: 'Everything', max_output_tokens: 5 });
    expect(events.at(-1)?.event).toBe('response.incomplete');
    expect(events.map((e) => e.event)).not.toContain('response.completed');
    const itemDone = events.find((e) => e.event === 'response.output_item.done')?.data;
    expect(itemDone).toMatchObject({ item: { type: 'message', status: 'incomplete', content: [{ text: REPLY }] } });
    expect(events.at(-1)?.data.response).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output: [itemDone?.item], usage: { output_tokens: 5 } });
    // The SDK's helper resolves with it, as OpenAI's clients do for an incomplete response.
    const final = await openai.responses.stream({ model: 'fake-tools', input: 'Everything', max_output_tokens: 5 }).finalResponse();
    expect(final).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output_text: REPLY });
  });

  it('a replay (Idempotency-Key) of a streamed call is its whole sequence again, the arguments in one delta, charged once', async () => {
    const { user, key } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    script.preamble = 'Running.';
    fake.toolCalls = [LS];
    const body = { model: 'fake-tools', input: 'List the files', tools: [SHELL] };
    const first = await rawResponseEvents(t.app, key, body, { 'idempotency-key': 'tools-replay-1' });
    const again = await rawResponseEvents(t.app, key, body, { 'idempotency-key': 'tools-replay-1' });
    const oneDelta = [...CALL_EVENTS.slice(0, 2), ...CALL_EVENTS.slice(3)];
    expect(again.events.map((e) => e.event)).toEqual(['response.created', 'response.in_progress', ...MESSAGE_EVENTS, ...oneDelta, 'response.completed']);
    expect(again.events.at(-1)?.data.response).toEqual(first.events.at(-1)?.data.response);
    expect(fake.calls).toHaveLength(1);
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total - 3, held: 0 });
  });
});

describe("the SDK's stream helper", () => {
  it("assembles the call (argument deltas with snapshots) and runs Codex's loop streamed, continued by previous_response_id", async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    script.preamble = 'Let me look.';
    fake.toolCalls = [LS];
    const stream = openai.responses.stream({ model: 'fake-tools', instructions: 'You are a coding agent.', input: 'List the files', tools: [SHELL], store: true });
    const snapshots: string[] = [];
    stream.on('response.function_call_arguments.delta', (event) => snapshots.push(event.snapshot));
    const added: string[] = [];
    stream.on('response.output_item.added', (event) => added.push(event.item.type));
    const first = await stream.finalResponse();
    expect(added).toEqual(['message', 'function_call']);
    expect(snapshots).toEqual([halves(LS.function.arguments)[0], LS.function.arguments]);
    expect(first).toMatchObject({ status: 'completed', output_text: 'Let me look.', output: [{ type: 'message' }, { type: 'function_call', call_id: 'call_ls', name: 'shell', arguments: LS.function.arguments, status: 'completed' }] });

    const second = await openai.responses
      .stream({ model: 'fake-tools', instructions: 'You are a coding agent.', previous_response_id: first.id, input: [{ type: 'function_call_output', call_id: 'call_ls', output: 'README.md' }], tools: [SHELL] })
      .finalResponse();
    expect(second).toMatchObject({ status: 'completed', output_text: REPLY, previous_response_id: first.id });
    expect(lastSent().messages).toEqual([
      { role: 'system', content: 'You are a coding agent.' },
      { role: 'user', content: 'List the files' },
      { role: 'assistant', content: 'Let me look.', tool_calls: [LS] },
      { role: 'tool', tool_call_id: 'call_ls', content: 'README.md' },
    ]);
    expect(fake.calls.map((c) => c.capability)).toEqual(['text.stream', 'text.stream']);
    // Billed like every stream: once each, at the end.
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total - 6, held: 0 });
  });
});
