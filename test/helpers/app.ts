/**
 * A real app on fresh stores, driven over HTTP with supertest. Each test file starts its own
 * (`const t = useTestApp()`), so files never share a database or a Redis prefix.
 */
import type { Server } from 'node:http';
import http from 'node:http';
import supertest from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { createApp } from '../../api/app';
import { loadConfig } from '../../shared/config';
import { buildContainer, Container } from '../../shared/container';
import { startWorker } from '../../shared/jobs/worker';
import type { Stoppable } from '../../shared/lifecycle';
import type { Logger } from '../../shared/log';
import type { ProviderAdapter } from '../../shared/providers/types';
import type { LeaseTimings } from '../../shared/generation/runner';
import { TestClock } from './clock';
import { Mailbox } from './mailbox';
import { freshStores, TestStores } from './stores';
import { migrations } from '../../migrations';

export interface TestApp {
  container: Container;
  clock: TestClock;
  mailbox: Mailbox;
  stores: TestStores;
  server: Server;
  http(): TestAgent;
  close(): Promise<void>;
}

export interface TestAppOptions {
  /** Extra provider adapters (fakes). */
  providers?: ProviderAdapter[];
  /** Run queued jobs in this process too (in-process queue, or a bee-queue worker on Redis). */
  worker?: boolean;
  /** Job leases shorter than production's, to see them lapse or fail within a test. */
  leases?: LeaseTimings;
  /** The app's logger (default: one at LOG_LEVEL); a test that reads the log passes its own. */
  log?: Logger;
  /** Listen on this port (default: any free one); a browser test sets PUBLIC_BASE_URL to match. */
  port?: number;
}

export async function startTestApp(env: Record<string, string> = {}, options: TestAppOptions = {}): Promise<TestApp> {
  const stores = await freshStores();
  // Auth limits are off unless a test asks for them (they would trip on factories).
  const defaults = { AUTH_LOGIN_LIMIT_PER_MINUTE: '0', AUTH_REGISTER_LIMIT_PER_MINUTE: '0', AUTH_FORGOT_LIMIT_PER_HOUR: '0' };
  const config = loadConfig({ ...stores.env, ...defaults, ...env });
  const clock = new TestClock();
  const mailbox = new Mailbox();
  const container = await buildContainer(config, {
    migrate: migrations,
    clock: clock.now,
    mailer: mailbox,
    providers: options.providers,
    processesJobs: options.worker ?? false,
    leases: options.leases,
    log: options.log,
  });
  const worker: Stoppable | null = options.worker ? await startWorker(container) : null;
  const server = http.createServer(createApp(container).callback());
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', () => resolve()));
  return {
    container,
    clock,
    mailbox,
    stores,
    server,
    http: () => supertest(server),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await worker?.stop();
      await container.close();
      await stores.cleanup();
    },
  };
}

/**
 * Another web process on `app`'s stores (its own container, connections and caches; the same
 * clock), as a second `web` dyno would be: for what must hold across processes.
 */
export async function startPeerInstance(app: TestApp): Promise<{ container: Container; http(): TestAgent; close(): Promise<void> }> {
  const defaults = { AUTH_LOGIN_LIMIT_PER_MINUTE: '0', AUTH_REGISTER_LIMIT_PER_MINUTE: '0', AUTH_FORGOT_LIMIT_PER_HOUR: '0' };
  const container = await buildContainer(loadConfig({ ...app.stores.env, ...defaults }), { clock: app.clock.now, mailer: app.mailbox });
  const server = http.createServer(createApp(container).callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    container,
    http: () => supertest(server),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await container.close();
    },
  };
}

/** Starts one app for the enclosing describe/file and closes it afterwards. */
export function useTestApp(env: Record<string, string> = {}, options: TestAppOptions = {}): { readonly app: TestApp } {
  const holder: { app?: TestApp } = {};
  beforeAll(async () => {
    holder.app = await startTestApp(env, options);
  });
  afterAll(async () => {
    await holder.app?.close();
  });
  return {
    get app(): TestApp {
      if (!holder.app) throw new Error('test app not started');
      return holder.app;
    },
  };
}
