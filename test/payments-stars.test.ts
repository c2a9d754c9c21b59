/**
 * Telegram Stars in the bot (long polling against the fake Bot API, no worker: everything here
 * happens in the update handlers): /buy lists the products with their prices, a pack is an XTR
 * invoice and a plan a 30-day subscription link; the pre-checkout query is answered ok or
 * refused with a reason in the payer's language; a `successful_payment` credits once however
 * often it arrives, renewals extend the plan once each; /paysupport answers. The ledger audit
 * is clean after every test.
 */
import { startBot } from '../bot/run';
import { ALLOWED_UPDATES } from '../bot/updates';
import { addMonths } from '../shared/clock';
import { Payment } from '../shared/db/entities';
import type { Stoppable } from '../shared/lifecycle';
import { startTestApp, TestApp } from './helpers/app';
import { FakeTelegram, RecordedCall, TgUser } from './helpers/fake-telegram';
import { expectAuditClean, rowsOfPayment } from './helpers/payments';
import { invoiceFor, paymentsOfCharge } from './helpers/stars';
import { telegramUser } from './helpers/telegram-accounts';

const tg = new FakeTelegram();
let app: TestApp;
let bot: Stoppable;

beforeAll(async () => {
  await tg.start();
  app = await startTestApp({ TELEGRAM_BOT_TOKEN: '123456:TEST-token', TELEGRAM_API_ROOT: tg.url, TELEGRAM_PAYMENTS_SUPPORT: '@gensvc_help' });
  bot = await startBot(app.container);
});

afterAll(async () => {
  await bot?.stop();
  await app?.close();
  await tg.stop();
});

afterEach(() => expectAuditClean(app));

let nextId = 31_000;
function person(language_code = 'en'): TgUser {
  const id = nextId++;
  return { id, is_bot: false, first_name: 'Sam', username: `buyer${id}`, language_code };
}

const textOf = (call: RecordedCall) => String(call.params.text);
function nthMessage(chatId: number, n: number): Promise<RecordedCall> {
  return tg.waitFor(() => tg.callsOf('sendMessage', chatId)[n - 1]);
}
function buttons(call: RecordedCall): Array<{ text: string; callback_data?: string; url?: string }> {
  const markup = call.params.reply_markup as { inline_keyboard?: Array<Array<{ text: string; callback_data?: string; url?: string }>> } | undefined;
  return (markup?.inline_keyboard ?? []).flat();
}
/** Sends /start so the account exists, and waits for the greeting. */
async function signedUp(who: TgUser): Promise<number> {
  tg.message(who, '/start');
  await nthMessage(who.id, 1);
  return (await telegramUser(app, who.id)).id;
}

