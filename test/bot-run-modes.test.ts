/**
 * How the bot runs: webhook mode (updates POSTed to the app with a secret, no poller), and long
 * polling with exactly one poller per token (a lease; a waiter takes over when the holder stops
 * or dies; a 409 from Telegram pauses polling instead of killing it). On both store pairs: the
 * lease lives in the `bot_state` table on SQLite and in Redis on MySQL+Redis.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import supertest from 'supertest';
import { createApp } from '../api/app';
import { BotPoller, startBot } from '../bot/run';
import { BotWebhook, createBotWebhook, SECRET_HEADER } from '../bot/webhook';
import { ConfigError, loadConfig } from '../shared/config';
import { BotState, Identity } from '../shared/db/entities';
import { createPollerLock, DatabasePollerLock, RedisPollerLock } from '../shared/telegram/poller-lock';
import { startTestApp, TestApp } from './helpers/app';
import { FakeTelegram, TgUser, Update } from './helpers/fake-telegram';
import { freePort, runEntry as run } from './helpers/child-process';
import { storeKind } from './helpers/stores';

const catalog = path.join(__dirname, 'fixtures/catalog.json');
const TOKEN = '123456:RUN-MODES-token';

let nextId = 91_000;
function person(first_name = 'Ann'): TgUser {
  const id = nextId++;
  return { id, is_bot: false, first_name, username: `mode${id}`, language_code: 'en' };
}

function startUpdate(from: TgUser, updateId: number): Update {
  return {
    update_id: updateId,
    message: {
      message_id: 1,
      date: Math.floor(Date.now() / 1000),
      chat: { id: from.id, type: 'private', first_name: from.first_name },
      from,
      text: '/start',
      entities: [{ type: 'bot_command', offset: 0, length: 6 }],
    },
  };
}


const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error('timed out');
    await sleep(20);
  }
}

async function hasUser(app: TestApp, telegramId: number): Promise<boolean> {
  return (await app.container.db.repo(Identity).countBy({ kind: 'messenger', subject: String(telegramId) })) > 0;
}

describe('the webhook secret in the config', () => {
  it('is derived from the token when BOT_WEBHOOK_SECRET is unset: stable, in Telegram’s alphabet, not the token', () => {
    const a = loadConfig({ TELEGRAM_BOT_TOKEN: TOKEN }).telegram.webhookSecret;
    const again = loadConfig({ TELEGRAM_BOT_TOKEN: TOKEN }).telegram.webhookSecret;
    const other = loadConfig({ TELEGRAM_BOT_TOKEN: '654321:other' }).telegram.webhookSecret;
    expect(a).toMatch(/^[A-Za-z0-9_-]{1,256}$/);
    expect(again).toBe(a);
    expect(other).not.toBe(a);
    expect(a).not.toContain('RUN-MODES');
    expect(loadConfig({}).telegram.webhookSecret).toBeUndefined();
  });

  it('takes BOT_WEBHOOK_SECRET when set, and refuses one Telegram would', () => {
    expect(loadConfig({ TELEGRAM_BOT_TOKEN: TOKEN, BOT_WEBHOOK_SECRET: 'my_Secret-42' }).telegram.webhookSecret).toBe('my_Secret-42');
    expect(() => loadConfig({ BOT_WEBHOOK_SECRET: 'not allowed!' })).toThrow(ConfigError);
    expect(() => loadConfig({ BOT_WEBHOOK_SECRET: 'x'.repeat(257) })).toThrow(/BOT_WEBHOOK_SECRET/);
  });
});

describe('webhook mode', () => {
  const tg = new FakeTelegram();
  const hookPath = '/telegram/hook-7f3a';
  let app: TestApp;
  let webhook: BotWebhook;
  let server: http.Server;

  beforeAll(async () => {
    await tg.start();
    const port = await freePort();
    app = await startTestApp({
      CATALOG_PATH: catalog,
      TELEGRAM_BOT_TOKEN: TOKEN,
      TELEGRAM_API_ROOT: tg.url,
      BOT_WEBHOOK_URL: `http://127.0.0.1:${port}${hookPath}`,
    });
    // As the entry points compose it: the API app with the bot's webhook mounted.
    webhook = createBotWebhook(app.container);
    server = http.createServer(createApp(app.container, { extraRoutes: [webhook.middleware] }).callback());
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
    expect(await webhook.register()).toBe(true);
  });

  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await webhook?.stop();
    await app?.close();
    await tg.stop();
  });

  it('sets the webhook with its secret at startup, registers the commands, and nobody polls', () => {
    const calls = tg.callsOf('setWebhook');
    expect(calls).toHaveLength(1);
    expect(calls[0]?.params).toMatchObject({
      url: app.container.config.telegram.webhookUrl,
      secret_token: app.container.config.telegram.webhookSecret,
      drop_pending_updates: false,
    });
    expect(calls[0]?.params.allowed_updates).toEqual(expect.arrayContaining(['message', 'callback_query']));
    expect(tg.callsOf('setMyCommands').length).toBeGreaterThan(0);
    expect(tg.polls).toBe(0);
  });

  it('handles an update Telegram POSTs with the secret: /start creates the user and answers', async () => {
    const ann = person('Ann');
    const update = tg.message(ann, '/start');
    const greeting = await tg.waitFor(() => tg.callsOf('sendMessage', ann.id)[0]);
    expect(greeting.params.text).toMatch(/^Hello, Ann!/);
    expect(await hasUser(app, ann.id)).toBe(true);
    await tg.waitFor(() => tg.webhookDeliveries.find((d) => d.updateId === update.update_id));
    expect(tg.webhookDeliveries.find((d) => d.updateId === update.update_id)?.status).toBe(200);
  });

  it('answers 401 to a wrong or missing secret and handles nothing', async () => {
    const eve = person('Eve');
    const secret = app.container.config.telegram.webhookSecret as string;
    const wrong = await supertest(server).post(hookPath).set(SECRET_HEADER, `${secret.slice(0, -1)}x`).send(startUpdate(eve, 990_001));
    expect(wrong.status).toBe(401);
    const missing = await supertest(server).post(hookPath).send(startUpdate(eve, 990_002));
    expect(missing.status).toBe(401);
    const empty = await supertest(server).post(hookPath).set(SECRET_HEADER, '').send(startUpdate(eve, 990_003));
    expect(empty.status).toBe(401);
    await sleep(300);
    expect(tg.callsOf('sendMessage', eve.id)).toHaveLength(0);
    expect(await hasUser(app, eve.id)).toBe(false);

    // The same update with the secret is handled: the refusals were about the secret alone.
    const right = await supertest(server).post(hookPath).set(SECRET_HEADER, secret).send(startUpdate(eve, 990_004));
    expect(right.status).toBe(200);
    await tg.waitFor(() => tg.callsOf('sendMessage', eve.id)[0]);
  });

  it('refuses a body that is not an update, and leaves other paths to the API', async () => {
    const secret = app.container.config.telegram.webhookSecret as string;
    expect((await supertest(server).post(hookPath).set(SECRET_HEADER, secret).send({ hello: 1 })).status).toBe(400);
    expect((await supertest(server).get('/health')).status).toBe(200);
    expect((await supertest(server).post('/telegram/other').set(SECRET_HEADER, secret).send(startUpdate(person(), 990_005))).status).toBe(404);
  });
});

describe('long polling: one poller per token', () => {
  const tg = new FakeTelegram();
  let app: TestApp;
  const pollers: BotPoller[] = [];
  const fast = { leaseMs: 900, retryMs: 50, conflictBackoffMs: 100 };

  async function poller(options = fast): Promise<BotPoller> {
    const p = await startBot(app.container, options);
    pollers.push(p);
    return p;
  }

  beforeAll(async () => {
    await tg.start();
    app = await startTestApp({ CATALOG_PATH: catalog, TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_ROOT: tg.url });
  });

  afterEach(async () => {
    for (const p of pollers.splice(0)) await p.stop();
  });

  afterAll(async () => {
    await app?.close();
    await tg.stop();
  });

  it('lets only one of two pollers on the same token poll; the other takes over when it stops', async () => {
    const first = await poller();
    const second = await poller();
    expect(first.isPolling()).toBe(true);
    expect(second.isPolling()).toBe(false);
    // Several of the waiter's retries and the holder's renewals: still one poller, no 409.
    await sleep(700);
    expect(first.isPolling()).toBe(true);
    expect(second.isPolling()).toBe(false);
    expect(tg.conflicts).toBe(0);

    const ann = person('Ann');
    tg.message(ann, '/start');
    await tg.waitFor(() => tg.callsOf('sendMessage', ann.id)[0]);

    await first.stop();
    await until(() => second.isPolling(), 3_000);
    const bob = person('Bob');
    tg.message(bob, '/start');
    const greeting = await tg.waitFor(() => tg.callsOf('sendMessage', bob.id)[0]);
    expect(greeting.params.text).toMatch(/^Hello, Bob!/);
    expect(tg.callsOf('sendMessage', ann.id)).toHaveLength(1);
  });

  it('takes over when the holder dies: its lease expires', async () => {
    const c = app.container;
    // A holder that took the lease and died: it never renews nor releases.
    const dead = createPollerLock({ db: c.db, redis: c.redis, redisPrefix: c.config.redisPrefix, botToken: TOKEN });
    expect(await dead.acquire(800)).toBe(true);
    const started = Date.now();
    const waiter = await poller();
    expect(waiter.isPolling()).toBe(false);
    await until(() => waiter.isPolling(), 5_000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(500);
    const cy = person('Cy');
    tg.message(cy, '/start');
    await tg.waitFor(() => tg.callsOf('sendMessage', cy.id)[0]);
  });

  it('survives a 409 from getUpdates: polling pauses, then resumes', async () => {
    const p = await poller({ ...fast, leaseMs: 30_000 });
    await until(() => tg.polls > 0);
    tg.failNext('getUpdates', { error_code: 409, description: 'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running' });
    // Ends the pending long poll: the runner's next getUpdates gets the 409.
    const dee = person('Dee');
    tg.message(dee, '/start');
    await until(() => !p.isPolling(), 5_000);
    await until(() => p.isPolling(), 5_000);
    const eli = person('Eli');
    tg.message(eli, '/start');
    await tg.waitFor(() => tg.callsOf('sendMessage', eli.id)[0]);
  });
});

describe('the poller lease', () => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp();
  });

  afterAll(async () => {
    await app?.close();
  });

  it('in the database: one holder at a time, renewable, taken over once expired, released to a waiter', async () => {
    let now = Date.parse('2026-11-01T12:00:00.000Z');
    const clock = () => now;
    const lockA = new DatabasePollerLock(app.container.db, TOKEN, 'a', clock);
    const lockB = new DatabasePollerLock(app.container.db, TOKEN, 'b', clock);
    expect(await lockA.acquire(1_000)).toBe(true);
    expect(await lockB.acquire(1_000)).toBe(false);
    now += 800;
    expect(await lockA.acquire(1_000)).toBe(true); // renewed: now runs until +1800
    now += 800;
    expect(await lockB.acquire(1_000)).toBe(false);
    now += 1_001;
    expect(await lockB.acquire(1_000)).toBe(true);
    expect(await lockA.acquire(1_000)).toBe(false);
    await lockA.release(); // not A's: nothing happens
    expect(await lockA.acquire(1_000)).toBe(false);
    await lockB.release();
    expect(await lockA.acquire(1_000)).toBe(true);
    // A different token is a different lease; and the key never holds the token.
    expect(await new DatabasePollerLock(app.container.db, '999:other', 'b', clock).acquire(1_000)).toBe(true);
    const keys = (await app.container.db.repo(BotState).find()).map((row) => row.key);
    expect(keys.filter((key) => key.startsWith('poller-lock:'))).toHaveLength(2);
    for (const key of keys) expect(key).not.toContain('RUN-MODES');
  });

  (storeKind() === 'mysql-redis' ? it : it.skip)('in Redis: SET NX PX, renewed by its holder, expiring when not', async () => {
    const redis = app.container.redis;
    if (!redis) throw new Error('no redis');
    const prefix = app.container.config.redisPrefix;
    const lockA = new RedisPollerLock(redis, prefix, TOKEN, 'a');
    const lockB = new RedisPollerLock(redis, prefix, TOKEN, 'b');
    expect(await lockA.acquire(400)).toBe(true);
    expect(await lockB.acquire(400)).toBe(false);
    await sleep(250);
    expect(await lockA.acquire(400)).toBe(true);
    await sleep(250);
    expect(await lockB.acquire(400)).toBe(false); // A renewed: still A's
    await sleep(300);
    expect(await lockB.acquire(400)).toBe(true);
    await lockA.release();
    expect(await lockA.acquire(400)).toBe(false);
    await lockB.release();
    expect(await lockA.acquire(400)).toBe(true);
    const keys = await redis.keys(`${prefix}:bot:poller-lock:*`);
    expect(keys).toHaveLength(1);
    expect(keys[0]).not.toContain('RUN-MODES');
    await lockA.release();
  });
});

(storeKind() === 'embedded' ? describe : describe.skip)('the processes in webhook mode', () => {

  it('the `bot` process has nothing to poll: it says so and exits 0', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gensvc-proc-'));
    const { code, output } = await run('bot/main.ts', {
      DATA_DIR: dataDir,
      CATALOG_PATH: catalog,
      TELEGRAM_BOT_TOKEN: TOKEN,
      TELEGRAM_API_ROOT: 'http://127.0.0.1:9',
      BOT_WEBHOOK_URL: 'http://127.0.0.1:9/telegram/hook',
      LOG_LEVEL: 'silent',
    }).exit;
    expect(code).toBe(0);
    expect(output).toMatch(/BOT_WEBHOOK_URL is set: the web processes receive the bot updates/);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }, 30_000);

  it('npm start with BOT_WEBHOOK_URL sets the webhook and answers updates Telegram posts to it', async () => {
    const tg = new FakeTelegram();
    await tg.start();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gensvc-proc-'));
    const port = await freePort();
    const proc = run('main.ts', {
      DATA_DIR: dataDir,
      PORT: String(port),
      CATALOG_PATH: catalog,
      TELEGRAM_BOT_TOKEN: TOKEN,
      TELEGRAM_API_ROOT: tg.url,
      BOT_WEBHOOK_URL: `http://127.0.0.1:${port}/telegram/start-hook`,
      LOG_LEVEL: 'silent',
    });
    try {
      await tg.waitFor(() => tg.webhook, 20_000);
      expect(tg.webhook?.secret_token).toBe(loadConfig({ TELEGRAM_BOT_TOKEN: TOKEN }).telegram.webhookSecret);
      const fay = person('Fay');
      tg.message(fay, '/start');
      const greeting = await tg.waitFor(() => tg.callsOf('sendMessage', fay.id)[0]);
      expect(greeting.params.text).toMatch(/^Hello, Fay!/);
      expect(tg.polls).toBe(0);
    } finally {
      proc.kill();
      await proc.exit;
      await tg.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 40_000);
});
