/** Procfile `web`: the HTTP API. Does not migrate (the `release` role does). */
import { buildContainer } from '../shared/container';
import { runProcess } from '../shared/lifecycle';
import { startHttpServer } from './server';

void runProcess('web', process.env, async (config, log) => {
  const container = await buildContainer(config, { migrate: false, log });
  const http = await startHttpServer(container, config.port);
  return [{ name: 'stores', stop: () => container.close() }, http];
});