describe('/buy', () => {
  it('lists the token packs and plans with their prices in Stars, in English, with a button each', async () => {
    const ann = person('en');
    tg.message(ann, '/buy');
    const shop = await nthMessage(ann.id, 1);
    expect(textOf(shop)).toBe(
      [
        'Token packs (bonus tokens, they never expire):',
        '• 500 tokens: 150 ⭐',
        '• 2,000 tokens: 500 ⭐',
        '• 10,000 tokens: 2000 ⭐',
        '',
        'Plans (a month at a time, renewed every 30 days until you cancel):',
        '• Basic, 1000 tokens a month: 400 ⭐ a month',
        '• Pro, 3000 tokens a month: 1000 ⭐ a month',
        '• VIP, 8000 tokens a month: 2500 ⭐ a month',
        '• Elite, 25000 tokens a month: 7500 ⭐ a month',
        '',
        'You pay with Telegram Stars. Help with payments and refunds: /paysupport',
      ].join('\n'),
    );
    expect(buttons(shop).map((b) => [b.text, b.callback_data])).toEqual([
      ['500 tokens · 150 ⭐', 'buy:tokens-500'],
      ['2,000 tokens · 500 ⭐', 'buy:tokens-2000'],
      ['10,000 tokens · 2000 ⭐', 'buy:tokens-10000'],
      ['Basic · 400 ⭐/month', 'buy:basic-monthly'],
      ['Pro · 1000 ⭐/month', 'buy:pro-monthly'],
      ['VIP · 2500 ⭐/month', 'buy:vip-monthly'],
      ['Elite · 7500 ⭐/month', 'buy:elite-monthly'],
    ]);
  });

  it('speaks Russian to a Russian speaker, and is the main menu\'s button too', async () => {
    const ivan = person('ru');
    tg.message(ivan, '/start');
    const greeting = await nthMessage(ivan.id, 1);
    expect(buttons(greeting).find((b) => b.callback_data === 'menu:buy')).toMatchObject({ text: '⭐ Купить токены', callback_data: 'menu:buy' });
    tg.press(ivan, 'menu:buy');
    const shop = textOf(await nthMessage(ivan.id, 2));
    expect(shop).toMatch(/^Пакеты токенов \(бонусные токены, не сгорают\):\n• 500 tokens: 150 ⭐\n/);
    expect(shop).toContain('• Pro, 3000 токенов в месяц: 1000 ⭐ в месяц');
    expect(shop).toMatch(/Оплата звёздами Telegram\. Помощь с оплатой и возвраты: \/paysupport$/);
  });

  it('sends a pack as an invoice in XTR with an empty provider token and one price', async () => {
    const bea = person('en');
    const userId = await signedUp(bea);
    const invoice = await invoiceFor(tg, bea, 'tokens-500');
    expect(invoice).toMatchObject({ chat_id: bea.id, currency: 'XTR', total_amount: 150, title: '500 tokens', payload: `s1:tokens-500:${userId}` });
    expect(invoice.subscription_period).toBeUndefined();
    const call = tg.callsOf('sendInvoice', bea.id).at(-1) as RecordedCall;
    expect(call.params).toMatchObject({ currency: 'XTR', provider_token: '', prices: [{ label: '500 tokens', amount: 150 }] });
    expect(Buffer.byteLength(String(call.params.payload))).toBeLessThanOrEqual(128);
  });

  it('sends a plan as a button with a subscription invoice link (30 days)', async () => {
    const cid = person('en');
    const userId = await signedUp(cid);
    const invoice = await invoiceFor(tg, cid, 'pro-monthly');
    expect(invoice).toMatchObject({ currency: 'XTR', total_amount: 1000, subscription_period: 2_592_000, title: 'Pro plan', payload: `s1:pro-monthly:${userId}` });
    expect(tg.callsOf('createInvoiceLink').at(-1)?.params).toMatchObject({ provider_token: '', prices: [{ label: 'Pro plan', amount: 1000 }], subscription_period: 2_592_000 });
    const offer = await nthMessage(cid.id, 2);
    expect(textOf(offer)).toMatch(/^Subscribe to Pro for 1000 ⭐ a month\./);
    expect(buttons(offer)).toEqual([{ text: '⭐ Subscribe for 1000 ⭐', url: invoice.link }]);
  });

  it('refuses the button of a plan below the running one, without an invoice', async () => {
    const dee = person('en');
    const userId = await signedUp(dee);
    await app.container.users.setPlan(userId, 'vip');
    const links = tg.callsOf('createInvoiceLink').length;
    tg.press(dee, 'buy:basic-monthly');
    expect(textOf(await nthMessage(dee.id, 2))).toBe('You have a higher plan running now; you can buy this one once it ends.');
    expect(tg.callsOf('createInvoiceLink')).toHaveLength(links);
  });
});

describe('paying for a pack', () => {
  it('answers the pre-checkout query ok in the handler, then credits the pack once and says so', async () => {
    const eve = person('en');
    const userId = await signedUp(eve);
    const invoice = await invoiceFor(tg, eve, 'tokens-500');
    // No worker runs in this app: an answer behind the job queue would never come.
    const { answer, charge } = await tg.checkout(eve, invoice);
    expect(answer).toEqual({ ok: true });
    expect(textOf(await nthMessage(eve.id, 2))).toBe('Thank you! 500 bonus tokens added. You now have 550 tokens.');
    expect(await telegramUser(app, eve.id)).toMatchObject({ bonusTokens: 500, subscriptionTokens: 50 });
    const [payment] = await paymentsOfCharge(app, charge?.id ?? '');
    expect(payment).toMatchObject({ userId, productId: 'tokens-500', kind: 'tokens', tokens: 500, amount: 150, currency: 'XTR', status: 'credited' });
    expect(await rowsOfPayment(app, `telegram:${charge?.id}`)).toHaveLength(1);
  });

  it('credits once when Telegram delivers the same successful_payment again (and again)', async () => {
    const fay = person('en');
    await signedUp(fay);
    const invoice = await invoiceFor(tg, fay, 'tokens-2000');
    const { charge, update } = tg.pay(fay, invoice);
    await nthMessage(fay.id, 2);
    tg.redeliver(update);
    tg.redeliver(update);
    await tg.waitFor(() => !tg.hasRedeliveries());
    // A marker after the redeliveries: once it is answered, they were handled.
    tg.message(fay, '/paysupport');
    await tg.waitFor(() => tg.callsOf('sendMessage', fay.id).find((c) => textOf(c).startsWith('Help with payments')));
    expect(await paymentsOfCharge(app, charge.id)).toHaveLength(1);
    expect(await rowsOfPayment(app, `telegram:${charge.id}`)).toHaveLength(1);
    expect((await telegramUser(app, fay.id)).bonusTokens).toBe(2000);
    // Thanked once.
    expect(tg.callsOf('sendMessage', fay.id).filter((c) => textOf(c).startsWith('Thank you!'))).toHaveLength(1);
  });

  it('credits a payment that arrives while a dialog waits for text, instead of the dialog taking it', async () => {
    const gus = person('en');
    await signedUp(gus);
    const invoice = await invoiceFor(tg, gus, 'tokens-500');
    tg.message(gus, '/redeem');
    expect(textOf(await nthMessage(gus.id, 2))).toBe('Send me the code to redeem:');
    await tg.checkout(gus, invoice);
    expect(textOf(await nthMessage(gus.id, 3))).toBe('Thank you! 500 bonus tokens added. You now have 550 tokens.');
  });
});

