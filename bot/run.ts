/**
 * Runs the bot by long polling (@grammyjs/runner): for the `bot` process and inside `npm start`.
 *
 * Exactly one poller per token: Telegram answers a second one 409 Conflict. A lease
 * (shared/telegram/poller-lock.ts) decides which process polls; another one waits, asks again
 * every little while, and takes over when the holder stops or dies (its lease then expires). A
 * 409 that comes anyway (a poller outside this deployment, or a webhook set meanwhile) stops
 * the runner, is logged, and polling starts again after a growing pause.
 */
import { run, RunnerHandle } from '@grammyjs/runner';
import { GrammyError } from 'grammy';
import type { Container } from '../shared/container';
import type { Stoppable } from '../shared/lifecycle';
import { createPollerLock, PollerLock } from '../shared/telegram/poller-lock';
import { createBot, setCommands } from './bot';
import { ALLOWED_UPDATES } from './updates';

export interface PollerOptions {
  /** How long a lease lasts without renewal: a dead holder's successor waits at most this long. */
  leaseMs?: number;
  /** How often a waiting process asks for the lease. */
  retryMs?: number;
  /** First pause after Telegram refused polling (409); it doubles up to 60 s. */
  conflictBackoffMs?: number;
  /** The lease, when the caller brings its own (tests); by default Redis or the `bot_state` table. */
  lock?: PollerLock;
}

export interface BotPoller extends Stoppable {
  /** Whether this process is the one polling now. */
  isPolling(): boolean;
}

const DEFAULT_LEASE_MS = 30_000;
const MAX_CONFLICT_BACKOFF_MS = 60_000;

export async function startBot(container: Container, options: PollerOptions = {}): Promise<BotPoller> {
  const { config, log } = container;
  const bot = createBot(container);
  await bot.init();
  await setCommands(bot).catch((error: unknown) => log.warn({ err: (error as Error).message }, 'setMyCommands failed'));

  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  // Renewed three times per lease: two renewals may fail (a store hiccup) before it runs out.
  const renewMs = Math.max(1, Math.floor(leaseMs / 3));
  const retryMs = options.retryMs ?? renewMs;
  const firstBackoffMs = options.conflictBackoffMs ?? 5_000;
  const lock =
    options.lock ??
    createPollerLock({ db: container.db, redis: container.redis, redisPrefix: config.redisPrefix, botToken: config.telegram.botToken ?? '' });

  let handle: RunnerHandle | null = null;
  let heldUntil = 0;
  let pausedUntil = 0;
  let backoffMs = firstBackoffMs;
  let waitingLogged = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let ticking: Promise<void> = Promise.resolve();

  async function startPolling(): Promise<void> {
    // Long polling and a webhook exclude each other: Telegram refuses getUpdates while a webhook is set.
    await bot.api.deleteWebhook().catch((error: unknown) => log.warn({ err: (error as Error).message }, 'deleteWebhook failed'));
    const startedAt = Date.now();
    const runner = run(bot, {
      runner: { fetch: { timeout: 30, allowed_updates: ALLOWED_UPDATES }, silent: true, maxRetryTime: Infinity, retryInterval: 'exponential' },
    });
    handle = runner;
    waitingLogged = false;
    log.info({ username: bot.botInfo.username }, 'bot polling');
    // The runner gives up only on 401 and 409 (retrying everything else); its task then rejects.
    runner.task()?.catch((error: unknown) => {
      if (handle === runner) handle = null;
      if (Date.now() - startedAt > MAX_CONFLICT_BACKOFF_MS) backoffMs = firstBackoffMs;
      pausedUntil = Date.now() + backoffMs;
      const code = error instanceof GrammyError ? error.error_code : undefined;
      if (code === 409) {
        log.error(
          { retryInMs: backoffMs, description: (error as GrammyError).description },
          'Telegram refused polling (409 Conflict): another process polls this token outside this deployment, or a webhook is set; polling again later',
        );
      } else {
        log.error({ err: error, code, retryInMs: backoffMs }, 'bot polling stopped; polling again later');
      }
      // Polling starts again at the next check after the pause, not at the next renewal.
      scheduleCheck(backoffMs);
      backoffMs = Math.min(backoffMs * 2, MAX_CONFLICT_BACKOFF_MS);
    });
  }

  async function stopPolling(): Promise<void> {
    const running = handle;
    handle = null;
    if (running?.isRunning()) await running.stop();
  }

  async function tick(): Promise<void> {
    try {
      const held = await lock.acquire(leaseMs);
      if (stopped) return;
      if (held) {
        heldUntil = Date.now() + leaseMs;
        if (!handle && Date.now() >= pausedUntil) await startPolling();
      } else if (handle) {
        log.warn('the poller lease went to another process; this one stops polling');
        await stopPolling();
      } else if (!waitingLogged) {
        waitingLogged = true;
        log.info({ retryMs }, 'another process polls this bot; waiting for its lease');
      }
    } catch (error) {
      log.warn({ err: (error as Error).message }, 'the poller lease could not be checked');
      // Unrenewed, the lease may be someone else's by the next check: stop while it is still
      // ours, so two pollers never fight over the token.
      if (handle && Date.now() + renewMs >= heldUntil) await stopPolling();
    }
  }

  function scheduleCheck(delayMs: number): void {
    clearTimeout(timer);
    if (stopped) return;
    timer = setTimeout(() => {
      ticking = ticking.then(tick).finally(() => scheduleCheck(handle ? renewMs : retryMs));
    }, delayMs);
  }

  ticking = tick();
  await ticking;
  scheduleCheck(handle ? renewMs : retryMs);

  return {
    name: 'bot',
    isPolling: () => handle?.isRunning() ?? false,
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await ticking;
      const wasHolding = handle !== null;
      await stopPolling();
      // Released even when not polling (paused after a 409): the lease may still be ours.
      await lock.release().catch((error: unknown) => log.warn({ err: (error as Error).message }, 'the poller lease could not be released'));
      if (wasHolding) log.info('bot stopped polling');
    },
  };
}
