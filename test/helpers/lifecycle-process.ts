/**
 * A web process as the lifecycle runs it (shared/lifecycle.ts), with one more part that takes
 * DRAIN_MS to stop and is stopped first (as a worker finishing its jobs would be): between SIGTERM
 * and the HTTP server's close, a test can see what GET /ready answers while the process drains.
 */
import { startHttpServer } from '../../api/server';
import { buildContainer } from '../../shared/container';
import { runProcess } from '../../shared/lifecycle';
import { migrations } from '../../migrations';

void runProcess('web', process.env, async (config, log, instruments) => {
  const container = await buildContainer(config, { log, migrate: migrations, ...instruments });
  const http = await startHttpServer(container, config.port);
  const drainMs = Number(process.env.DRAIN_MS ?? 3000);
  process.stdout.write('web-ready\n');
  return [
    { name: 'stores', stop: () => container.close() },
    http,
    { name: 'slow part', stop: () => new Promise<void>((resolve) => setTimeout(resolve, drainMs)) },
  ];
});
