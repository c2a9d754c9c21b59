/** Runs the bot by long polling (@grammyjs/runner): for the `bot` process and inside `npm start`. */
import { run, RunnerHandle } from '@grammyjs/runner';
import type { Container } from '../shared/container';
import type { Stoppable } from '../shared/lifecycle';
import { createBot, setCommands } from './bot';

export async function startBot(container: Container): Promise<Stoppable> {
  const { log } = container;
  const bot = createBot(container);
  await bot.init();
  await setCommands(bot).catch((error: unknown) => log.warn({ err: (error as Error).message }, 'setMyCommands failed'));
  // Long polling and a webhook exclude each other: Telegram refuses getUpdates while a webhook is set.
  await bot.api.deleteWebhook().catch((error: unknown) => log.warn({ err: (error as Error).message }, 'deleteWebhook failed'));
  const handle: RunnerHandle = run(bot, { runner: { fetch: { timeout: 30 }, silent: true, maxRetryTime: Infinity, retryInterval: 'exponential' } });
  log.info({ username: bot.botInfo.username }, 'bot polling');
  return {
    name: 'bot',
    stop: async () => {
      if (handle.isRunning()) await handle.stop();
    },
  };
}
