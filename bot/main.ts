/**
 * Procfile `bot`: the Telegram bot (long polling). Needs TELEGRAM_BOT_TOKEN. Run exactly one per
 * token. With REDIS_URL the worker processes deliver results; without it (embedded stores) this
 * process runs the jobs the bot queues itself.
 */
import { buildContainer } from '../shared/container';
import { startWorker } from '../shared/jobs/worker';
import type { Stoppable } from '../shared/lifecycle';
import { runProcess } from '../shared/lifecycle';
import { startBot } from './run';

void runProcess('bot', process.env, async (config, log) => {
  if (!config.telegram.botToken) throw new Error('the bot role needs TELEGRAM_BOT_TOKEN');
  const embedded = !config.redisUrl;
  const container = await buildContainer(config, { migrate: false, log, processesJobs: embedded });
  const parts: Stoppable[] = [{ name: 'stores', stop: () => container.close() }];
  if (embedded) parts.push(await startWorker(container));
  parts.push(await startBot(container));
  log.info('bot ready');
  return parts;
});