describe('payments that are not the usual private purchase', () => {
  it('credits a payment made in a group from an invoice sent there, though it neither mentions nor answers the bot', async () => {
    const lou = person('en');
    const userId = await signedUp(lou);
    const group = { id: -7001, type: 'group' as const, title: 'Friends' };
    tg.message(lou, '/buy@gensvc_test_bot', group);
    await tg.waitFor(() => tg.callsOf('sendMessage', group.id)[0]);
    tg.press(lou, 'buy:tokens-500', 1, group);
    const invoice = await tg.waitFor(() => tg.stars.invoices.find((i) => i.chat_id === group.id));
    expect(invoice.payload).toBe(`s1:tokens-500:${userId}`);
    const { charge, update } = tg.stars.charge(lou, invoice);
    tg.push({ message: { ...(update.message as Record<string, unknown>), chat: group } });
    await tg.waitFor(() => tg.callsOf('sendMessage', group.id).find((c) => textOf(c).startsWith('Thank you! 500 bonus tokens added.')));
    expect(await paymentsOfCharge(app, charge.id)).toHaveLength(1);
  });

  it('credits nothing for a product gone from the file by the time the payment arrives, and sends the person to /paysupport', async () => {
    const max = person('en');
    const userId = await signedUp(max);
    const { charge } = tg.pay(max, { payload: `s1:tokens-retired:${userId}`, currency: 'XTR', total_amount: 150 });
    expect(textOf(await nthMessage(max.id, 2))).toBe('Your payment arrived but I could not credit it. Send /paysupport: you will get your Stars back.');
    expect(await paymentsOfCharge(app, charge.id)).toHaveLength(0);
    expect(await telegramUser(app, max.id)).toMatchObject({ bonusTokens: 0, subscriptionTokens: 50 });
  });
});

describe('the pre-checkout refusals', () => {
  async function refusal(who: TgUser, query: { payload: string; total_amount: number; currency?: string }): Promise<string | undefined> {
    const charges = tg.stars.charges.size;
    const { answer } = await tg.checkout(who, { title: 't', description: 'd', currency: query.currency ?? 'XTR', payload: query.payload, total_amount: query.total_amount });
    expect(answer.ok).toBe(false);
    expect(tg.stars.charges.size).toBe(charges);
    return answer.error_message;
  }

  it('refuses a product no longer sold, a changed price, another account\'s invoice, a downgrade and a payload not ours', async () => {
    const hal = person('en');
    const userId = await signedUp(hal);
    expect(await refusal(hal, { payload: `s1:tokens-gone:${userId}`, total_amount: 150 })).toBe('This product is no longer sold. Send /buy to see what is.');
    expect(await refusal(hal, { payload: `s1:tokens-500:${userId}`, total_amount: 100 })).toBe('The price has changed since this invoice was made. Send /buy for a new one.');
    expect(await refusal(hal, { payload: 's1:tokens-500:999999', total_amount: 150 })).toBe('This invoice was made for another account. Send /buy for your own.');
    expect(await refusal(hal, { payload: 'not-ours', total_amount: 150 })).toBe('This invoice is no longer valid. Send /buy for a new one.');
    expect(await refusal(hal, { payload: `s1:tokens-500:${userId}`, total_amount: 150, currency: 'USD' })).toBe('This invoice is no longer valid. Send /buy for a new one.');
    // An invoice for Basic made while free, paid once Pro runs.
    const basic = await invoiceFor(tg, hal, 'basic-monthly');
    await app.container.users.setPlan(userId, 'pro');
    expect(await refusal(hal, basic)).toBe('You have a higher plan running now; you can buy this one once it ends.');
    expect(await app.container.db.repo(Payment).countBy({ userId })).toBe(0);
  });

  it('refuses a forwarded invoice link paid by someone else, in the payer\'s language', async () => {
    const owner = person('en');
    await signedUp(owner);
    const invoice = await invoiceFor(tg, owner, 'tokens-500');
    const olga = person('ru');
    await signedUp(olga);
    expect(await refusal(olga, invoice)).toBe('Этот счёт выставлен другому аккаунту. Отправьте /buy, чтобы получить свой.');
    expect(await refusal(olga, { payload: invoice.payload, total_amount: 99 })).toBe('Этот счёт выставлен другому аккаунту. Отправьте /buy, чтобы получить свой.');
  });

  it('answers in Russian when the payer speaks Russian', async () => {
    const pyotr = person('ru');
    const userId = await signedUp(pyotr);
    expect(await refusal(pyotr, { payload: `s1:tokens-500:${userId}`, total_amount: 1 })).toBe('С тех пор как выставлен счёт, цена изменилась. Отправьте /buy, чтобы получить новый.');
  });
});

