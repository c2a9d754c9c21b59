/**
 * Telegram Stars beyond the purchase: the same `successful_payment` posted at once to two web
 * processes (webhook mode, one store) credits once; `admin refund-stars` refunds through the Bot
 * API and reverses once (Telegram's "already refunded" counts as refunded), the chat's
 * `refunded_payment` reverses nothing twice; `admin reconcile-stars` pages through Telegram's
 * transactions and lists each planted mismatch. The ledger audit is clean after every test.
 */
import http from 'node:http';
import { createApp } from '../api/app';
import { startBot } from '../bot/run';
import { BotWebhook, createBotWebhook } from '../bot/webhook';
import { runAdminCommand, UsageError } from '../cli/admin-commands';
import { loadConfig } from '../shared/config';
import { buildContainer, Container } from '../shared/container';
import { Payment } from '../shared/db/entities';
import type { Stoppable } from '../shared/lifecycle';
import { startTestApp, TestApp } from './helpers/app';
import { freePort } from './helpers/child-process';
import { FakeTelegram, RecordedCall, TgUser } from './helpers/fake-telegram';
import { expectAuditClean, rowsOfPayment } from './helpers/payments';
import { invoiceFor, paymentsOfCharge } from './helpers/stars';
import { telegramUser } from './helpers/telegram-accounts';

const TOKEN = '123456:TEST-token';
let nextId = 41_000;
function person(language_code = 'en'): TgUser {
  const id = nextId++;
  return { id, is_bot: false, first_name: 'Rae', username: `refund${id}`, language_code };
}
const textOf = (call: RecordedCall) => String(call.params.text);

describe('one successful_payment posted to two web processes at once', () => {
  const tg = new FakeTelegram();
  const hookPath = '/telegram/stars-hook';
  let app: TestApp;
  let other: Container;
  const hooks: BotWebhook[] = [];
  const servers: http.Server[] = [];
  const urls: string[] = [];

  async function webProcess(container: Container, port: number): Promise<void> {
    const webhook = createBotWebhook(container);
    const server = http.createServer(createApp(container, { extraRoutes: [webhook.middleware] }).callback());
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
    expect(await webhook.register()).toBe(true);
    hooks.push(webhook);
    servers.push(server);
    urls.push(`http://127.0.0.1:${port}${hookPath}`);
  }

  beforeAll(async () => {
    await tg.start();
    const [portA, portB] = [await freePort(), await freePort()];
    const env = { TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_ROOT: tg.url, BOT_WEBHOOK_URL: `http://127.0.0.1:${portA}${hookPath}` };
    app = await startTestApp(env);
    // A second web process: its own container on the same database (and Redis).
    other = await buildContainer(loadConfig({ ...app.stores.env, ...env }), { clock: app.clock.now });
    await webProcess(app.container, portA);
    await webProcess(other, portB);
  });

  afterAll(async () => {
    for (const server of servers) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    for (const hook of hooks) await hook.stop();
    await other?.close();
    await app?.close();
    await tg.stop();
  });

  afterEach(() => expectAuditClean(app));

  it('credits once, with one ledger row and one thank-you, whichever process and however many times', async () => {
    const max = person('en');
    tg.message(max, '/start');
    await tg.waitFor(() => tg.callsOf('sendMessage', max.id)[0]);
    const invoice = await invoiceFor(tg, max, 'tokens-500');
    const { answer } = await tg.checkout(max, { ...invoice });
    expect(answer.ok).toBe(true);
    await tg.waitFor(() => tg.callsOf('sendMessage', max.id).find((c) => textOf(c).startsWith('Thank you!')));
    // A second purchase whose update reaches A, B, A and B at once.
    const second = tg.stamp(tg.stars.charge(max, invoice).update);
    const paid = (second.message as { successful_payment: Record<string, unknown> }).successful_payment;
    const statuses = await tg.deliverTo(second, [urls[0] as string, urls[1] as string, urls[0] as string, urls[1] as string]);
    expect(statuses).toEqual([200, 200, 200, 200]);
    const chargeId = String(paid.telegram_payment_charge_id);
    expect(await paymentsOfCharge(app, chargeId)).toHaveLength(1);
    expect(await rowsOfPayment(app, `telegram:${chargeId}`)).toHaveLength(1);
    expect((await telegramUser(app, max.id)).bonusTokens).toBe(1000);
    expect(tg.callsOf('sendMessage', max.id).filter((c) => textOf(c).startsWith('Thank you!'))).toHaveLength(2);
  });

  it('answers the pre-checkout query in the handler, before Telegram gets its 200', async () => {
    const neo = person('en');
    const { id: userId } = (await app.container.messenger.findOrCreateUser({ telegramId: neo.id, firstName: neo.first_name })).user;
    const { id, update } = tg.stars.preCheckoutQuery(neo, { currency: 'XTR', total_amount: 150, payload: `s1:tokens-500:${userId}` });
    expect(await tg.deliverTo(tg.stamp(update), [urls[1] as string])).toEqual([200]);
    expect(tg.stars.answers.get(id)).toEqual({ ok: true });
  });
});

