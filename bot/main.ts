/**
 * Procfile `bot`: the Telegram bot by long polling. Needs TELEGRAM_BOT_TOKEN. Any number may run:
 * a lease lets one of them poll and the others wait to take over. With REDIS_URL the worker
 * processes deliver results; without it (embedded stores) this process runs the jobs the bot
 * queues itself.
 *
 * With BOT_WEBHOOK_URL the `web` processes receive the updates and there is nothing to poll:
 * this process says so and exits 0 (scale it to zero) rather than fight the webhook.
 */
import { buildContainer } from '../shared/container';
import { startWorker } from '../shared/jobs/worker';
import type { Stoppable } from '../shared/lifecycle';
import { runProcess } from '../shared/lifecycle';
import { startBot } from './run';

void runProcess('bot', process.env, async (config, log, instruments) => {
  if (!config.telegram.botToken) throw new Error('the bot role needs TELEGRAM_BOT_TOKEN');
  if (config.telegram.webhookUrl) {
    const message = 'BOT_WEBHOOK_URL is set: the web processes receive the bot updates, this process has nothing to do (scale `bot` to 0); exiting';
    log.info(message);
    process.stderr.write(`gensvc bot: ${message}\n`);
    process.exit(0);
  }
  const embedded = !config.redisUrl;
  const container = await buildContainer(config, { log, processesJobs: embedded, ...instruments });
  const parts: Stoppable[] = [{ name: 'stores', stop: () => container.close() }];
  if (embedded) parts.push(await startWorker(container));
  parts.push(await startBot(container));
  log.info('bot ready');
  return parts;
});
