/**
 * A web process whose database cannot be reached at boot waits for it (retrying with backoff,
 * each attempt logged) instead of exiting at once, and gives up after DATABASE_BOOT_WAIT_SECONDS.
 * The database is reached through a loopback proxy the test opens late (or never). Runs in the
 * mysql+redis project: the embedded store is a file, always there.
 */
import net from 'node:net';
import { createMysqlDatabase, dropMysqlDatabase } from '../shared/db/mysql-admin';
import { freePort, runEntry } from './helpers/child-process';
import { storeKind } from './helpers/stores';

const run = storeKind() === 'mysql-redis' && process.env.TEST_DATABASE_URL ? describe : describe.skip;

/** A TCP proxy on `port` to the real MySQL server, opened when the test says so. */
function proxyTo(target: URL, port: number): Promise<net.Server> {
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 3306), target.hostname);
    client.pipe(upstream).pipe(client);
    const close = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close);
    upstream.on('error', close);
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

run('a database that is not there yet at boot', () => {
  let databaseUrl: string;

  beforeAll(async () => {
    databaseUrl = await createMysqlDatabase(process.env.TEST_DATABASE_URL as string, 'gensvc_t');
  });
  afterAll(async () => {
    await dropMysqlDatabase(databaseUrl);
  });

  function behindPort(port: number): string {
    const url = new URL(databaseUrl);
    url.hostname = '127.0.0.1';
    url.port = String(port);
    return url.toString();
  }

  it('is waited for: the web process retries, logs each attempt, and serves once it appears', async () => {
    const proxyPort = await freePort();
    const httpPort = await freePort();
    const web = runEntry('api/main.ts', { DATABASE_URL: behindPort(proxyPort), JWT_SECRET: 'x'.repeat(40), PORT: String(httpPort), LOG_LEVEL: 'info' });
    let proxy: net.Server | null = null;
    try {
      const waiting = await web.waitForOutput(/cannot be reached yet; retrying/, 30_000);
      expect(waiting).toMatch(/cannot be reached yet; retrying/);
      proxy = await proxyTo(new URL(databaseUrl), proxyPort);
      const deadline = Date.now() + 30_000;
      let status = 0;
      while (Date.now() < deadline && status !== 200) {
        status = await fetch(`http://127.0.0.1:${httpPort}/health`).then((r) => r.status, () => 0);
        if (status !== 200) await new Promise((r) => setTimeout(r, 200));
      }
      expect(status).toBe(200);
    } finally {
      web.kill('SIGKILL');
      await web.exit;
      proxy?.close();
    }
  }, 90_000);

  it('is given up on after DATABASE_BOOT_WAIT_SECONDS, with a clear exit', async () => {
    const started = Date.now();
    const web = runEntry('api/main.ts', { DATABASE_URL: behindPort(await freePort()), JWT_SECRET: 'x'.repeat(40), PORT: String(await freePort()), LOG_LEVEL: 'info', DATABASE_BOOT_WAIT_SECONDS: '2' });
    const { code, output } = await web.exit;
    expect(code).not.toBe(0);
    expect(output).toMatch(/cannot be reached yet; retrying/);
    expect(output).toMatch(/ECONNREFUSED/);
    // Boot (compiling TypeScript on the fly) plus the 2 s bound.
    expect(Date.now() - started).toBeLessThan(30_000);
  }, 60_000);
});