describe('admin refund-stars and reconcile-stars', () => {
  const tg = new FakeTelegram();
  let app: TestApp;
  let bot: Stoppable;

  beforeAll(async () => {
    await tg.start();
    app = await startTestApp({ TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_ROOT: tg.url });
    bot = await startBot(app.container);
  });

  afterAll(async () => {
    await bot?.stop();
    await app?.close();
    await tg.stop();
  });

  afterEach(() => expectAuditClean(app));

  const admin = (...args: string[]) => runAdminCommand(app.container, args) as Promise<Record<string, unknown>>;

  /** A person who bought `productId`: their account id and the charge. */
  async function bought(who: TgUser, productId: string) {
    tg.message(who, '/start');
    await tg.waitFor(() => tg.callsOf('sendMessage', who.id)[0]);
    const invoice = await invoiceFor(tg, who, productId);
    const { charge } = await tg.checkout(who, invoice);
    if (!charge) throw new Error('the checkout was refused');
    await tg.waitFor(() => tg.callsOf('sendMessage', who.id).find((c) => textOf(c).startsWith('Thank you!')));
    return { userId: (await telegramUser(app, who.id)).id, charge, invoice };
  }

  /** Waits until the bot handled everything sent so far to this chat (a /paysupport marker answered). */
  async function settled(who: TgUser): Promise<void> {
    const before = tg.callsOf('sendMessage', who.id).filter((c) => textOf(c).startsWith('Help with payments')).length;
    tg.message(who, '/paysupport');
    await tg.waitFor(() => tg.callsOf('sendMessage', who.id).filter((c) => textOf(c).startsWith('Help with payments')).length > before);
  }

  it('refunds a pack and takes back what is left of it once (the rest is shortfall); a second refund changes nothing', async () => {
    const ola = person('en');
    const { userId, charge } = await bought(ola, 'tokens-500');
    // 400 of the 500 bonus tokens are spent.
    await app.container.users.grantTokens(userId, -400);
    const refund = await admin('refund-stars', '--charge', charge.id);
    expect(refund).toMatchObject({
      charge_id: charge.id,
      telegram_user_id: ola.id,
      telegram: 'refunded',
      reversal: 'reversed',
      payment: { status: 'reversed', tokens: 500, reversed_tokens: 150, shortfall_tokens: 350 },
    });
    expect(charge.refunded).toBe(true);
    expect(await telegramUser(app, ola.id)).toMatchObject({ bonusTokens: 0, subscriptionTokens: 0 });
    // Telegram's refunded_payment message reaches the bot: already reversed, nothing more.
    await settled(ola);
    expect(await admin('refund-stars', '--charge', charge.id)).toMatchObject({ telegram: 'already_refunded', reversal: 'already_reversed' });
    expect((await rowsOfPayment(app, `telegram:${charge.id}`)).map((r) => r.reason)).toEqual(['purchase', 'refund']);
    expect(tg.callsOf('refundStarPayment').filter((c) => c.params.telegram_payment_charge_id === charge.id)).toHaveLength(2);
  });

  it('treats Telegram\'s CHARGE_ALREADY_REFUNDED as refunded and still reverses, once', async () => {
    const pia = person('en');
    const { charge } = await bought(pia, 'tokens-2000');
    // Refunded outside this service (and its message lost): Telegram has it, the payment not.
    tg.stars.notifyRefunds = false;
    tg.stars.refund(charge);
    tg.stars.notifyRefunds = true;
    expect(await admin('refund-stars', '--charge', charge.id)).toMatchObject({ telegram: 'already_refunded', reversal: 'reversed', payment: { reversed_tokens: 2000, shortfall_tokens: 0 } });
    expect(await admin('refund-stars', '--charge', charge.id)).toMatchObject({ telegram: 'already_refunded', reversal: 'already_reversed' });
    expect(await rowsOfPayment(app, `telegram:${charge.id}`)).toHaveLength(2);
  });

  it('reverses a refund Telegram announces in the chat (refunded_payment), once', async () => {
    const quinn = person('en');
    const { charge } = await bought(quinn, 'tokens-500');
    tg.stars.refund(charge);
    await settled(quinn);
    expect(await paymentsOfCharge(app, charge.id)).toEqual([expect.objectContaining({ status: 'reversed', reversedTokens: 500 })]);
    expect(await rowsOfPayment(app, `telegram:${charge.id}`)).toHaveLength(2);
  });

  it('ends a refunded plan month', async () => {
    const rob = person('en');
    const { charge } = await bought(rob, 'pro-monthly');
    expect((await telegramUser(app, rob.id)).plan).toBe('pro');
    expect(await admin('refund-stars', '--charge', charge.id)).toMatchObject({ telegram: 'refunded', reversal: 'reversed', plan_effect: 'ended' });
    await settled(rob);
    expect(await telegramUser(app, rob.id)).toMatchObject({ plan: 'free', planExpiresAt: null });
  });

  it('says in /paysupport to contact the operator when no support contact is set', async () => {
    const tia = person('en');
    tg.message(tia, '/paysupport');
    const text = textOf(await tg.waitFor(() => tg.callsOf('sendMessage', tia.id)[0]));
    expect(text).toContain('If a purchase did not arrive, or you want a refund, contact the operator of this bot with the date and what you bought.');
  });

  it('refuses an unknown charge, and reverses nothing when Telegram refuses the refund', async () => {
    await expect(admin('refund-stars', '--charge', 'stxNOPE')).rejects.toThrow(UsageError);
    await expect(admin('refund-stars', '--charge', 'stxNOPE', '--telegram-user', '123')).rejects.toThrow(/Telegram refused the refund \(nothing reversed\): Bad Request: CHARGE_NOT_FOUND/);
    await expect(admin('refund-stars')).rejects.toThrow(/--charge is required/);
    await expect(admin('refund-stars', '--charge', 'x', '--telegram-user', '-5')).rejects.toThrow(UsageError);
  });

  it('reconciles: clean at first; then lists a charge never credited, a refund not reversed and a payment Telegram does not have, over several pages', async () => {
    expect(await admin('reconcile-stars')).toMatchObject({ ok: true, mismatches: [] });
    const sue = person('en');
    const { userId, charge: refundedElsewhere, invoice } = await bought(sue, 'tokens-500');
    // More than a page of Telegram transactions, each credited.
    for (let i = 0; i < 100; i++) {
      const { charge } = tg.stars.charge(sue, invoice);
      await app.container.payments.creditPurchase({ provider: 'telegram', externalId: charge.id, userId, productId: 'tokens-500', paid: { amount: 150, currency: 'XTR' } });
    }
    const lost = tg.stars.charge(sue, invoice).charge;
    tg.stars.notifyRefunds = false;
    tg.stars.refund(refundedElsewhere);
    tg.stars.notifyRefunds = true;
    await app.container.payments.creditPurchase({ provider: 'telegram', externalId: 'stxNOT-AT-TELEGRAM', userId, productId: 'tokens-500', paid: { amount: 150, currency: 'XTR' } });

    const report = await admin('reconcile-stars');
    expect(report.ok).toBe(false);
    const mismatches = report.mismatches as Array<Record<string, unknown>>;
    expect(mismatches).toHaveLength(3);
    expect(mismatches).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: 'charge_not_credited', charge_id: lost.id, telegram_user_id: sue.id, telegram_amount: 150, invoice_payload: invoice.payload }),
        expect.objectContaining({ kind: 'refund_not_reversed', charge_id: refundedElsewhere.id, user_id: userId }),
        expect.objectContaining({ kind: 'payment_unknown_to_telegram', charge_id: 'stxNOT-AT-TELEGRAM', user_id: userId }),
      ]),
    );
    const offsets = tg.callsOf('getStarTransactions').slice(-2).map((c) => Number(c.params.offset ?? 0));
    expect(offsets).toEqual([0, 100]);
    // Put right: the refund reversed, the stray payment refunded away.
    await admin('refund-stars', '--charge', refundedElsewhere.id);
    await app.container.payments.reverse({ provider: 'telegram', externalId: 'stxNOT-AT-TELEGRAM' });
    const after = await admin('reconcile-stars');
    expect((after.mismatches as Array<{ kind: string }>).map((m) => m.kind).sort()).toEqual(['charge_not_credited', 'payment_unknown_to_telegram']);
    expect(await app.container.db.repo(Payment).countBy({ userId })).toBe(102);
  });
});
