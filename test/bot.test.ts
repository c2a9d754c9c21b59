/**
 * The Telegram bot end to end: the bot (long polling), the API and the worker run for real against
 * a fake Bot API server and a fake provider.
 */
import path from 'node:path';
import { startBot } from '../bot/run';
import { BotDelivery, Generation, Identity, LedgerEntry, User } from '../shared/db/entities';
import type { Stoppable } from '../shared/lifecycle';
import { ChatStates, createKeyValueStore } from '../shared/telegram/state';
import { startTestApp, TestApp } from './helpers/app';
import { telegramCharges, telegramGenerations, telegramUser } from './helpers/telegram-accounts';
import { downProvider, FakeProvider } from './helpers/fake-provider';
import { BOT_USER, FakeTelegram, RecordedCall, TgUser } from './helpers/fake-telegram';

const fake = new FakeProvider('fake');
const tg = new FakeTelegram();
// These tests read replies streamed by editing the placeholder, as on a Bot API server older than
// 9.5 (no sendMessageDraft); drafts are tested in bot-progress.test.ts.
tg.supportsDrafts = false;
let app: TestApp;
let bot: Stoppable;

beforeAll(async () => {
  await tg.start();
  app = await startTestApp(
    { CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json'), TELEGRAM_BOT_TOKEN: '123456:TEST-token', TELEGRAM_API_ROOT: tg.url },
    { providers: [fake.adapter(), downProvider('down')], worker: true },
  );
  bot = await startBot(app.container);
});

afterAll(async () => {
  await bot?.stop();
  await app?.close();
  await tg.stop();
});

beforeEach(() => fake.reset());

let nextId = 5000;
function person(language_code = 'en', first_name = 'Ann'): TgUser {
  const id = nextId++;
  return { id, is_bot: false, first_name, username: `user${id}`, language_code };
}

const userOf = (telegramId: number): Promise<User> => telegramUser(app, telegramId);
const generationsOf = (telegramId: number): Promise<Generation[]> => telegramGenerations(app, telegramId);
const charges = (telegramId: number): Promise<LedgerEntry[]> => telegramCharges(app, telegramId);

function lastMessage(chatId: number, method = 'sendMessage'): Promise<RecordedCall> {
  return tg.waitFor(() => tg.callsOf(method, chatId).at(-1));
}

async function waitForText(chatId: number, pattern: RegExp): Promise<RecordedCall> {
  return tg.waitFor(() => tg.calls.find((c) => Number(c.params.chat_id) === chatId && pattern.test(String(c.params.text ?? ''))));
}

async function waitDelivery(generationId: number, timeoutMs = 10_000): Promise<BotDelivery> {
  const started = Date.now();
  for (;;) {
    const row = await app.container.db.repo(BotDelivery).findOneBy({ generationId });
    if (row && row.state !== 'pending' && row.state !== 'delivering') return row;
    if (Date.now() - started > timeoutMs) throw new Error(`delivery of ${generationId} did not end`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function chatTurnDone(telegramId: number, count = 1): Promise<Generation> {
  const started = Date.now();
  for (;;) {
    const rows = await app.container.db.repo(Generation).find({ order: { id: 'ASC' } });
    const user = await userOf(telegramId).catch(() => null);
    const mine = user ? rows.filter((g) => g.userId === user.id) : [];
    if (mine.length >= count) {
      const last = mine[count - 1] as Generation;
      const row = await waitDelivery(last.id);
      expect(row.state).toBeDefined();
      return app.container.db.repo(Generation).findOneByOrFail({ id: last.id });
    }
    if (Date.now() - started > 10_000) throw new Error('no generation');
    await new Promise((r) => setTimeout(r, 25));
  }
}

function buttons(call: RecordedCall): string[] {
  const markup = call.params.reply_markup as { inline_keyboard?: Array<Array<{ callback_data?: string }>> } | undefined;
  return (markup?.inline_keyboard ?? []).flat().map((b) => b.callback_data ?? '');
}

describe('/start', () => {
  it('registers the commands in both languages at startup', () => {
    const calls = tg.callsOf('setMyCommands');
    expect(calls.some((c) => c.params.language_code === undefined)).toBe(true);
    expect(calls.some((c) => c.params.language_code === 'ru')).toBe(true);
  });

  it('creates a free user without e-mail and greets them in English with the menu', async () => {
    const ann = person('en', 'Ann');
    tg.message(ann, '/start');
    const greeting = await lastMessage(ann.id);
    expect(greeting.params.text).toMatch(/^Hello, Ann!/);
    expect(buttons(greeting)).toEqual([
      'menu:chat',
      'menu:image',
      'menu:video',
      // No model of the test catalog composes music: the entry shows locked instead of a dialog that can only refuse.
      'menu:locked:music',
      'menu:voice',
      'menu:tools',
      'menu:balance',
      'menu:history',
      'menu:mode',
      'menu:settings',
      'menu:buy',
      'menu:help',
    ]);
    const user = await userOf(ann.id);
    expect(user).toMatchObject({ email: null, messengerUsername: ann.username, plan: 'free', language: 'en', subscriptionTokens: 50 });

    tg.message(ann, '/start');
    await tg.waitFor(() => tg.callsOf('sendMessage', ann.id).length === 2);
    expect(tg.callsOf('sendMessage', ann.id)[1]?.params.text).toMatch(/^Welcome back, Ann!/);
    expect(await app.container.db.repo(Identity).countBy({ kind: 'messenger', subject: String(ann.id) })).toBe(1);
  });

  it('greets in Russian when Telegram says ru, and stores the language', async () => {
    const ivan = person('ru', 'Иван');
    tg.message(ivan, '/start');
    const greeting = await lastMessage(ivan.id);
    expect(greeting.params.text).toMatch(/^Здравствуйте, Иван!/);
    expect(JSON.stringify(greeting.params.reply_markup)).toContain('Картинка');
    expect((await userOf(ivan.id)).language).toBe('ru');

    tg.message(ivan, '/balance');
    await waitForText(ivan.id, /^Тариф: /);
  });

  it('switches the language in settings', async () => {
    const eve = person('en', 'Eve');
    tg.message(eve, '/settings');
    const settings = await lastMessage(eve.id);
    expect(buttons(settings)).toContain('set:lang:ru');
    tg.press(eve, 'set:lang:ru', settings.params.message_id as number);
    await waitForText(eve.id, /^Язык: русский/);
    expect((await userOf(eve.id)).language).toBe('ru');
  });
});

describe('chat', () => {
  it('streams the reply by editing one message at most about once a second, and charges once', async () => {
    fake.reply = Array.from({ length: 300 }, (_, i) => `word${i}`).join(' ');
    const bob = person();
    tg.message(bob, 'Tell me a long story');
    const generation = await chatTurnDone(bob.id);
    expect(generation).toMatchObject({ status: 'completed', source: 'bot', modelSlug: 'fake-text', tokensSpent: 2 });
    expect(generation.idempotencyKey).toMatch(/^tg-7000001-\d+$/);

    const placeholder = tg.callsOf('sendMessage', bob.id)[0];
    expect(placeholder?.params.text).toBe('…');
    const edits = tg.callsOf('editMessageText', bob.id);
    expect(edits.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < edits.length - 1; i++) expect((edits[i]?.at ?? 0) - (edits[i - 1]?.at ?? 0)).toBeGreaterThanOrEqual(900);
    const messageId = (await app.container.db.repo(BotDelivery).findOneByOrFail({ generationId: generation.id })).messageId ?? 0;
    expect(tg.textOf(bob.id, messageId)).toBe(fake.reply);
    expect(await charges(bob.id)).toHaveLength(1);
    expect((await charges(bob.id))[0]?.amount).toBe(-2);

    // The next turn carries the conversation; /new forgets it.
    fake.reply = 'Second answer';
    tg.message(bob, 'And then?');
    await chatTurnDone(bob.id, 2);
    const second = fake.calls.filter((c) => c.capability === 'text.stream').at(-1)?.request as { messages: Array<{ role: string; content: string }> };
    expect(second.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    tg.message(bob, '/new');
    await waitForText(bob.id, /conversation starts over/);
    const chats = new ChatStates(createKeyValueStore({ db: app.container.db, clock: app.container.clock, redis: app.container.redis, redisPrefix: app.container.config.redisPrefix }));
    expect((await chats.load(bob.id)).history).toEqual([]);
  });

  it('does not charge twice for a redelivered update', async () => {
    const carl = person();
    const update = tg.message(carl, 'hello');
    await chatTurnDone(carl.id);
    tg.redeliver(update);
    await tg.waitFor(() => tg.calls.length > 0 && !tg.hasRedeliveries());
    await new Promise((r) => setTimeout(r, 500));
    expect(await generationsOf(carl.id)).toHaveLength(1);
    expect(await charges(carl.id)).toHaveLength(1);
    expect(tg.callsOf('sendMessage', carl.id)).toHaveLength(1);
  });

  it('does not start a turn twice for an update redelivered while its reply is still being written', async () => {
    const erin = person();
    fake.next({ kind: 'succeed', delayMs: 1500 });
    const update = tg.message(erin, 'take your time');
    // The placeholder is out and the turn is running: Telegram sends the same update again.
    await tg.waitFor(() => tg.callsOf('sendMessage', erin.id)[0]);
    tg.redeliver(update);
    await tg.waitFor(() => tg.calls.length > 0 && !tg.hasRedeliveries());
    const generation = await chatTurnDone(erin.id);
    expect(generation.status).toBe('completed');
    expect(await generationsOf(erin.id)).toHaveLength(1);
    expect(await charges(erin.id)).toHaveLength(1);
    // One placeholder, edited into the reply; the redelivery neither said nor ran anything.
    expect(tg.callsOf('sendMessage', erin.id)).toHaveLength(1);
    expect(fake.calls.filter((c) => c.capability === 'text.stream')).toHaveLength(1);
  });

  it('splits a reply over 4096 characters into several messages', async () => {
    fake.reply = Array.from({ length: 60 }, (_, i) => `${String(i).padStart(2, '0')}${'x'.repeat(97)}`).join(' ');
    const dan = person();
    tg.message(dan, 'Long please');
    const generation = await chatTurnDone(dan.id);
    expect(generation.status).toBe('completed');
    const sent = tg.callsOf('sendMessage', dan.id);
    expect(sent).toHaveLength(2);
    // Message 1 is the person's; 2 the placeholder, edited to the first part; 3 the rest.
    const texts = [tg.textOf(dan.id, 2), tg.textOf(dan.id, 3)].filter((t): t is string => t !== undefined);
    expect(texts).toHaveLength(2);
    for (const text of texts) expect(text.length).toBeLessThanOrEqual(4096);
    expect(texts.join(' ')).toBe(fake.reply);
  });

  it('refuses an over-budget request with the price and the balance, charging nothing', async () => {
    const fay = person();
    tg.message(fay, '/settings');
    const settings = await lastMessage(fay.id);
    tg.press(fay, 'set:models', settings.params.message_id as number);
    const list = await waitForText(fay.id, /^Pick the chat model/);
    expect(buttons(list)).toContain('set:tm:fake-expensive');
    expect(buttons(list)).not.toContain('set:tm:fake-premium');
    tg.press(fay, 'set:tm:fake-expensive');
    await waitForText(fay.id, /^Chat model: Fake expensive/);
    tg.message(fay, 'hi');
    const refusal = await waitForText(fay.id, /^Not enough tokens/);
    expect(refusal.params.text).toContain('costs 1000000');
    expect(refusal.params.text).toContain('you have 50 available');
    expect(await generationsOf(fay.id)).toHaveLength(0);
    expect((await userOf(fay.id)).subscriptionTokens).toBe(50);
  });

  it('falls back to plain text when Telegram rejects the formatting', async () => {
    fake.reply = 'Use **bold** and `code`';
    const gus = person();
    tg.failNext('editMessageText', { error_code: 400, description: "Bad Request: can't parse entities: Unsupported start tag", chatId: gus.id });
    tg.message(gus, 'format');
    await chatTurnDone(gus.id);
    const edits = tg.callsOf('editMessageText', gus.id);
    const html = edits.filter((c) => c.params.parse_mode === 'HTML');
    expect(html.length).toBeGreaterThanOrEqual(1);
    expect(tg.textOf(gus.id, 2)).toBe('Use **bold** and `code`');
  });

  it('retries a 429 after retry_after', async () => {
    const hal = person();
    tg.failNext('sendMessage', { error_code: 429, description: 'Too Many Requests: retry after 1', parameters: { retry_after: 1 }, chatId: hal.id });
    tg.message(hal, '/help');
    const calls = await tg.waitFor(() => tg.callsOf('sendMessage', hal.id).length === 2 && tg.callsOf('sendMessage', hal.id));
    expect(calls[1]?.params.text).toMatch(/^I answer any message/);
    expect((calls[1]?.at ?? 0) - (calls[0]?.at ?? 0)).toBeGreaterThanOrEqual(900);
  });

  it('stops delivering to a person who blocked the bot, without retrying', async () => {
    const ida = person();
    fake.next({ kind: 'succeed', delayMs: 300 });
    tg.message(ida, 'hello');
    await lastMessage(ida.id);
    tg.block(ida.id);
    const generation = await chatTurnDone(ida.id);
    const row = await app.container.db.repo(BotDelivery).findOneByOrFail({ generationId: generation.id });
    expect(row.state).toBe('blocked');
    const attempts = tg.sentTo(ida.id).length;
    await new Promise((r) => setTimeout(r, 1500));
    expect(tg.sentTo(ida.id).length).toBe(attempts);
    expect(tg.callsOf('editMessageText', ida.id).length).toBeLessThanOrEqual(1);
  });

  it('answers in groups only to commands, mentions and replies', async () => {
    const jo = person();
    const group = { id: -4242, type: 'group' as const, title: 'Friends' };
    tg.message(jo, 'just talking among ourselves', group);
    tg.message(jo, '/help', group);
    await waitForText(group.id, /^I answer any message/);
    expect(tg.sentTo(group.id)).toHaveLength(1);
    fake.reply = 'Hi group';
    tg.message(jo, `@${BOT_USER.username} hello`, group);
    const generation = await chatTurnDone(jo.id);
    expect(generation.status).toBe('completed');
    const request = fake.calls.filter((c) => c.capability === 'text.stream').at(-1)?.request as { messages: Array<{ content: string }> };
    expect(request.messages.at(-1)?.content).toBe('hello');
  });
});

describe('image', () => {
  it('goes through the dialog, shows the price, and uploads the photo when the worker is done', async () => {
    const kim = person();
    tg.message(kim, '/image');
    const models = await waitForText(kim.id, /^Which model/);
    expect(buttons(models)).toEqual(expect.arrayContaining(['img:m:fake-image', 'img:m:fake-art', 'img:x']));
    tg.press(kim, 'img:m:fake-image');
    await waitForText(kim.id, /^Describe the image/);
    tg.message(kim, 'a red fox in the snow');
    const sizes = await waitForText(kim.id, /^Pick the size/);
    expect(buttons(sizes)).toContain('img:o:1792x1024');
    tg.press(kim, 'img:o:1792x1024');
    const confirm = await waitForText(kim.id, /^Fake image: 8 tokens \(you have 50\)/);
    expect(buttons(confirm)).toEqual(['img:go', 'img:x']);
    expect(await app.container.db.repo(Generation).countBy({ userId: (await userOf(kim.id)).id })).toBe(0);
    tg.press(kim, 'img:go');
    await waitForText(kim.id, /^Started/);
    const photo = await tg.waitFor(() => tg.callsOf('sendPhoto', kim.id)[0]);
    expect(photo.files.photo?.bytes.subarray(1, 4).toString()).toBe('PNG');
    expect(photo.params.caption).toBe('a red fox in the snow\n\nFake image · 8 tokens · 42 tokens left');
    const [generation] = await generationsOf(kim.id);
    expect(generation).toMatchObject({ status: 'completed', source: 'bot', modelSlug: 'fake-image', tokensSpent: 8 });
    expect(await charges(kim.id)).toHaveLength(1);
    expect((await userOf(kim.id)).subscriptionTokens).toBe(42);
  });

  it('in a group, only the member who opened a dialog can answer it or confirm it', async () => {
    const owner = person();
    const other = person();
    const group = { id: -5151, type: 'group' as const, title: 'Team' };
    tg.message(other, '/start');
    await waitForText(other.id, /Welcome|Hello|Hi/);
    tg.message(owner, '/image', group);
    await waitForText(group.id, /^Which model/);
    tg.press(other, 'img:m:fake-image', 1, group);
    tg.press(owner, 'img:m:fake-image', 1, group);
    await waitForText(group.id, /^Describe the image/);
    // Another member's reply is not the owner's prompt, nor their own dialog's answer.
    tg.message(other, `@${BOT_USER.username} a stolen prompt`, group);
    tg.message(owner, `@${BOT_USER.username} a blue whale`, group);
    await waitForText(group.id, /^Pick the size/);
    tg.press(other, 'img:o:1024x1024', 1, group);
    tg.press(owner, 'img:o:1024x1024', 1, group);
    await waitForText(group.id, /^Fake image: \d+ tokens/);
    tg.press(other, 'img:go', 1, group);
    tg.press(owner, 'img:go', 1, group);
    await waitForText(group.id, /^Started/);
    await tg.waitFor(() => tg.callsOf('sendPhoto', group.id)[0]);
    const [generation] = await generationsOf(owner.id);
    expect(generation?.prompt).toBe('a blue whale');
    // The other member's message was their own chat turn, on their own balance; no image of theirs.
    expect((await generationsOf(other.id)).map((g) => g.category)).toEqual(['text']);
  });

  it('/cancel leaves the dialog; a plain message is then a chat turn', async () => {
    const lou = person();
    tg.message(lou, '/image');
    await waitForText(lou.id, /^Which model/);
    tg.message(lou, '/cancel');
    await waitForText(lou.id, /^Cancelled/);
    fake.reply = 'chatting again';
    tg.message(lou, 'hello');
    const generation = await chatTurnDone(lou.id);
    expect(generation.category).toBe('text');
  });
});

describe('schedules of Telegram users', () => {
  it('sends a schedule run\'s result to the owner\'s chat', async () => {
    const ann = person();
    tg.message(ann, '/start');
    await waitForText(ann.id, /./);
    const owner = await userOf(ann.id);
    fake.reply = 'Your scheduled haiku arrives';
    const schedule = await app.container.schedules.create(owner.id, { name: 'daily haiku', cron: '0 8 * * *', model: 'fake-text', prompt: 'a haiku', params: {}, is_active: true, timezone: 'UTC' });
    await app.container.schedules.run(schedule.id, '2026-11-01T08:00:00.000Z');
    const generation = (await generationsOf(ann.id)).find((g) => g.scheduleId === schedule.id);
    expect(generation?.status).toBe('completed');
    const delivered = await waitDelivery(generation?.id ?? 0);
    expect(delivered.state).toBe('delivered');
    await waitForText(ann.id, /Your scheduled haiku arrives/);
  });
});

describe('connecting a web account', () => {
  it('/link gives a one-time code; POST /auth/link attaches the Telegram identity to the web account', async () => {
    const ann = person();
    tg.message(ann, '/link');
    const reply = await waitForText(ann.id, /link code: [A-Z0-9]{8}/);
    const code = /code: ([A-Z0-9]{8})/.exec(String(reply.params.text))?.[1] ?? '';
    const telegramAccount = await userOf(ann.id);

    const register = await app.http().post('/api/v2/auth/register').send({ email: `web-${ann.id}@example.test`, password: 'password1' });
    const token = register.body.access_token as string;
    const linked = await app.http().post('/api/v2/auth/link').set('authorization', `Bearer ${token}`).send({ code: code.toLowerCase() });
    expect(linked.status).toBe(200);
    expect(linked.body.auth_methods).toEqual({ messenger: true, identity_provider: false, email: true });
    const me = await app.http().get('/api/v2/user/me').set('authorization', `Bearer ${token}`);
    expect(me.body).toMatchObject({ id: register.body.user.id, messenger_username: ann.username, auth_methods: { messenger: true, email: true } });
    // The Telegram id now signs in to the web account; the empty Telegram-only account is gone.
    expect((await userOf(ann.id)).id).toBe(register.body.user.id);
    expect(await app.container.db.repo(User).findOneBy({ id: telegramAccount.id })).toBeNull();
    // Single use.
    expect((await app.http().post('/api/v2/auth/link').set('authorization', `Bearer ${token}`).send({ code })).status).toBe(422);
  });

  it('refuses to merge a Telegram account that has generations, and expired codes', async () => {
    const bob = person();
    tg.message(bob, 'hello there');
    await chatTurnDone(bob.id);
    tg.message(bob, '/link');
    const code = /code: ([A-Z0-9]{8})/.exec(String((await waitForText(bob.id, /link code/)).params.text))?.[1] ?? '';
    const web = await app.http().post('/api/v2/auth/register').send({ email: `web-${bob.id}@example.test`, password: 'password1' });
    const refused = await app.http().post('/api/v2/auth/link').set('authorization', `Bearer ${web.body.access_token}`).send({ code });
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toMatch(/generations or bonus tokens/);

    const cara = person();
    tg.message(cara, '/link');
    const late = /code: ([A-Z0-9]{8})/.exec(String((await waitForText(cara.id, /link code/)).params.text))?.[1] ?? '';
    app.clock.advance(601);
    const web2 = await app.http().post('/api/v2/auth/register').send({ email: `web-${cara.id}@example.test`, password: 'password1' });
    expect((await app.http().post('/api/v2/auth/link').set('authorization', `Bearer ${web2.body.access_token}`).send({ code: late })).status).toBe(422);
  });
});
