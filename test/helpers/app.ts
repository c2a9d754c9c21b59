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
import { TestClock } from './clock';
import { Mailbox } from './mailbox';
import { freshStores, TestStores } from './stores';

export interface TestApp {
  container: Container;
  clock: TestClock;
  mailbox: Mailbox;
  stores: TestStores;
  server: Server;
  http(): TestAgent;
  close(): Promise<void>;
}

export async function startTestApp(env: Record<string, string> = {}): Promise<TestApp> {
  const stores = await freshStores();
  // Auth limits are off unless a test asks for them (they would trip on factories).
  const defaults = { AUTH_LOGIN_LIMIT_PER_MINUTE: '0', AUTH_REGISTER_LIMIT_PER_MINUTE: '0', AUTH_FORGOT_LIMIT_PER_HOUR: '0' };
  const config = loadConfig({ ...stores.env, ...defaults, ...env });
  const clock = new TestClock();
  const mailbox = new Mailbox();
  const container = await buildContainer(config, { migrate: true, clock: clock.now, mailer: mailbox });
  const server = http.createServer(createApp(container).callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    container,
    clock,
    mailbox,
    stores,
    server,
    http: () => supertest(server),
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await container.close();
      await stores.cleanup();
    },
  };
}

/** Starts one app for the enclosing describe/file and closes it afterwards. */
export function useTestApp(env: Record<string, string> = {}): { readonly app: TestApp } {
  const holder: { app?: TestApp } = {};
  beforeAll(async () => {
    holder.app = await startTestApp(env);
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
