/**
 * `npm start`: every role in one process on whichever stores are configured (embedded SQLite and
 * an in-process queue by default), migrating on boot.
 */
import { startHttpServer } from './api/server';
import { startBot } from './bot/run';
import { createBotWebhook } from './bot/webhook';
import { buildContainer } from './shared/container';
import { startWorker } from './shared/jobs/worker';
import { localEngines, missingLocalTools } from './shared/providers/local';
import { runProcess } from './shared/lifecycle';
import { ClockRunner } from './shared/schedules/clock-runner';
import { migrations } from './migrations';

void runProcess('all', process.env, async (config, log, instruments) => {
  const container = await buildContainer(config, { migrate: migrations, log, processesJobs: true, ...instruments });
  log.info(
    { database: config.database.kind, redis: config.redisUrl ? 'configured' : 'none', dataDir: config.dataDir },
    'stores open',
  );
  const engines = localEngines();
  const missing = Object.entries(engines).filter(([, path]) => path === null).map(([name]) => name);
  const missingTools = missingLocalTools();
  if (missing.length || missingTools.length) {
    log.warn({ missing, missingTools }, 'some local engines are missing: models that need them are not offered (music falls back to its built-in synth)');
  }
  log.info({ offered: container.catalog.list().length }, 'catalog loaded');
  const worker = await startWorker(container);
  const clock = new ClockRunner(container.schedules, container.db, log, container.queue);
  await clock.start();
  // The Telegram bot beside the API when a token is configured: through the API's HTTP server
  // when BOT_WEBHOOK_URL is set, otherwise by long polling.
  const webhook = config.telegram.botToken && config.telegram.webhookUrl ? createBotWebhook(container) : null;
  const http = await startHttpServer(container, config.port, { extraRoutes: webhook ? [webhook.middleware] : [] });
  if (webhook) await webhook.register();
  const bot = webhook ? [webhook] : config.telegram.botToken ? [await startBot(container)] : [];
  log.info(`gensvc is up: ${config.publicBaseUrl}`);
  return [{ name: 'stores', stop: () => container.close() }, worker, clock, http, ...bot];
});
