/** Procfile `clock`: fires schedules (one per deployment). Needs Redis. */
import { buildContainer } from '../shared/container';
import { runProcess } from '../shared/lifecycle';

void runProcess('clock', process.env, async (config, log) => {
  if (!config.redisUrl) throw new Error('the clock role needs REDIS_URL (without it, `npm start` runs the clock in-process)');
  const container = await buildContainer(config, { migrate: false, log });
  log.info('clock ready');
  return [{ name: 'stores', stop: () => container.close() }];
});
