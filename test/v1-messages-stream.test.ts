/**
 * Streamed Messages (POST /v1/messages with `stream: true`): Anthropic's named events in their
 * order, the official client's `.stream()` assembling the final message from them, a failure
 * after the stream began as Anthropic's `error` event, a client that goes away not charged, a
 * replay streamed whole, and billing the same as a stream through /api/v2.
 */
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { Generation } from '../shared/db/entities';
import type { ProviderAdapter, TextChunk, TextProvider } from '../shared/providers/types';
import { ProviderError } from '../shared/providers/types';
import { useTestApp } from './helpers/app';
import { anthropicBaseURL, anthropicClient, balanceOf, parseSse } from './helpers/anthropic-client';
import { FakeProvider } from './helpers/fake-provider';

const fake = new FakeProvider('fake');
/** After how many words the fake's stream breaks off (an upstream lost mid-answer); null: never. */
let breakAfterWords: number | null = null;

async function* breakingOff(chunks: AsyncIterable<TextChunk>, words: number): AsyncGenerator<TextChunk> {
  let sent = 0;
  for await (const chunk of chunks) {
    if ('delta' in chunk && sent++ === words) throw new ProviderError('unavailable', 'the upstream went away mid-answer');
    yield chunk;
  }
}

/** The fake provider, whose text stream can break off part way. */
function fakeThatMayBreakOff(): ProviderAdapter {
  const adapter = fake.adapter();
  const text = adapter.text as TextProvider;
  return {
    ...adapter,
    text: {
      complete: (request, options) => text.complete(request, options),
      stream: (request, options) => (breakAfterWords === null ? text.stream(request, options) : breakingOff(text.stream(request, options), breakAfterWords)),
    },
  };
}

