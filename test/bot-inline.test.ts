/**
 * Inline mode (`@bot prompt` in any chat), through a Bot API that behaves like Telegram's: the
 * query is answered with a chat answer and an image, priced in their descriptions (the pricing
 * entry point's figures) and charged to nobody; the result the person sends is generated once and
 * billed once to them, however often its `chosen_inline_result` arrives; the sent inline message
 * is edited into the answer or the image (fetched by Telegram from its public URL); a query that
 * can only be refused is answered with one result saying why, and nothing is charged.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { startBot } from '../bot/run';
import { INLINE_CACHE_SECONDS } from '../bot/handlers/inline';
import { User } from '../shared/db/entities';
import type { Stoppable } from '../shared/lifecycle';
import { counted } from '../shared/telegram/plurals';
import { startTestApp, TestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { FakeTelegram, TgUser } from './helpers/fake-telegram';
import type { InlineAnswer } from './helpers/fake-telegram-inline';
import { telegramCharges, telegramGenerations, telegramUser } from './helpers/telegram-accounts';

const fake = new FakeProvider('fake');
const tg = new FakeTelegram();
let app: TestApp;
let bot: Stoppable;
// PUBLIC_BASE_URL must be known before the app starts: this front door listens first and hands
// requests to the app once it runs (Telegram fetches inline images from there).
let appHandler: http.RequestListener | null = null;
const front = http.createServer((req, res) => (appHandler ? appHandler(req, res) : res.writeHead(503).end()));

beforeAll(async () => {
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', () => resolve()));
  const publicBaseUrl = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
  await tg.start();
  app = await startTestApp({ CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json'), TELEGRAM_BOT_TOKEN: '123456:TEST-token', TELEGRAM_API_ROOT: tg.url, PUBLIC_BASE_URL: publicBaseUrl }, { providers: [fake.adapter()], worker: true });
  appHandler = app.server.listeners('request')[0] as http.RequestListener;
  bot = await startBot(app.container);
});

afterAll(async () => {
  await bot?.stop();
  await app?.close();
  await tg.stop();
  front.closeAllConnections();
  await new Promise<void>((resolve) => front.close(() => resolve()));
});

let nextId = 93_000;
function person(language_code = 'en', first_name = 'Ann'): TgUser {
  const id = nextId++;
  return { id, is_bot: false, first_name, username: `in${id}`, language_code };
}

/** The person types `@bot query`; resolves with the bot's answer. */
async function ask(from: TgUser, query: string): Promise<{ id: string; answer: InlineAnswer }> {
  const { id } = tg.inline.query(from, query);
  const answer = await tg.waitFor(() => tg.inline.answers.get(id));
  return { id, answer };
}

function resultOf(answer: InlineAnswer, prefix: 'c' | 'i'): Record<string, unknown> & { id: string; title: string; description: string } {
  const result = answer.results.find((r) => String(r.id).startsWith(`${prefix}:`));
  if (!result) throw new Error(`no ${prefix} result in ${JSON.stringify(answer.results)}`);
  return result as Record<string, unknown> & { id: string; title: string; description: string };
}

/** What the pricing entry point says the offered model costs for this prompt. */
function priceOf(resultId: string, prompt: string): number {
  const [kind, slug] = resultId.split(':');
  const request = kind === 'c' ? { model: slug, messages: [{ role: 'user' as const, content: prompt }], topLevel: {} } : { model: slug, prompt, topLevel: {} };
  return app.container.generations.price(request, { whole: true }).price;
}

async function balanceOf(telegramId: number): Promise<number> {
  const user = await telegramUser(app, telegramId);
  return user.subscriptionTokens + user.bonusTokens - user.heldTokens;
}