describe('a plan subscription', () => {
  it('starts the plan with the first payment and extends it once per renewal, each with its own charge', async () => {
    const ida = person('en');
    const userId = await signedUp(ida);
    const invoice = await invoiceFor(tg, ida, 'basic-monthly');
    const { charge: first } = await tg.checkout(ida, invoice);
    const now = app.clock.now();
    const month1 = addMonths(now, 1);
    expect(textOf(await nthMessage(ida.id, 3))).toBe(`Thank you! Your plan is Basic until ${month1.toISOString().slice(0, 10)}. You have 1000 tokens.`);
    expect(await telegramUser(app, ida.id)).toMatchObject({ plan: 'basic', planExpiresAt: month1 });

    const renewal = tg.pay(ida, invoice, first);
    const month2 = addMonths(month1, 1);
    expect(textOf(await nthMessage(ida.id, 4))).toBe(`Your Basic subscription is renewed: the plan runs until ${month2.toISOString().slice(0, 10)}. You have 1000 tokens.`);
    tg.redeliver(renewal.update);
    await tg.waitFor(() => !tg.hasRedeliveries());
    const second = tg.pay(ida, invoice, first);
    const month3 = addMonths(month2, 1);
    await nthMessage(ida.id, 5);
    expect(await telegramUser(app, ida.id)).toMatchObject({ plan: 'basic', planExpiresAt: month3 });
    const payments = await app.container.db.repo(Payment).find({ where: { userId }, order: { id: 'ASC' } });
    expect(payments.map((p) => [p.externalId, p.planUntil?.toISOString()])).toEqual([
      [first?.id, month1.toISOString()],
      [renewal.charge.id, month2.toISOString()],
      [second.charge.id, month3.toISOString()],
    ]);
    for (const p of payments) expect(await rowsOfPayment(app, `telegram:${p.externalId}`)).toHaveLength(1);
  });

  it('gives back the Stars of a renewal below the plan running now, and cancels that subscription', async () => {
    const jon = person('en');
    const userId = await signedUp(jon);
    const invoice = await invoiceFor(tg, jon, 'basic-monthly');
    const { charge: first } = await tg.checkout(jon, invoice);
    await nthMessage(jon.id, 3);
    await app.container.users.setPlan(userId, 'pro');
    const renewal = tg.pay(jon, invoice, first);
    expect(textOf(await nthMessage(jon.id, 4))).toBe('Your Basic subscription renewed while a higher plan is running, so I gave the Stars back and cancelled that subscription.');
    expect(renewal.charge).toMatchObject({ refunded: true, canceled: true });
    expect(await paymentsOfCharge(app, renewal.charge.id)).toHaveLength(0);
    expect(await telegramUser(app, jon.id)).toMatchObject({ plan: 'pro' });
  });
});

describe('/paysupport and the command list', () => {
  it('says how to get help and refunds, in the person\'s language', async () => {
    const kim = person('en');
    tg.message(kim, '/paysupport');
    const en = textOf(await nthMessage(kim.id, 1));
    expect(en).toMatch(/^Help with payments\n/);
    expect(en).toContain('write to @gensvc_help with the date and what you bought');
    expect(en).toContain('A refund returns the Stars to you');
    const lev = person('ru');
    tg.message(lev, '/paysupport');
    const ru = textOf(await nthMessage(lev.id, 1));
    expect(ru).toMatch(/^Помощь с оплатой\n/);
    expect(ru).toContain('напишите @gensvc_help');
  });

  it('registers /buy and /paysupport in both languages, and asks Telegram for pre-checkout queries', () => {
    const lists = tg.callsOf('setMyCommands').map((c) => c.params.commands as Array<{ command: string; description: string }>);
    expect(lists.map((l) => l.find((c) => c.command === 'buy')?.description)).toEqual(expect.arrayContaining(['Buy tokens or a plan with Stars', 'Купить токены или тариф за звёзды']));
    expect(lists.map((l) => l.find((c) => c.command === 'paysupport')?.description)).toEqual(
      expect.arrayContaining(['Help with payments and refunds', 'Помощь с оплатой и возвраты']),
    );
    expect(ALLOWED_UPDATES).toContain('pre_checkout_query');
  });
});
