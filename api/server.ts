import http from 'node:http';
import type { Container } from '../shared/container';
import type { Stoppable } from '../shared/lifecycle';
import { AppOptions, createApp } from './app';

/** Starts the HTTP API; stopping it stops accepting and waits for requests in flight. */
export async function startHttpServer(container: Container, port: number, options: AppOptions = {}): Promise<Stoppable & { server: http.Server }> {
  const server = http.createServer(createApp(container, options).callback());
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, () => resolve());
  });
  container.log.info({ port }, 'HTTP API listening');
  return {
    name: 'http',
    server,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