const t = useTestApp({ CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json'), CONTENT_POLICY_BLOCKLIST: 'forbidden' }, { providers: [fakeThatMayBreakOff()] });
beforeEach(() => {
  fake.reset();
  breakAfterWords = null;
});

const hello = [{ role: 'user' as const, content: 'Hello?' }];
type APIError = InstanceType<typeof Anthropic.APIError>;

async function latestGeneration(userId: number): Promise<Generation> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const row = await t.app.container.db.repo(Generation).findOne({ where: { userId }, order: { id: 'DESC' } });
    if ((row && row.status !== 'pending') || Date.now() > deadline) {
      if (!row) throw new Error('no generation');
      return row;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('streamed messages', () => {
  it("sends Anthropic's events in Anthropic's order", async () => {
    const { key } = await anthropicClient(t.app);
    const res = await fetch(`${anthropicBaseURL(t.app)}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'fake-text', max_tokens: 100, messages: hello, stream: true }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = parseSse(await res.text());
    expect(events.map((e) => e.event)).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      ...Array(5).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    // Each event's data names itself, as Anthropic's do.
    for (const { event, data } of events) expect(data).toMatchObject({ type: event });
    const id = (events[0]?.data as { message: { id: string } }).message.id;
    expect(events[0]?.data).toMatchObject({ message: { id: expect.stringMatching(/^msg_\d+$/), type: 'message', role: 'assistant', model: 'fake-text', content: [], stop_reason: null } });
    expect(events[1]?.data).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    expect(events.slice(3, 8).map((e) => (e.data as { delta: { type: string; text: string } }).delta)).toEqual(
      ['Hello', ' from', ' the', ' fake', ' model'].map((text) => ({ type: 'text_delta', text })),
    );
    expect(events[9]?.data).toEqual({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { input_tokens: 3, output_tokens: 5 } });
    expect(id).toMatch(/^msg_/);
  });

  it("assembles the final message with the client's .stream() helpers, billed once at the end like a stream through /api/v2", async () => {
    const { user, anthropic } = await anthropicClient(t.app);
    const before = await balanceOf(t.app, user.id);
    const texts: string[] = [];
    const stream = anthropic.messages.stream({ model: 'fake-text', max_tokens: 100, system: 'Be brief.', messages: hello });
    stream.on('text', (delta) => texts.push(delta));
    const message = await stream.finalMessage();
    expect(texts.join('')).toBe('Hello from the fake model');
    expect(message).toMatchObject({
      id: expect.stringMatching(/^msg_\d+$/),
      role: 'assistant',
      content: [{ type: 'text', text: 'Hello from the fake model' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 3, output_tokens: 5 },
    });
    expect(fake.calls.at(-1)).toMatchObject({ capability: 'text.stream', request: { maxTokens: 100, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello?' }] } });
    expect(await balanceOf(t.app, user.id)).toEqual({ total: before.total - 2, held: 0 });

    // The same stream through /api/v2 costs the same.
    const direct = await t.app.http().post('/api/v2/generate').set('authorization', `Bearer ${user.accessToken}`).send({ model: 'fake-text', system: 'Be brief.', messages: hello, max_tokens: 100, stream: true });
    expect(direct.status).toBe(200);
    expect(await balanceOf(t.app, user.id)).toEqual({ total: before.total - 4, held: 0 });
    const rows = await t.app.container.db.repo(Generation).find({ where: { userId: user.id }, order: { id: 'ASC' } });
    expect(rows.map((r) => [r.status, r.tokensSpent, r.resultText, r.source])).toEqual([
      ['completed', 2, 'Hello from the fake model', 'api'],
      ['completed', 2, 'Hello from the fake model', 'api'],
    ]);
  });

  it('iterates the raw events with create({stream: true}), and stops with max_tokens when the reply used them all', async () => {
    const { anthropic } = await anthropicClient(t.app);
    const stream = await anthropic.messages.create({ model: 'fake-text', max_tokens: 5, messages: hello, stream: true });
    const types: string[] = [];
    let stop: string | null = null;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'message_delta') stop = event.delta.stop_reason;
    }
    // The client hides `ping`.
    expect(types).toEqual(['message_start', 'content_block_start', ...Array(5).fill('content_block_delta'), 'content_block_stop', 'message_delta', 'message_stop']);
    expect(stop).toBe('max_tokens');
  });

  it("reports a failure after the stream began as Anthropic's error event, which the client raises; nothing is charged", async () => {
    const { user, anthropic } = await anthropicClient(t.app);
    const before = await balanceOf(t.app, user.id);
    breakAfterWords = 2;
    const texts: string[] = [];
    const stream = anthropic.messages.stream({ model: 'fake-text', max_tokens: 100, messages: hello });
    stream.on('text', (delta) => texts.push(delta));
    const error = await stream.finalMessage().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect(error).toMatchObject({ type: 'overloaded_error', error: { type: 'error', error: { type: 'overloaded_error' } } });
    expect((error as APIError).apiMessage).toContain('went away mid-answer');
    expect(texts.join('')).toBe('Hello from');
    expect(await latestGeneration(user.id)).toMatchObject({ status: 'failed', tokensSpent: 0 });
    expect(await balanceOf(t.app, user.id)).toEqual({ total: before.total, held: 0 });
  });

  it('does not charge a client that goes away mid-stream, and stops the provider', async () => {
    const { user, anthropic } = await anthropicClient(t.app);
    // A reply the fake takes more than 5 s to stream whole.
    fake.reply = Array.from({ length: 1000 }, (_, i) => `w${i}`).join(' ');
    const before = await balanceOf(t.app, user.id);
    const stream = anthropic.messages.stream({ model: 'fake-text', max_tokens: 2000, messages: [{ role: 'user', content: 'long' }] });
    let deltas = 0;
    let abortedAt = 0;
    stream.on('text', () => {
      if (++deltas !== 3) return;
      abortedAt = Date.now();
      stream.abort();
    });
    await stream.done().catch(() => undefined);
    expect(deltas).toBe(3);
    const row = await latestGeneration(user.id);
    expect(row).toMatchObject({ status: 'failed', tokensSpent: 0 });
    // Ended by the disconnect, not by the provider running to its end.
    expect(Date.now() - abortedAt).toBeLessThan(2500);
    expect(row.resultMetadata).toContain('"failure"');
    expect(await balanceOf(t.app, user.id)).toEqual({ total: before.total, held: 0 });
  });

  it('refuses before streaming what is refused at once (the content policy, a model that does not stream): HTTP errors, uncharged', async () => {
    const { user, anthropic } = await anthropicClient(t.app);
    const before = await balanceOf(t.app, user.id);
    const blocked = await anthropic.messages.stream({ model: 'fake-text', max_tokens: 10, messages: [{ role: 'user', content: 'something forbidden' }] }).finalMessage().catch((e: unknown) => e);
    expect(blocked).toBeInstanceOf(Anthropic.BadRequestError);
    expect((blocked as APIError).apiMessage).toBe('Content policy violation');
    const notStreaming = await anthropic.messages.stream({ model: 'fake-premium', max_tokens: 10, messages: hello }).finalMessage().catch((e: unknown) => e);
    expect(notStreaming).toBeInstanceOf(Anthropic.BadRequestError);
    expect((notStreaming as APIError).apiMessage).toBe('stream: this model does not stream');
    expect(fake.calls).toEqual([]);
    expect(await balanceOf(t.app, user.id)).toEqual(before);
  });

  it('streams a replay (same Idempotency-Key) whole from the first run, charged once', async () => {
    const { user, anthropic } = await anthropicClient(t.app);
    const before = await balanceOf(t.app, user.id);
    const body = { model: 'fake-text', max_tokens: 100, messages: hello };
    const headers = { 'Idempotency-Key': 'stream-replay-1' };
    const first = await anthropic.messages.stream(body, { headers }).finalMessage();
    const replayed = anthropic.messages.stream(body, { headers });
    const texts: string[] = [];
    replayed.on('text', (delta) => texts.push(delta));
    expect(await replayed.finalMessage()).toEqual(first);
    expect(texts).toEqual(['Hello from the fake model']);
    expect(fake.calls).toHaveLength(1);
    expect(await balanceOf(t.app, user.id)).toEqual({ total: before.total - 2, held: 0 });
  });
});
