/**
 * /redeem in the Telegram bot (long polling against the fake Bot API): `/redeem CODE` at once,
 * `/redeem` alone asks for the code; the redemption is the API's (one use per account, the same
 * attempt limit) and every answer is in the person's language. The ledger audit is clean after
 * every test.
 */
import { startBot } from '../bot/run';
import { runAdminCommand } from '../cli/admin-commands';
import { addDays } from '../shared/clock';
import type { Stoppable } from '../shared/lifecycle';
import { startTestApp, TestApp } from './helpers/app';
import { FakeTelegram, RecordedCall, TgUser } from './helpers/fake-telegram';
import { expectAuditClean } from './helpers/payments';
import { telegramUser } from './helpers/telegram-accounts';

const tg = new FakeTelegram();
let app: TestApp;
let bot: Stoppable;

beforeAll(async () => {
  await tg.start();
  app = await startTestApp({ TELEGRAM_BOT_TOKEN: '123456:TEST-token', TELEGRAM_API_ROOT: tg.url });
  bot = await startBot(app.container);
});

afterAll(async () => {
  await bot?.stop();
  await app?.close();
  await tg.stop();
});

afterEach(() => expectAuditClean(app));

let nextId = 9000;
function person(language_code = 'en'): TgUser {
  const id = nextId++;
  return { id, is_bot: false, first_name: 'Pat', username: `payer${id}`, language_code };
}

async function code(...options: string[]): Promise<string> {
  const { codes } = (await runAdminCommand(app.container, ['create-codes', ...options])) as { codes: string[] };
  return codes[0] as string;
}

/** The `n`th message the bot sent to this chat (1-based), once it is there. */
function nthMessage(chatId: number, n: number): Promise<RecordedCall> {
  return tg.waitFor(() => tg.callsOf('sendMessage', chatId)[n - 1]);
}

const textOf = (call: RecordedCall) => String(call.params.text);

describe('/redeem', () => {
  it('redeems the code given with the command, in English, and adds the bonus tokens', async () => {
    const ann = person('en');
    tg.message(ann, `/redeem ${await code('--tokens', '500')}`);
    expect(textOf(await nthMessage(ann.id, 1))).toBe('Done: 500 bonus tokens added. You now have 550 tokens.');
    expect(await telegramUser(app, ann.id)).toMatchObject({ bonusTokens: 500, subscriptionTokens: 50 });
  });

  it('asks for the code when the command has none, then redeems the answer', async () => {
    const bob = person('en');
    const planCode = await code('--plan', 'basic', '--days', '10');
    tg.message(bob, '/redeem');
    expect(textOf(await nthMessage(bob.id, 1))).toBe('Send me the code to redeem:');
    tg.message(bob, planCode.toLowerCase());
    const until = addDays(app.clock.now(), 10).toISOString().slice(0, 10);
    expect(textOf(await nthMessage(bob.id, 2))).toBe(`Done: your plan is Basic until ${until}. You have 1000 tokens.`);
    expect(await telegramUser(app, bob.id)).toMatchObject({ plan: 'basic' });
    // One question, one answer.
    expect(tg.callsOf('sendMessage', bob.id)).toHaveLength(2);
  });

  it('answers refusals in Russian to a Russian speaker: a wrong code, a second use, a spent code', async () => {
    const ivan = person('ru');
    tg.message(ivan, '/redeem NOPE-NOPE');
    expect(textOf(await nthMessage(ivan.id, 1))).toBe('Такого кода нет. Проверьте его и попробуйте ещё раз.');
    const mine = await code('--tokens', '20', '--uses', '2');
    tg.message(ivan, `/redeem ${mine}`);
    expect(textOf(await nthMessage(ivan.id, 2))).toBe('Готово: начислено 20 бонусных токенов. Теперь у вас 70 токенов.');
    tg.message(ivan, `/redeem ${mine}`);
    expect(textOf(await nthMessage(ivan.id, 3))).toBe('Вы уже активировали этот код.');
    const taken = await code('--tokens', '20');
    const first = person('en');
    tg.message(first, `/redeem ${taken}`);
    expect(textOf(await nthMessage(first.id, 1))).toMatch(/^Done: 20 bonus tokens added/);
    tg.message(ivan, `/redeem ${taken}`);
    expect(textOf(await nthMessage(ivan.id, 4))).toBe('Этот код уже израсходован.');
    expect((await telegramUser(app, ivan.id)).bonusTokens).toBe(20);
  });

  it('stops a guesser after 10 wrong codes, saying when to try again', async () => {
    const eve = person('en');
    for (let i = 1; i <= 10; i++) {
      tg.message(eve, `/redeem WRONG-${i}`);
      expect(textOf(await nthMessage(eve.id, i))).toBe('There is no such code. Check it and try again.');
    }
    tg.message(eve, `/redeem ${await code('--tokens', '5')}`);
    expect(textOf(await nthMessage(eve.id, 11))).toMatch(/^Too many wrong codes\. Try again in (59 min|1 h 0 min) \(at \d\d:\d\d UTC\)\.$/);
    expect((await telegramUser(app, eve.id)).bonusTokens).toBe(0);
  });

  it('leaves the question with /cancel', async () => {
    const cal = person('en');
    tg.message(cal, '/redeem');
    await nthMessage(cal.id, 1);
    tg.message(cal, '/cancel');
    expect(textOf(await nthMessage(cal.id, 2))).toBe('Cancelled.');
  });

  it('is in the command list of both languages', () => {
    const lists = tg.callsOf('setMyCommands').map((c) => c.params.commands as Array<{ command: string; description: string }>);
    expect(lists.map((l) => l.find((c) => c.command === 'redeem')?.description)).toEqual(expect.arrayContaining(['Redeem a code', 'Активировать код']));
  });
});
