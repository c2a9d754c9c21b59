/** Procfile `worker`: runs queued jobs. Needs Redis (the queue is shared between processes). */
import { buildContainer } from '../shared/container';
import { startWorker } from '../shared/jobs/worker';
import { runProcess } from '../shared/lifecycle';

void runProcess('worker', process.env, async (config, log, instruments) => {
  if (!config.redisUrl) throw new Error('the worker role needs REDIS_URL (without it, `npm start` runs jobs in-process)');
  const container = await buildContainer(config, { log, processesJobs: true, ...instruments });
  const worker = await startWorker(container);
  log.info('worker ready');
  return [{ name: 'stores', stop: () => container.close() }, worker];
});
