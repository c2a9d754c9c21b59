/**
 * Procfile `web`: the HTTP API, and with BOT_WEBHOOK_URL (and TELEGRAM_BOT_TOKEN) the Telegram
 * bot's webhook. Does not migrate (the `release` role does). On MySQL + Redis it runs as
 * WEB_CONCURRENCY worker processes (default: one per CPU) behind one port (shared/cluster.ts);
 * on the embedded stores as one process, since SQLite and the in-process queue are one process's.
 */
import { createBotWebhook } from '../bot/webhook';
import { buildContainer } from '../shared/container';
import { runProcess } from '../shared/lifecycle';
import { startHttpServer } from './server';

void runProcess('web', process.env, async (config, log, instruments) => {
  const container = await buildContainer(config, { log, ...instruments });
  const webhook = config.telegram.botToken && config.telegram.webhookUrl ? createBotWebhook(container) : null;
  const http = await startHttpServer(container, config.port, { extraRoutes: webhook ? [webhook.middleware] : [] });
  // Every web process sets the same webhook (idempotent): no one of them is special.
  if (webhook) await webhook.register();
  const bot = webhook ? [webhook] : [];
  return [{ name: 'stores', stop: () => container.close() }, ...bot, http];
}, { workers: (config) => (config.database.kind === 'mysql' && config.redisUrl ? config.webConcurrency : 1) });
