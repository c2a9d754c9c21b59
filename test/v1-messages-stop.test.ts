/**
 * `stop_sequences` through POST /v1/messages with the official `@anthropic-ai/sdk`, over the fake
 * provider (which, like the built-in demo model, says which sequence ended its answer): passed to
 * the provider, the answer cut before the first one, `stop_reason: "stop_sequence"` with the
 * sequence that matched, plain, streamed and replayed, kept with the generation; refused with a
 * 400 naming `stop_sequences` when the domain would not take them. Over an OpenAI-compatible
 * upstream (which may not say): v1-messages-upstream-tools.test.ts; the demo model:
 * v1-messages-local.test.ts.
 */
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { Generation } from '../shared/db/entities';
import { useTestApp } from './helpers/app';
import { anthropicBaseURL, anthropicClient, balanceOf, parseSse } from './helpers/anthropic-client';
import { generationIdOf, textRequests } from './helpers/anthropic-tools';
import { FakeProvider } from './helpers/fake-provider';

const fake = new FakeProvider('fake');
const t = useTestApp({ CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json') }, { providers: [fake.adapter()] });
beforeEach(() => fake.reset());

type APIError = InstanceType<typeof Anthropic.APIError>;
const hello: Anthropic.MessageParam[] = [{ role: 'user', content: 'Hello?' }];

describe('stop_sequences', () => {
  it('cut the answer before the first that appears and report it: stop_reason stop_sequence, kept with the generation', async () => {
    const { user, anthropic } = await anthropicClient(t.app);
    const message = await anthropic.messages.create({ model: 'fake-text', max_tokens: 100, messages: hello, stop_sequences: [' model', ' fake', 'never'] });
    expect(message).toMatchObject({ content: [{ type: 'text', text: 'Hello from the' }], stop_reason: 'stop_sequence', stop_sequence: ' fake' });
    expect(textRequests(fake)[0]?.stop).toEqual([' model', ' fake', 'never']);
    const polled = await t.app.http().get(`/api/v2/generate/gen_${generationIdOf(message)}`).set('authorization', `Bearer ${user.accessToken}`);
    expect(polled.body.result_metadata).toEqual({ finish_reason: 'stop', stop_sequence: ' fake' });

    const unmatched = await anthropic.messages.create({ model: 'fake-text', max_tokens: 100, messages: hello, stop_sequences: ['never'] });
    expect(unmatched).toMatchObject({ content: [{ type: 'text', text: 'Hello from the fake model' }], stop_reason: 'end_turn', stop_sequence: null });
  });

  it("are reported in the stream's message_delta, which the SDK's .stream() puts on the final message; a replay streamed whole says the same", async () => {
    const { user, key, anthropic } = await anthropicClient(t.app);
    const res = await fetch(`${anthropicBaseURL(t.app)}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'fake-text', max_tokens: 100, messages: hello, stream: true, stop_sequences: [' the'] }),
    });
    const events = parseSse(await res.text());
    expect(events.find((e) => e.event === 'message_delta')?.data).toEqual({ type: 'message_delta', delta: { stop_reason: 'stop_sequence', stop_sequence: ' the' }, usage: { input_tokens: 3, output_tokens: 2 } });

    const before = await balanceOf(t.app, user.id);
    const body = { model: 'fake-text', max_tokens: 100, messages: hello, stop_sequences: [' from'] };
    const headers = { 'Idempotency-Key': 'stop-replay' };
    const streamed = await anthropic.messages.stream(body, { headers }).finalMessage();
    expect(streamed).toMatchObject({ content: [{ type: 'text', text: 'Hello' }], stop_reason: 'stop_sequence', stop_sequence: ' from' });
    expect(await anthropic.messages.stream(body, { headers }).finalMessage()).toEqual(streamed);
    expect(await balanceOf(t.app, user.id)).toEqual({ total: before.total - 2, held: 0 });
  });

  const refusals: Array<[string, unknown, string]> = [
    ['more than 4', ['a', 'b', 'c', 'd', 'e'], 'stop_sequences: must be at most 4 sequences'],
    ['an empty one', ['END', ''], 'stop_sequences.1: must not be empty'],
    ['not strings', [7], 'stop_sequences.0: must be a string'],
  ];
  it.each(refusals)('%s: a 400 naming stop_sequences, before anything is held or sent', async (_name, stop_sequences, message) => {
    const { user, anthropic } = await anthropicClient(t.app);
    const before = await balanceOf(t.app, user.id);
    const error = await anthropic.messages.create({ model: 'fake-text', max_tokens: 100, messages: hello, stop_sequences } as Anthropic.MessageCreateParamsNonStreaming).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect((error as APIError).apiMessage).toContain(message);
    expect(fake.calls).toEqual([]);
    expect(await t.app.container.db.repo(Generation).countBy({ userId: user.id })).toBe(0);
    expect(await balanceOf(t.app, user.id)).toEqual(before);
  });
});
