/**
 * Webhook mode (BOT_WEBHOOK_URL): Telegram POSTs each update to the web process, which hands it
 * to the bot; no process polls. Every web process mounts the handler and registers the webhook at
 * startup (setWebhook is idempotent, so any number of them agree). Requests must carry the
 * secret registered with it in `X-Telegram-Bot-Api-Secret-Token`, else 401 and nothing runs.
 *
 * Not grammY's `webhookCallback`: it hands a handler's error back to the HTTP layer (a 500 makes
 * Telegram redeliver the update again and again) where the poller gives it to `bot.catch`, and it
 * holds the answer until the handler is done. Here errors go to `bot.catch` as in polling, and
 * Telegram gets its 200 within ANSWER_WITHIN_MS whatever the handler does.
 */
import crypto from 'node:crypto';
import type { Bot } from 'grammy';
import type { Update } from 'grammy/types';
import type { Middleware } from 'koa';
import type { Container } from '../shared/container';
import { AppError } from '../shared/errors';
import type { Stoppable } from '../shared/lifecycle';
import { BotContext, createBot, setCommands } from './bot';
import { ALLOWED_UPDATES } from './updates';

export const SECRET_HEADER = 'X-Telegram-Bot-Api-Secret-Token';
/** Telegram waits for an answer before it sends more of a chat's updates; handlers never wait for generations. */
const ANSWER_WITHIN_MS = 5_000;
/** After a failed registration (Telegram unreachable at boot), try again this often. */
const RETRY_REGISTRATION_MS = 30_000;

export interface BotWebhook extends Stoppable {
  /** Koa middleware answering POSTs to the webhook URL's path; everything else passes through. */
  middleware: Middleware;
  /** Gets the bot's identity, sets the webhook and the commands; retries in the background until it succeeds. Resolves with whether the first attempt did. */
  register(): Promise<boolean>;
}

/** Compares in constant time: both sides hashed to one length first, so not even the length leaks. */
export function secretMatches(given: string | undefined, expected: string): boolean {
  const a = crypto.createHash('sha256').update(given ?? '').digest();
  const b = crypto.createHash('sha256').update(expected).digest();
  return crypto.timingSafeEqual(a, b) && given !== undefined;
}

function isUpdate(body: unknown): body is Update {
  return typeof body === 'object' && body !== null && Number.isSafeInteger((body as { update_id?: unknown }).update_id);
}

export function createBotWebhook(container: Container): BotWebhook {
  const { config, log } = container;
  const url = config.telegram.webhookUrl;
  const secret = config.telegram.webhookSecret;
  if (!url || !secret) throw new Error('webhook mode needs BOT_WEBHOOK_URL and TELEGRAM_BOT_TOKEN');
  const webhookUrl: string = url;
  const path = new URL(url).pathname;
  const bot: Bot<BotContext> = createBot(container);
  let ready = false;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  const inFlight = new Set<Promise<void>>();

  async function registerOnce(): Promise<void> {
    await bot.init();
    // Updates can be handled once the bot knows itself; those of an earlier setWebhook may
    // already be arriving, so they are not turned away while this one is being set.
    ready = true;
    // drop_pending_updates false: updates that arrived while no one listened are still delivered.
    await bot.api.setWebhook(webhookUrl, { secret_token: secret, allowed_updates: ALLOWED_UPDATES, drop_pending_updates: false });
    await setCommands(bot).catch((error: unknown) => log.warn({ err: (error as Error).message }, 'setMyCommands failed'));
    log.info({ username: bot.botInfo.username, path }, 'bot webhook set');
  }

  async function register(): Promise<boolean> {
    try {
      await registerOnce();
      return true;
    } catch (error) {
      // The API keeps serving; Telegram keeps (and later redelivers) updates it could not hand over.
      log.error({ err: (error as Error).message }, 'setting the bot webhook failed; retrying');
      if (!stopped) retry = setTimeout(() => void register(), RETRY_REGISTRATION_MS);
      return false;
    }
  }

  function handle(update: Update): Promise<void> {
    // As the poller does: a handler's error goes to `bot.catch`, the update counts as handled.
    const task: Promise<void> = bot
      .handleUpdate(update)
      .catch(async (error: unknown) => {
        await bot.errorHandler(error as Parameters<typeof bot.errorHandler>[0]);
      })
      .catch((error: unknown) => log.error({ err: error, updateId: update.update_id }, 'bot error handler failed'))
      .finally(() => inFlight.delete(task));
    inFlight.add(task);
    return task;
  }

  const middleware: Middleware = async (ctx, next) => {
    if (ctx.path !== path || ctx.method !== 'POST') return next();
    if (!secretMatches(ctx.get(SECRET_HEADER) || undefined, secret)) throw new AppError('not_authenticated');
    if (!ready || stopped) throw new AppError('service_unavailable');
    const body = (ctx.request as { body?: unknown }).body;
    if (!isUpdate(body)) throw new AppError('malformed_request');
    let timer: NodeJS.Timeout | undefined;
    const done = await Promise.race([
      handle(body).then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), ANSWER_WITHIN_MS);
      }),
    ]);
    clearTimeout(timer);
    if (!done) log.warn({ updateId: body.update_id }, 'bot update still running; answered Telegram so it does not resend it');
    ctx.status = 200;
    ctx.body = '';
  };

  return {
    name: 'bot webhook',
    middleware,
    register,
    async stop() {
      stopped = true;
      clearTimeout(retry);
      // The webhook stays set: the other web processes (and the next deploy) keep receiving.
      await Promise.allSettled([...inFlight]);
    },
  };
}
