/**
 * `npm start`: every role in one process on whichever stores are configured (embedded SQLite and
 * an in-process queue by default), migrating on boot.
 */
import { startHttpServer } from './api/server';
import { buildContainer } from './shared/container';
import { startWorker } from './shared/jobs/worker';
import { runProcess } from './shared/lifecycle';

void runProcess('all', process.env, async (config, log) => {
  const container = await buildContainer(config, { migrate: true, log, processesJobs: true });
  log.info(
    { database: config.database.kind, redis: config.redisUrl ? 'configured' : 'none', dataDir: config.dataDir },
    'stores open',
  );
  const worker = await startWorker(container);
  const http = await startHttpServer(container, config.port);
  log.info(`gensvc is up: ${config.publicBaseUrl}`);
  return [{ name: 'stores', stop: () => container.close() }, worker, http];
});
