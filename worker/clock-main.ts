/** Procfile `clock`: fires schedules (run exactly one per deployment). Needs Redis. */
import { buildContainer } from '../shared/container';
import { runProcess } from '../shared/lifecycle';
import { ClockRunner } from '../shared/schedules/clock-runner';

void runProcess('clock', process.env, async (config, log, instruments) => {
  if (!config.redisUrl) throw new Error('the clock role needs REDIS_URL (without it, `npm start` runs the clock in-process)');
  const container = await buildContainer(config, { log, ...instruments });
  const clock = new ClockRunner(container.schedules, container.db, log, container.queue);
  await clock.start();
  return [{ name: 'stores', stop: () => container.close() }, clock];
});