describe('an inline query', () => {
  it('is answered with a chat answer and an image, each with its exact price, personal and briefly cached, charging nothing (en)', async () => {
    const ann = person('en', 'Ann');
    const { answer } = await ask(ann, 'a red fox in the snow');
    expect(answer.is_personal).toBe(true);
    expect(answer.cache_time).toBe(INLINE_CACHE_SECONDS);
    expect(answer.cache_time).toBeLessThanOrEqual(30);
    const chat = resultOf(answer, 'c');
    const image = resultOf(answer, 'i');
    expect(chat.id).toBe('c:fake-text');
    expect(image.id).toBe('i:fake-image');
    expect(chat.title).toBe('💬 Answer: a red fox in the snow');
    expect(image.title).toBe('🖼 Image: a red fox in the snow');
    const chatPrice = priceOf(chat.id, 'a red fox in the snow');
    const imagePrice = priceOf(image.id, 'a red fox in the snow');
    expect([chatPrice, imagePrice]).toEqual([2, 4]);
    expect(chat.description).toBe(`Fake text · ${counted('en', chatPrice, 'token')} · balance 50 tokens`);
    expect(image.description).toBe(`Fake image · ${counted('en', imagePrice, 'token')} · balance 50 tokens`);
    // Each sends a placeholder with a button: without a keyboard Telegram names no inline message to edit.
    expect((chat.reply_markup as { inline_keyboard: unknown[][] }).inline_keyboard[0]).toHaveLength(1);
    expect(await telegramGenerations(app, ann.id)).toHaveLength(0);
    expect(await balanceOf(ann.id)).toBe(50);
  });

  it('is answered in Russian for a Russian-speaking person, with the same prices', async () => {
    const ivan = person('ru', 'Иван');
    const { answer } = await ask(ivan, 'рыжая лиса');
    const chat = resultOf(answer, 'c');
    const image = resultOf(answer, 'i');
    expect(chat.title).toBe('💬 Ответ: рыжая лиса');
    expect(image.title).toBe('🖼 Картинка: рыжая лиса');
    expect(chat.description).toBe(`Fake text · ${counted('ru', priceOf(chat.id, 'рыжая лиса'), 'token')} · на балансе 50 токенов`);
    expect(image.description).toBe(`Fake image · ${counted('ru', priceOf(image.id, 'рыжая лиса'), 'token')} · на балансе 50 токенов`);
    expect(image.description).toContain('4 токена');
    expect(await telegramGenerations(app, ivan.id)).toHaveLength(0);
  });

  it('that is empty is answered with a button into the bot, no results', async () => {
    const bo = person('en', 'Bo');
    const { answer } = await ask(bo, '   ');
    expect(answer.results).toEqual([]);
    expect(answer.button).toEqual({ text: 'Type a question or a picture to make', start_parameter: 'inline' });
  });
});

