/**
 * Conversations over the Responses API with the official `openai` client: `previous_response_id`
 * sends the provider the whole conversation so far (the earlier turns' input and output, not their
 * instructions), from the caller's own stored, completed responses only; `store: false` responses
 * are charged and in history like any generation but can be neither retrieved nor continued.
 */
import path from 'node:path';
import OpenAI from 'openai';
import { Generation } from '../shared/db/entities';
import { useTestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { eventually, moneyOf, vipClient } from './helpers/v1-clients';

const fake = new FakeProvider('fake');
const t = useTestApp({ CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json') }, { providers: [fake.adapter()] });
beforeEach(() => fake.reset());

const lastMessages = () => (fake.calls.at(-1)?.request as { messages: unknown[] }).messages;

async function notFoundAs(openai: OpenAI, previous: string): Promise<unknown> {
  return openai.responses.create({ model: 'fake-text', input: 'go on', previous_response_id: previous }).catch((e: unknown) => e);
}

describe('previous_response_id', () => {
  it('chains three responses: the last request carries the whole conversation to the provider', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    fake.reply = 'first answer';
    const first = await openai.responses.create({ model: 'fake-text', input: 'one', instructions: 'Old instructions.' });
    fake.reply = 'second answer';
    // A streamed turn continues (and is continued) like any other.
    const second = await openai.responses
      .stream({ model: 'fake-text', previous_response_id: first.id, input: [{ role: 'user', content: 'two' }], instructions: 'Newer instructions.' })
      .finalResponse();
    fake.reply = 'third answer';
    const third = await openai.responses.create({ model: 'fake-text', previous_response_id: second.id, input: 'three', instructions: 'Be brief.' });

    // Each turn's own instructions go first; earlier ones are not carried over (as at OpenAI).
    expect(lastMessages()).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'one' },
      { role: 'assistant', content: 'first answer' },
      { role: 'user', content: 'two' },
      { role: 'assistant', content: 'second answer' },
      { role: 'user', content: 'three' },
    ]);
    expect(third).toMatchObject({ output_text: 'third answer', previous_response_id: second.id, instructions: 'Be brief.' });
    expect(await openai.responses.retrieve(second.id)).toMatchObject({ previous_response_id: first.id, output_text: 'second answer' });
    // Three generations, each charged its price.
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total - 6, held: 0 });
  });

  it('keeps system messages that were part of an earlier input (only instructions are dropped)', async () => {
    const { openai } = await vipClient(t.app);
    const first = await openai.responses.create({ model: 'fake-text', input: [{ role: 'developer', content: 'Speak French.' }, { role: 'user', content: 'one' }] });
    await openai.responses.create({ model: 'fake-text', previous_response_id: first.id, input: 'two' });
    expect(lastMessages()).toEqual([
      { role: 'system', content: 'Speak French.' },
      { role: 'user', content: 'one' },
      { role: 'assistant', content: 'Hello from the fake model' },
      { role: 'user', content: 'two' },
    ]);
  });

  it('continues a conversation too large to keep inline with its generation', async () => {
    const { openai } = await vipClient(t.app);
    // Above the 60 KB a row keeps inline: the input is kept in storage and read back for the chain.
    const long = 'word '.repeat(14_000);
    const first = await openai.responses.create({ model: 'fake-vision', input: long });
    expect((await t.app.container.db.repo(Generation).findOneByOrFail({ id: Number(first.id.replace('resp_', '')) })).input).toMatch(/^\{"\$ref":/);
    await openai.responses.create({ model: 'fake-vision', previous_response_id: first.id, input: 'and?' });
    expect(lastMessages()).toEqual([
      { role: 'user', content: long },
      { role: 'assistant', content: 'Hello from the fake model' },
      { role: 'user', content: 'and?' },
    ]);
  });

  it("answers another user's response id exactly like an unknown one: 404 previous_response_not_found, nothing sent or charged", async () => {
    const owner = await vipClient(t.app);
    const mine = await owner.openai.responses.create({ model: 'fake-text', input: 'private' });
    const other = await vipClient(t.app);
    const before = await moneyOf(t.app, other.user.id);
    fake.reset();
    const theirs = await notFoundAs(other.openai, mine.id);
    const nobodys = await notFoundAs(other.openai, 'resp_2147000000');
    for (const error of [theirs, nobodys]) {
      expect(error).toBeInstanceOf(OpenAI.NotFoundError);
      expect(error).toMatchObject({ status: 404, code: 'previous_response_not_found', param: 'previous_response_id', type: 'invalid_request_error' });
    }
    // Word for word the same, but for the id the caller sent.
    const body = (e: unknown, id: string) => JSON.stringify((e as { error: unknown }).error).replaceAll(id, '<id>');
    expect(body(theirs, mine.id)).toBe(body(nobodys, 'resp_2147000000'));
    expect(fake.calls).toEqual([]);
    expect(await moneyOf(t.app, other.user.id)).toEqual(before);
    expect(await t.app.container.db.repo(Generation).countBy({ userId: other.user.id })).toBe(0);
    // Nor can they read it.
    await expect(other.openai.responses.retrieve(mine.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect(await owner.openai.responses.retrieve(mine.id)).toMatchObject({ id: mine.id, output_text: 'Hello from the fake model' });
  });

  it('continues only responses: not a chat completion, a deleted response or a malformed id (404)', async () => {
    const { user, openai } = await vipClient(t.app);
    const chat = await openai.chat.completions.create({ model: 'fake-text', messages: [{ role: 'user', content: 'hi' }] });
    const deleted = await openai.responses.create({ model: 'fake-text', input: 'forget me' });
    const remove = await t.app.http().delete(`/api/v2/user/history/${deleted.id.replace('resp_', '')}`).set('authorization', `Bearer ${user.accessToken}`);
    expect(remove.status).toBe(204);
    for (const previous of [`resp_${chat.id.replace('chatcmpl-', '')}`, deleted.id, chat.id, 'resp_', 'abc']) {
      expect({ previous, error: await notFoundAs(openai, previous) }).toMatchObject({ previous, error: { status: 404, code: 'previous_response_not_found' } });
    }
    await expect(openai.responses.retrieve(deleted.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('refuses to continue a response that failed or is still in progress (400)', async () => {
    const { user, openai } = await vipClient(t.app);
    fake.next({ kind: 'refuse', message: 'no' });
    await expect(openai.responses.create({ model: 'fake-text', input: 'x' })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    const failed = await t.app.container.db.repo(Generation).findOneOrFail({ where: { userId: user.id }, order: { id: 'DESC' } });
    expect(await notFoundAs(openai, `resp_${failed.id}`)).toMatchObject({ status: 400, param: 'previous_response_id' });

    fake.next({ kind: 'hang' });
    const controller = new AbortController();
    const stream = await openai.responses.create({ model: 'fake-text', input: 'slow', stream: true }, { signal: controller.signal });
    let pendingId = '';
    try {
      for await (const event of stream) {
        if (event.type !== 'response.created') continue;
        pendingId = event.response.id;
        expect(await notFoundAs(openai, pendingId)).toMatchObject({ status: 400, param: 'previous_response_id', message: expect.stringContaining('in progress') });
        controller.abort();
      }
    } catch {
      // Aborted on purpose.
    }
    await eventually(() => t.app.container.db.repo(Generation).findOneByOrFail({ id: Number(pendingId.replace('resp_', '')) }), (g) => g.status !== 'pending');
  });
});

describe('store: false', () => {
  it('is charged and in history like any generation, but neither retrievable nor continuable (404)', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    const response = await openai.responses.create({ model: 'fake-text', input: 'ephemeral', store: false });
    expect(response).toMatchObject({ store: false, status: 'completed', output_text: 'Hello from the fake model' });
    await expect(openai.responses.retrieve(response.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect(await notFoundAs(openai, response.id)).toMatchObject({ status: 404, code: 'previous_response_not_found' });
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total - 2, held: 0 });
    const history = await t.app.http().get('/api/v2/user/history').set('authorization', `Bearer ${user.accessToken}`);
    expect(history.body.items[0]).toMatchObject({ id: Number(response.id.replace('resp_', '')), status: 'completed', tokens_spent: 2 });
    // A stored one of the same account continues fine (the refusal is the flag, not the account).
    const stored = await openai.responses.create({ model: 'fake-text', input: 'kept' });
    await expect(openai.responses.create({ model: 'fake-text', previous_response_id: stored.id, input: 'more' })).resolves.toMatchObject({ previous_response_id: stored.id });
  });
});
