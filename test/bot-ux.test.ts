/**
 * The bot without dead ends: an unknown command gets an answer, features the plan lacks show as
 * locked with the plan that opens them, /balance shows the request windows, /link names the web
 * address (no API paths), and counted words agree with their numbers in both languages.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startBot } from '../bot/run';
import { Generation, User } from '../shared/db/entities';
import type { Stoppable } from '../shared/lifecycle';
import { counted, countedRange } from '../shared/telegram/plurals';
import { startTestApp, TestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { telegramUser } from './helpers/telegram-accounts';
import { BOT_USER, FakeTelegram, RecordedCall, TgUser } from './helpers/fake-telegram';

const fake = new FakeProvider('fake');
const tg = new FakeTelegram();
let app: TestApp;
let bot: Stoppable;
let dir: string;
// A 1×1 PNG: a real image for the photo tools.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');

beforeAll(async () => {
  // The test catalog with video offered only from the Pro plan (and, as in the fixture, no music at all).
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bot-ux-'));
  const catalog = JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures/catalog.json'), 'utf8')) as { models: Array<{ slug: string; min_plan: string }> };
  for (const model of catalog.models) if (model.slug === 'fake-video') model.min_plan = 'pro';
  const catalogPath = path.join(dir, 'catalog.json');
  fs.writeFileSync(catalogPath, JSON.stringify(catalog));
  await tg.start();
  app = await startTestApp(
    { CATALOG_PATH: catalogPath, ASSISTANTS_PATH: path.join(__dirname, 'fixtures/assistants.json'), TELEGRAM_BOT_TOKEN: '123456:TEST-token', TELEGRAM_API_ROOT: tg.url, PUBLIC_BASE_URL: 'https://gen.example.test' },
    { providers: [fake.adapter()], worker: true },
  );
  bot = await startBot(app.container);
});

afterAll(async () => {
  await bot?.stop();
  await app?.close();
  await tg.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

let nextId = 91_000;
function person(language_code = 'en', first_name = 'Ann'): TgUser {
  const id = nextId++;
  return { id, is_bot: false, first_name, username: `ux${id}`, language_code };
}

function waitForText(chatId: number, pattern: RegExp): Promise<RecordedCall> {
  return tg.waitFor(() => tg.calls.find((c) => Number(c.params.chat_id) === chatId && pattern.test(String(c.params.text ?? ''))));
}

function keyboard(call: RecordedCall): Array<{ text: string; data: string; url: string }> {
  const markup = call.params.reply_markup as { inline_keyboard?: Array<Array<{ text: string; callback_data?: string; url?: string }>> } | undefined;
  return (markup?.inline_keyboard ?? []).flat().map((b) => ({ text: b.text, data: b.callback_data ?? '', url: b.url ?? '' }));
}

describe('plurals', () => {
  it('agree with the number in English and Russian', () => {
    expect([1, 2, 5, 21].map((n) => counted('en', n, 'token'))).toEqual(['1 token', '2 tokens', '5 tokens', '21 tokens']);
    expect([1, 2, 5, 11, 21, 22, 25, 111].map((n) => counted('ru', n, 'token'))).toEqual([
      '1 токен',
      '2 токена',
      '5 токенов',
      '11 токенов',
      '21 токен',
      '22 токена',
      '25 токенов',
      '111 токенов',
    ]);
    expect(countedRange('en', 1, 1, 'token')).toBe('1 token');
    expect(countedRange('ru', 2, 5, 'token')).toBe('2–5 токенов');
    expect(countedRange('ru', 1, 21, 'token')).toBe('1–21 токен');
    expect(counted('ru', 3, 'bonusToken')).toBe('3 бонусных токена');
  });

  it('the greeting names the plan as /balance does, with its tokens counted, in both languages', async () => {
    const ann = person('en', 'Ann');
    tg.message(ann, '/start');
    await waitForText(ann.id, /^Hello, Ann! Your account is ready: the Starter plan, 50 tokens a month\./);
    tg.message(ann, '/balance');
    await waitForText(ann.id, /^Plan: Starter\n/);

    const ivan = person('ru', 'Иван');
    tg.message(ivan, '/start');
    await waitForText(ivan.id, /^Здравствуйте, Иван! Аккаунт создан: тариф Starter, 50 токенов в месяц\./);
  });
});

describe('an unknown command', () => {
  it('is answered in a private chat with what the bot can do and the menu', async () => {
    const bo = person('en', 'Bo');
    tg.message(bo, '/foo');
    const answer = await waitForText(bo.id, /^I do not know \/foo\. Here is what I can do:/);
    expect(String(answer.params.text)).toContain('/image');
    expect(keyboard(answer).map((b) => b.data)).toContain('menu:chat');

    const olga = person('ru', 'Ольга');
    tg.message(olga, '/foo@gensvc_test_bot bar');
    await waitForText(olga.id, /^Я не знаю команду \/foo\. Вот что я умею:/);
  });

  it('in a group is answered only when it names this bot', async () => {
    const jo = person('en', 'Jo');
    const group = { id: -91_001, type: 'group' as const, title: 'Friends' };
    tg.message(jo, '/foo@some_other_bot', group);
    tg.message(jo, `/bar@${BOT_USER.username}`, group);
    await waitForText(group.id, /^I do not know \/bar\./);
    expect(tg.callsOf('sendMessage', group.id).filter((c) => /\/foo/.test(String(c.params.text)))).toHaveLength(0);
  });
});

describe('locked features', () => {
  it('show in the menu with the plan that opens them, and say so when pressed or called by command', async () => {
    const cy = person('en', 'Cy');
    tg.message(cy, '/start');
    const greeting = await waitForText(cy.id, /^Hello, Cy!/);
    const buttons = keyboard(greeting);
    expect(buttons.find((b) => b.data === 'menu:locked:video')?.text).toBe('🔒 Video · Pro');
    expect(buttons.find((b) => b.data === 'menu:locked:music')?.text).toBe('🔒 Music');
    expect(buttons.find((b) => b.data === 'menu:image')).toBeDefined();

    tg.press(cy, 'menu:locked:video');
    const locked = await waitForText(cy.id, /^🔒 Video is available from the Pro plan\./);
    expect(keyboard(locked).map((b) => b.data)).toEqual(['menu:buy', 'menu:redeem', 'menu:balance']);
    tg.message(cy, '/video');
    await tg.waitFor(() => tg.callsOf('sendMessage', cy.id).filter((c) => /^🔒 Video is available from the Pro plan/.test(String(c.params.text))).length === 2);
    tg.press(cy, 'menu:locked:music');
    await waitForText(cy.id, /^🔒 Music is not offered on this server right now\./);
  });

  it('opens once the plan has it: the same press enters the dialog', async () => {
    const di = person('en', 'Di');
    tg.message(di, '/start');
    await waitForText(di.id, /^Hello, Di!/);
    await app.container.users.setPlan((await telegramUser(app, di.id)).id, 'pro');
    tg.press(di, 'menu:locked:video');
    await waitForText(di.id, /^Which model should make the video\?/);
    tg.message(di, '/cancel');
    await waitForText(di.id, /^Cancelled\./);
  });
});

describe('/balance and /link', () => {
  it('/balance shows the requests left this hour and today and when they start over', async () => {
    const ed = person('en', 'Ed');
    tg.message(ed, '/balance');
    const first = await waitForText(ed.id, /^Plan: Starter/);
    expect(String(first.params.text)).toMatch(/This hour: 5 of 5 requests left \(the count starts over at \d\d:\d\d UTC\)/);
    expect(String(first.params.text)).toMatch(/Today: 20 of 20 requests left \(starts over at \d\d:\d\d UTC\)/);
    const user = await telegramUser(app, ed.id);
    const plan = app.container.plans.get('free');
    await app.container.generationLimiter.consume(user.id, plan);
    tg.message(ed, '/balance');
    await waitForText(ed.id, /This hour: 4 of 5 requests left/);

    const fi = person('ru', 'Фи');
    tg.message(fi, '/balance');
    await waitForText(fi.id, /В этот час: осталось 5 из 5 запросов .*\nСегодня: осталось 20 из 20 запросов/);
  });

  it('an unlimited plan says so', async () => {
    const gu = person('en', 'Gu');
    tg.message(gu, '/start');
    await waitForText(gu.id, /^Hello, Gu!/);
    await app.container.users.setPlan((await telegramUser(app, gu.id)).id, 'elite');
    tg.message(gu, '/balance');
    await waitForText(gu.id, /^Plan: Elite[\s\S]*Requests: no hourly or daily limit on your plan/);
  });

  it('/link tells where to enter the code on the web, with a button, and no API path', async () => {
    const hu = person('en', 'Hu');
    tg.message(hu, '/link');
    const answer = await waitForText(hu.id, /^Your link code: /);
    expect(String(answer.params.text)).toContain('https://gen.example.test/');
    expect(String(answer.params.text)).not.toMatch(/\/api\/|POST/);
    // The button opens the page the text names (Account), past the sign-in page.
    expect(keyboard(answer)).toEqual([{ text: '🌐 Open the web dashboard', data: '', url: 'https://gen.example.test/account' }]);
  });
});

describe('a long Markdown answer', () => {
  it('arrives split at code-block boundaries, each message formatted code', async () => {
    // Tab-indented: the fake model streams word by word, and the indentation must survive the cut.
    const lines = Array.from({ length: 500 }, (_, i) => `\tstep_${i}();`);
    fake.reply = `Here:\n\n\`\`\`js\n${lines.join('\n')}\n\`\`\``;
    const jan = person('en', 'Jan');
    tg.message(jan, 'write the long program');
    const final = await tg.waitFor(() => {
      const formatted = tg.calls.filter((c) => Number(c.params.chat_id) === jan.id && c.params.parse_mode === 'HTML');
      const texts = formatted.map((c) => String(c.params.text));
      return texts.some((t) => t.includes('step_499();')) ? texts : undefined;
    }, 20_000);
    fake.reply = 'Hello from the fake model';
    const messages = final.filter((t, i) => final.indexOf(t) === i);
    expect(messages.length).toBeGreaterThan(1);
    for (const html of messages.filter((t) => t.includes('step_'))) {
      expect(html).toMatch(/<pre><code class="language-js">[\s\S]*<\/code><\/pre>$/);
      expect((html.match(/<pre>/g) ?? []).length).toBe((html.match(/<\/pre>/g) ?? []).length);
    }
    const shown = messages.flatMap((t) => t.split('\n')).filter((l) => /^\tstep_\d+\(\);/.test(l.replace(/<[^>]+>/g, '')));
    expect(shown.length).toBeGreaterThanOrEqual(lines.length);
  });
});

describe('refusals with a way forward', () => {
  async function setTokens(telegramId: number, tokens: number): Promise<void> {
    const user = await telegramUser(app, telegramId);
    await app.container.db.repo(User).update({ id: user.id }, { subscriptionTokens: tokens, bonusTokens: 0 });
  }

  async function imageDialogUntilSizes(who: TgUser): Promise<RecordedCall> {
    tg.message(who, '/image');
    await waitForText(who.id, /^Which model should draw it/);
    tg.press(who, 'img:m:fake-image');
    await waitForText(who.id, /^Describe the image/);
    tg.message(who, 'a red fox');
    return waitForText(who.id, /^Pick the size/);
  }

  it('marks the options the balance cannot cover, refuses them on the button, and keeps the dialog open', async () => {
    const ka = person('en', 'Ka');
    tg.message(ka, '/start');
    await waitForText(ka.id, /^Hello, Ka!/);
    await setTokens(ka.id, 5);
    const sizes = await imageDialogUntilSizes(ka);
    expect(keyboard(sizes).map((b) => [b.text, b.data])).toEqual([
      ['1024x1024 · 4 tokens', 'img:o:1024x1024'],
      ['🚫 1024x1792 · 8 tokens', 'img:short'],
      ['🚫 1792x1024 · 8 tokens', 'img:short'],
      ['✖️ Cancel', 'img:x'],
    ]);
    tg.press(ka, 'img:short');
    await tg.waitFor(() => tg.callsOf('answerCallbackQuery').find((c) => c.params.text === 'Your balance does not cover this option.' && c.params.show_alert === true));
    tg.press(ka, 'img:o:1024x1024');
    const confirm = await waitForText(ka.id, /^Fake image: 4 tokens \(you have 5\)\. Start\?/);
    expect(keyboard(confirm).map((b) => b.data)).toEqual(['img:go', 'img:x']);
    tg.press(ka, 'img:x');
    await waitForText(ka.id, /^Cancelled\./);
  });

  it('a balance short at the confirm screen gets no Start button but a cheaper option, the balance and a code', async () => {
    const lu = person('ru', 'Лу');
    tg.message(lu, '/start');
    await waitForText(lu.id, /^Здравствуйте, Лу!/);
    await setTokens(lu.id, 5);
    tg.message(lu, '/image');
    await waitForText(lu.id, /^Какой моделью/);
    tg.press(lu, 'img:m:fake-image');
    await waitForText(lu.id, /^Опишите/);
    tg.message(lu, 'рыжая лиса');
    await waitForText(lu.id, /^Выберите размер/);
    // Spent elsewhere meanwhile (another chat, the web): the confirm screen sees the balance now.
    await setTokens(lu.id, 2);
    tg.press(lu, 'img:o:1024x1024');
    const short = await waitForText(lu.id, /^Недостаточно токенов: это стоит 4 токена, а у вас доступно 2\./);
    expect(keyboard(short).map((b) => [b.text, b.data])).toEqual([
      ['↩️ Выбрать вариант дешевле', 'menu:image'],
      ['⭐ Купить токены', 'menu:buy'],
      ['🎟 Активировать код', 'menu:redeem'],
      ['💰 Баланс и лимиты', 'menu:balance'],
    ]);
    tg.press(lu, 'menu:redeem');
    await waitForText(lu.id, /^Пришлите код для активации/);
  });

  it('a request limit reached at Start says when it resets, with the balance button', async () => {
    const mo = person('en', 'Mo');
    tg.message(mo, '/start');
    await waitForText(mo.id, /^Hello, Mo!/);
    const user = await telegramUser(app, mo.id);
    for (let i = 0; i < 5; i++) await app.container.generationLimiter.consume(user.id, app.container.plans.get('free'));
    await imageDialogUntilSizes(mo);
    tg.press(mo, 'img:o:1024x1024');
    await waitForText(mo.id, /^Fake image: 4 tokens/);
    tg.press(mo, 'img:go');
    const refusal = await waitForText(mo.id, /^Your plan's request limit is reached\. Try again in .* \(at \d\d:\d\d UTC\)\./);
    expect(keyboard(refusal).map((b) => b.data)).toEqual(['menu:balance']);
  });
});

describe('work on a sent file', () => {
  it('says what is happening first, and on a failed download what failed and that nothing was charged', async () => {
    const ned = person('en', 'Ned');
    tg.message(ned, '/start');
    await waitForText(ned.id, /^Hello, Ned!/);
    tg.failNext('getFile', { error_code: 400, description: 'Bad Request: wrong file_id or the file is temporarily unavailable' });
    tg.media(ned, 'voice', { bytes: Buffer.from('OggS-voice'), mime_type: 'audio/ogg' });
    const status = await waitForText(ned.id, /^🎙 Transcribing…$/);
    const failed = await tg.waitFor(() => tg.callsOf('editMessageText', ned.id).find((c) => /^I could not download your recording from Telegram, so nothing was started and nothing was charged\. Please send it again/.test(String(c.params.text))));
    expect(tg.calls.indexOf(status)).toBeLessThan(tg.calls.indexOf(failed));
    const user = await telegramUser(app, ned.id);
    expect(await app.container.db.repo(Generation).countBy({ userId: user.id })).toBe(0);
    expect(user.subscriptionTokens).toBe(50);
  });

  it('a photo tool says what it does before the download, and the result updates that message', async () => {
    const ola = person('ru', 'Оля');
    tg.message(ola, '/start');
    await waitForText(ola.id, /^Здравствуйте, Оля!/);
    tg.media(ola, 'photo', { bytes: PNG, caption: 'распознай текст' });
    const status = await waitForText(ola.id, /^🔤 Распознаю текст…$/);
    // The download comes after the status message.
    const getFile = await tg.waitFor(() => tg.calls.find((c) => c.method === 'getFile' && tg.calls.indexOf(c) > tg.calls.indexOf(status)));
    expect(getFile).toBeDefined();
    await tg.waitFor(() => tg.calls.find((c) => Number(c.params.chat_id) === ola.id && /recognized text/.test(String(c.params.text ?? c.params.caption ?? ''))));
    // The status message is the one the work reports in: no second "started" message.
    expect(tg.sentTo(ola.id).filter((c) => /^Запущено/.test(String(c.params.text ?? '')))).toHaveLength(0);
  });
});

describe('/mode: personas', () => {
  /** The system message the fake model received in its last chat call. */
  function lastSystemPrompt(): string | undefined {
    const call = [...fake.calls].reverse().find((c) => c.capability === 'text.stream' || c.capability === 'text');
    const messages = (call?.request as { messages?: Array<{ role: string; content: unknown }> } | undefined)?.messages ?? [];
    const system = messages.find((m) => m.role === 'system');
    return typeof system?.content === 'string' ? system.content : undefined;
  }

  async function chatTurn(who: TgUser, text: string): Promise<void> {
    const before = fake.calls.length;
    tg.message(who, text);
    await tg.waitFor(() => fake.calls.length > before);
    // The reply: the placeholder edited, or (after a draft) sent as a new message.
    await tg.waitFor(() => tg.calls.find((c) => Number(c.params.chat_id) === who.id && (c.method === 'editMessageText' || c.method === 'sendMessage') && /Hello from the fake model/.test(String(c.params.text))));
  }

  it('lists chat personas, installs and switches one, the model receives its system prompt, /new keeps it', async () => {
    const pia = person('en', 'Pia');
    tg.message(pia, '/mode');
    const list = await waitForText(pia.id, /^No persona: the plain chat\./);
    // Chat personas only (the painter makes images; the ghost has no offered model).
    expect(keyboard(list).map((b) => [b.text, b.data])).toEqual([
      ['➕ Poet', 'mode:use:poet'],
      ['➕ Poetry critic', 'mode:use:critic'],
      ['💬 Plain chat', 'mode:off'],
    ]);
    tg.press(pia, 'mode:use:poet');
    await waitForText(pia.id, /^Persona: Poet\. Writes verse\./);
    const user = await telegramUser(app, pia.id);
    expect((await app.container.assistants.installed(user.id)).map((i) => i.assistant.id)).toEqual(['poet']);

    await chatTurn(pia, 'the sea');
    expect(lastSystemPrompt()).toBe('You are a poet.');
    const turn = await app.container.db.repo(Generation).findOne({ where: { userId: user.id }, order: { id: 'DESC' } });
    expect(turn?.assistantId).toBe('poet');

    tg.message(pia, '/new');
    await waitForText(pia.id, /^Done: the conversation starts over/);
    await chatTurn(pia, 'the wind');
    expect(lastSystemPrompt()).toBe('You are a poet.');

    tg.message(pia, '/mode');
    const again = await tg.waitFor(() => tg.callsOf('sendMessage', pia.id).filter((c) => /^Persona: Poet\.\nPick one/.test(String(c.params.text))).at(-1));
    expect(keyboard(again)[0]).toEqual({ text: '✅ Poet', data: 'mode:use:poet', url: '' });
    tg.press(pia, 'mode:use:critic');
    await waitForText(pia.id, /^Persona: Poetry critic\./);
    await chatTurn(pia, 'judge this');
    expect(lastSystemPrompt()).toBe('You are a critic.');

    tg.press(pia, 'mode:off');
    await waitForText(pia.id, /^Persona off: the plain chat\./);
    await chatTurn(pia, 'hello');
    expect(lastSystemPrompt()).toBeUndefined();
  });

  it('a reply appended while the persona changes keeps both (the worker writes only the conversation)', async () => {
    const chats = app.container.chats;
    const chatId = 'persona-race';
    await chats.update(chatId, (state) => {
      state.assistantId = 'poet';
    });
    // Both read the state before either writes: the worker appending a reply, the person switching the persona off.
    await Promise.all([
      chats.update(chatId, (state) => {
        state.history.push({ role: 'assistant', content: 'a verse' });
      }),
      chats.update(chatId, (state) => {
        state.assistantId = null;
      }),
    ]);
    const state = await chats.load(chatId);
    expect(state.assistantId).toBeNull();
    expect(state.history).toEqual([{ role: 'assistant', content: 'a verse' }]);
  });

  it('a persona uninstalled elsewhere falls back to the plain chat, said once, in Russian', async () => {
    const ria = person('ru', 'Рия');
    tg.message(ria, '/mode');
    await waitForText(ria.id, /^Без персоны: обычный чат\./);
    tg.press(ria, 'mode:use:poet');
    await waitForText(ria.id, /^Персона: Poet\./);
    await app.container.assistants.uninstall((await telegramUser(app, ria.id)).id, 'poet');
    tg.message(ria, 'привет');
    await waitForText(ria.id, /^Персона Poet больше не установлена/);
    await chatTurn(ria, 'привет ещё раз');
    expect(lastSystemPrompt()).toBeUndefined();
  });
});