describe('a chosen inline result', () => {
  it('an image: generated once, billed once to the asker even when the choice is delivered again, and the inline message becomes the image', async () => {
    const cy = person('en', 'Cy');
    const { id } = await ask(cy, 'a lighthouse at dusk');
    const { update, inlineMessageId } = tg.inline.choose(id, 'i:fake-image');
    expect(inlineMessageId).toBeDefined();
    // Telegram delivers the same update again (a lost confirmation).
    tg.redeliver(update);
    const message = await tg.waitFor(() => tg.inline.messages.get(inlineMessageId ?? '')?.photo && tg.inline.messages.get(inlineMessageId ?? ''));
    expect(message.photo?.contentType).toBe('image/png');
    expect(message.photo?.bytes.subarray(1, 4).toString()).toBe('PNG');
    expect(message.photo?.caption).toBe('🖼 a lighthouse at dusk');
    // Telegram fetched it from the public files URL (no upload into an inline message).
    expect(message.photo?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/files\//);

    // Another choice afterwards: everything before it was handled by then.
    const again = await ask(cy, 'a second lighthouse');
    const second = tg.inline.choose(again.id, 'c:fake-text');
    await tg.waitFor(() => tg.inline.messages.get(second.inlineMessageId ?? '')?.text?.includes('Hello from the fake model'));
    const generations = await telegramGenerations(app, cy.id);
    expect(generations.map((g) => [g.modelSlug, g.status, g.price])).toEqual([
      ['fake-image', 'completed', 4],
      ['fake-text', 'completed', 2],
    ]);
    const charges = await telegramCharges(app, cy.id);
    expect(charges.map((c) => c.amount).sort()).toEqual([-4, -2].sort());
    expect(await balanceOf(cy.id)).toBe(50 - 4 - 2);
  });

  it('a chat answer: the inline message is edited into the answer, in the asker’s language', async () => {
    const olga = person('ru', 'Ольга');
    const { id } = await ask(olga, 'привет');
    const { inlineMessageId } = tg.inline.choose(id, 'c:fake-text');
    expect(tg.inline.messages.get(inlineMessageId ?? '')?.text).toBe('💬 привет\n\n⏳ Думаю…');
    const text = await tg.waitFor(() => {
      const shown = tg.inline.messages.get(inlineMessageId ?? '')?.text;
      return shown?.includes('Hello') ? shown : undefined;
    });
    expect(text).toBe('💬 привет\n\nHello from the fake model');
    expect((await telegramCharges(app, olga.id)).map((c) => c.amount)).toEqual([-2]);
  });

  it("is billed to the person who chose it: another person's query and choice never touch the first one's balance", async () => {
    const di = person('en', 'Di');
    const ed = person('en', 'Ed');
    await ask(di, 'hello');
    const { id } = await ask(ed, 'hello');
    const { inlineMessageId } = tg.inline.choose(id, 'i:fake-image');
    await tg.waitFor(() => tg.inline.messages.get(inlineMessageId ?? '')?.photo);
    expect(await telegramGenerations(app, di.id)).toHaveLength(0);
    expect(await balanceOf(di.id)).toBe(50);
    expect((await telegramGenerations(app, ed.id)).map((g) => g.modelSlug)).toEqual(['fake-image']);
    expect(await balanceOf(ed.id)).toBe(46);
  });
  it('that fails: the inline message says so, and nothing is charged', async () => {
    const jo = person('en', 'Jo');
    const { id } = await ask(jo, 'a forbidden thing');
    fake.next({ kind: 'refuse', message: 'the provider refused this prompt' });
    const { inlineMessageId } = tg.inline.choose(id, 'i:fake-image');
    const text = await tg.waitFor(() => {
      const shown = tg.inline.messages.get(inlineMessageId ?? '')?.text;
      return shown && !shown.includes('Drawing') ? shown : undefined;
    });
    expect(text).toMatch(/^a forbidden thing\n\n.*the provider refused this prompt/s);
    expect((await telegramGenerations(app, jo.id)).map((g) => g.status)).toEqual(['failed']);
    expect(await telegramCharges(app, jo.id)).toHaveLength(0);
    expect(await balanceOf(jo.id)).toBe(50);
  });
});

describe('an image Telegram cannot fetch', () => {
  it('turns the placeholder into where to find it, not "Drawing…" forever', async () => {
    const kim = person('en', 'Kim');
    const { id } = await ask(kim, 'a quiet harbour');
    // PUBLIC_BASE_URL unreachable for Telegram (a localhost default, a firewall).
    const handler = appHandler;
    appHandler = null;
    try {
      const { inlineMessageId } = tg.inline.choose(id, 'i:fake-image');
      const text = await tg.waitFor(() => {
        const shown = tg.inline.messages.get(inlineMessageId ?? '')?.text;
        return shown && !shown.includes('Drawing') ? shown : undefined;
      });
      expect(text).toBe('🖼 a quiet harbour\n\nThe image is ready, but Telegram could not fetch it from this server. Open the bot: /history sends it.');
    } finally {
      appHandler = handler;
    }
    expect((await telegramGenerations(app, kim.id)).map((g) => g.status)).toEqual(['completed']);
  });
});

describe('refusals', () => {
  it('a balance that covers nothing: one result saying so, and nothing charged', async () => {
    const fay = person('en', 'Fay');
    await ask(fay, 'warm up');
    const user = await telegramUser(app, fay.id);
    await app.container.db.repo(User).update({ id: user.id }, { subscriptionTokens: 1, bonusTokens: 0 });
    const { id, answer } = await ask(fay, 'a castle');
    expect(answer.results).toHaveLength(1);
    const [refusal] = answer.results;
    expect(refusal?.title).toBe('⚠️ Not available right now');
    expect(refusal?.description).toBe('An answer costs 2 tokens; you have 1 token. Nothing is charged.');
    expect(refusal?.reply_markup).toBeUndefined();
    expect(answer.button?.start_parameter).toBe('inline');
    // Sending the refusal itself starts nothing (no inline message id without a keyboard).
    tg.inline.choose(id, String(refusal?.id));
    const later = await ask(fay, 'after');
    expect(later.answer.results).toHaveLength(1);
    expect(await telegramGenerations(app, fay.id)).toHaveLength(0);
    expect(await balanceOf(fay.id)).toBe(1);
  });

  it('a balance that covers the answer but not the image: the answer is offered, the image says why', async () => {
    const gus = person('ru', 'Гус');
    await ask(gus, 'warm up');
    const user = await telegramUser(app, gus.id);
    await app.container.db.repo(User).update({ id: user.id }, { subscriptionTokens: 3, bonusTokens: 0 });
    const { answer } = await ask(gus, 'замок');
    expect(answer.results.map((r) => r.id)).toEqual(['c:fake-text', 'refused']);
    expect(answer.results[1]?.description).toBe('Картинка стоит 4 токена, у вас 3 токена. Ничего не списано.');
  });

  it("the plan's request limit: one result with when it resets, and nothing charged", async () => {
    const hal = person('en', 'Hal');
    await ask(hal, 'warm up');
    const user = await telegramUser(app, hal.id);
    const plan = app.container.plans.get('free');
    for (let i = 0; i < plan.hourlyLimit; i++) await app.container.generationLimiter.consume(user.id, plan);
    const { answer } = await ask(hal, 'a castle');
    expect(answer.results).toHaveLength(1);
    expect(String(answer.results[0]?.description)).toMatch(/request limit/i);
    expect(await balanceOf(hal.id)).toBe(50);
  });

  it('the balance spent between the offer and the choice: the inline message says so, nothing charged', async () => {
    const ivy = person('en', 'Ivy');
    const { id } = await ask(ivy, 'a bridge');
    const user = await telegramUser(app, ivy.id);
    await app.container.db.repo(User).update({ id: user.id }, { subscriptionTokens: 0, bonusTokens: 0 });
    const { inlineMessageId } = tg.inline.choose(id, 'i:fake-image');
    const text = await tg.waitFor(() => {
      const shown = tg.inline.messages.get(inlineMessageId ?? '')?.text;
      return shown && !shown.includes('Drawing') ? shown : undefined;
    });
    expect(text).toMatch(/^a bridge\n\n/);
    expect(text).toMatch(/token/);
    expect(await telegramGenerations(app, ivy.id)).toHaveLength(0);
    expect(await telegramCharges(app, ivy.id)).toHaveLength(0);
  });
});
