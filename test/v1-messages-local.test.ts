/**
 * POST /v1/messages over the shipped catalog's built-in demo model (demo-text needs no upstream),
 * driven by the official `@anthropic-ai/sdk`: the same text, charge and history row as the same
 * request through /api/v2 (the demo is deterministic), plain and streamed; max_tokens and
 * stop_sequences honoured by a real engine (which says which sequence stopped it); the owner's
 * webhook told of the generation; both clients' model lists.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startTestApp, TestApp } from './helpers/app';
import { anthropicBaseURL, anthropicClient, balanceOf } from './helpers/anthropic-client';

let app: TestApp;
let receiver: http.Server;
const deliveries: string[] = [];

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      deliveries.push(body);
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()));
  // The shipped catalog; the worker delivers webhooks.
  app = await startTestApp({ URL_FETCH_ALLOW: `127.0.0.1:${(receiver.address() as AddressInfo).port}` }, { worker: true });
});
afterAll(async () => {
  await app.close();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});

const conversation = {
  system: 'You are a sailor.',
  messages: [
    { role: 'user' as const, content: 'Tell me about the sea.' },
    { role: 'assistant' as const, content: 'The sea is wide.' },
    { role: 'user' as const, content: 'And the waves at night?' },
  ],
};

function words(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

async function waitFor<T>(check: () => T | undefined, timeoutMs = 5000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() - started > timeoutMs) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

it('answers with the same text, charge and history row as the same request through /api/v2, plain and streamed', async () => {
  const { user, anthropic } = await anthropicClient(app);
  const before = await balanceOf(app, user.id);
  const message = await anthropic.messages.create({ model: 'demo-text', max_tokens: 80, ...conversation });
  const text = message.content[0]?.type === 'text' ? message.content[0].text : '';
  expect(words(text)).toBeGreaterThan(5);
  expect(message.usage).toMatchObject({ input_tokens: words(`${conversation.system} ${conversation.messages.map((m) => m.content).join(' ')}`), output_tokens: words(text) });
  expect(await balanceOf(app, user.id)).toEqual({ total: before.total - 1, held: 0 });

  const direct = await app.http().post('/api/v2/generate').set('authorization', `Bearer ${user.accessToken}`).send({ model: 'demo-text', max_tokens: 80, ...conversation });
  expect(direct.body).toMatchObject({ content: text, tokens_used: 1 });

  const streamed = await anthropic.messages.stream({ model: 'demo-text', max_tokens: 80, ...conversation }).finalMessage();
  expect(streamed.content).toEqual(message.content);
  expect(streamed.usage).toMatchObject({ input_tokens: message.usage.input_tokens, output_tokens: message.usage.output_tokens });
  expect(await balanceOf(app, user.id)).toEqual({ total: before.total - 3, held: 0 });

  const history = await app.http().get('/api/v2/user/history').set('authorization', `Bearer ${user.accessToken}`);
  const rows = (history.body.items as Array<Record<string, unknown>>).map(({ id: _id, created_at: _created, ...rest }) => rest);
  expect(rows).toHaveLength(3);
  expect(rows[1]).toEqual(rows[0]);
  expect(rows[2]).toEqual(rows[0]);
  expect(rows[0]).toMatchObject({ model_slug: 'demo-text', status: 'completed', tokens_spent: 1, prompt: 'And the waves at night?', result_text: text });
});

it('honours max_tokens: the demo writes no more words than it allows, and says when it was cut there', async () => {
  const { anthropic } = await anthropicClient(app);
  const short = await anthropic.messages.create({ model: 'demo-text', max_tokens: 3, ...conversation });
  const shortText = short.content[0]?.type === 'text' ? short.content[0].text : '';
  expect(words(shortText)).toBeLessThanOrEqual(3);
  expect(short).toMatchObject({ stop_reason: 'max_tokens', usage: { output_tokens: 3 } });
  // Without a tight limit it ends on its own (the demo writes at most 120 words).
  const long = await anthropic.messages.create({ model: 'demo-text', max_tokens: 500, ...conversation });
  expect(long.stop_reason).toBe('end_turn');
  expect(long.usage.output_tokens).toBeLessThan(500);
});

it('honours stop_sequences: the demo ends before the first that appears and says which, plain and streamed; it refuses tools', async () => {
  const { anthropic } = await anthropicClient(app);
  // The demo answers the same conversation the same way, so its whole answer shows where a stop must cut.
  const whole = await anthropic.messages.create({ model: 'demo-text', max_tokens: 500, ...conversation });
  const text = whole.content[0]?.type === 'text' ? whole.content[0].text : '';
  const parts = text.split(' ');
  const stop = ` ${parts[6]} ${parts[7]}`;
  const cut = await anthropic.messages.create({ model: 'demo-text', max_tokens: 500, ...conversation, stop_sequences: ['never in it', stop] });
  expect(cut).toMatchObject({ content: [{ type: 'text', text: text.slice(0, text.indexOf(stop)) }], stop_reason: 'stop_sequence', stop_sequence: stop });
  const streamed = await anthropic.messages.stream({ model: 'demo-text', max_tokens: 500, ...conversation, stop_sequences: [stop] }).finalMessage();
  expect(streamed).toMatchObject({ content: cut.content, stop_reason: 'stop_sequence', stop_sequence: stop });
  const tools = await anthropic.messages
    .create({ model: 'demo-text', max_tokens: 50, ...conversation, tools: [{ name: 'get_weather', input_schema: { type: 'object' } }] })
    .catch((e: unknown) => e);
  expect(tools).toBeInstanceOf(Anthropic.BadRequestError);
  expect(tools).toMatchObject({ error: { error: { message: 'tools: demo-text does not support tools' } } });
});

it("tells the owner's webhook of the generation, as any other", async () => {
  const { user, anthropic } = await anthropicClient(app);
  const hook = await app.http().post('/api/v2/webhooks').set('authorization', `Bearer ${user.accessToken}`).send({ url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/events` });
  expect(hook.status).toBe(201);
  const message = await anthropic.messages.create({ model: 'demo-text', max_tokens: 20, messages: [{ role: 'user', content: 'Hello?' }] });
  const id = Number(message.id.replace('msg_', ''));
  const delivery = await waitFor(() => deliveries.find((body) => body.includes(`"generation_id":${id}`)));
  expect(JSON.parse(delivery)).toMatchObject({ event: 'generation.completed', generation_id: id, status: 'completed', model_slug: 'demo-text', tokens_spent: 1 });
});

it("answers both clients' models.list() on GET /v1/models, each in its own shape", async () => {
  const { key, anthropic } = await anthropicClient(app);
  const anthropicModels: Anthropic.ModelInfo[] = [];
  for await (const model of anthropic.models.list()) anthropicModels.push(model);
  expect(anthropicModels).toContainEqual({ type: 'model', id: 'demo-text', display_name: 'Demo text (built in)', created_at: '1970-01-01T00:00:00.000Z', max_input_tokens: 8192 });
  expect(anthropicModels.map((m) => m.id)).not.toContain('demo-image');

  const openai = new OpenAI({ apiKey: key, baseURL: `${anthropicBaseURL(app)}/v1`, maxRetries: 0 });
  const openaiModels: OpenAI.Model[] = [];
  for await (const model of openai.models.list()) openaiModels.push(model);
  expect(openaiModels).toContainEqual(expect.objectContaining({ id: 'demo-text', object: 'model' }));
  expect(openaiModels).toContainEqual(expect.objectContaining({ id: 'demo-image', object: 'model' }));
});
