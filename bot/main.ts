/** Procfile `bot`: the Telegram bot (long polling). Needs TELEGRAM_BOT_TOKEN. */
import { buildContainer } from '../shared/container';
import { runProcess } from '../shared/lifecycle';

void runProcess('bot', process.env, async (config, log) => {
  if (!config.telegram.botToken) throw new Error('the bot role needs TELEGRAM_BOT_TOKEN');
  const container = await buildContainer(config, { migrate: false, log });
  log.info('bot ready');
  return [{ name: 'stores', stop: () => container.close() }];
});
