/**
 * The process roles as an operator runs them: `npm start`'s entry boots on a fresh DATA_DIR,
 * migrates, serves, and stops cleanly on SIGTERM; the Procfile roles refuse what they must.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, runEntry as run } from './helpers/child-process';
import { freshStores, storeKind } from './helpers/stores';

const catalog = path.join(__dirname, 'fixtures/catalog.json');



const embeddedOnly = storeKind() === 'embedded' ? describe : describe.skip;
const mysqlRedisOnly = storeKind() === 'mysql-redis' ? describe : describe.skip;

/** The live child processes of `pid` (the web role's forked workers). */
function childrenOf(pid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .map((line) => Number(line.trim()))
      .filter((n) => n > 0);
  } catch {
    return []; // ps exits 1 when there are none
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(condition: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await condition()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return condition();
}

const healthy = (port: number) => () =>
  fetch(`http://127.0.0.1:${port}/health`).then(
    (r) => r.ok,
    () => false,
  );

embeddedOnly('process roles', () => {
  it('npm start boots every role on a fresh DATA_DIR, migrates, answers /health and stops on SIGTERM', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gensvc-proc-'));
    const port = await freePort();
    const proc = run('main.ts', { DATA_DIR: dataDir, PORT: String(port), CATALOG_PATH: catalog, LOG_LEVEL: 'info' });
    try {
      let health: { status: string } | null = null;
      for (let i = 0; i < 150 && !health; i++) {
        await new Promise((r) => setTimeout(r, 100));
        health = await fetch(`http://127.0.0.1:${port}/health`)
          .then((r) => (r.ok ? (r.json() as Promise<{ status: string }>) : null))
          .catch(() => null);
      }
      expect(health).toMatchObject({ status: 'ok', db: 'ok', queue: 'embedded' });
      expect(fs.existsSync(path.join(dataDir, 'gensvc.sqlite'))).toBe(true);
      expect(fs.existsSync(path.join(dataDir, 'jwt-secret'))).toBe(true);
      const register = await fetch(`http://127.0.0.1:${port}/api/v2/auth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'proc@example.test', password: 'password1' }),
      });
      expect(register.status).toBe(201);
    } finally {
      proc.kill('SIGTERM');
    }
    const started = Date.now();
    const { code, output } = await proc.exit;
    expect(code).toBe(0);
    expect(Date.now() - started).toBeLessThan(25_000);
    expect(output).toMatch(/"msg":"stopped"/);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }, 40_000);

  it.each([
    ['worker/main.ts', /worker role needs REDIS_URL/],
    ['worker/clock-main.ts', /clock role needs REDIS_URL/],
    ['bot/main.ts', /needs TELEGRAM_BOT_TOKEN/],
  ])('%s refuses to start without what it needs', async (entry, message) => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gensvc-proc-'));
    const { code, output } = await run(entry, { DATA_DIR: dataDir, CATALOG_PATH: catalog, LOG_LEVEL: 'silent' }).exit;
    expect(code).toBe(1);
    expect(output).toMatch(message);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }, 30_000);

  it('refuses a PostgreSQL URL at boot with a clear message naming every bad variable', async () => {
    const { code, output } = await run('api/main.ts', { DATABASE_URL: 'postgres://u@h/db', REDIS_URL: 'http://nope', LOG_LEVEL: 'silent' }).exit;
    expect(code).toBe(1);
    expect(output).toMatch(/DATABASE_URL: PostgreSQL is not supported/);
    expect(output).toMatch(/REDIS_URL/);
  }, 30_000);

  it('release migrates the embedded store and reports what it applied', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gensvc-proc-'));
    const first = await run('cli/migrate.ts', { DATA_DIR: dataDir }).exit;
    expect(first.code).toBe(0);
    expect(JSON.parse(first.output.trim()).migrated.length).toBeGreaterThan(0);
    const second = await run('cli/migrate.ts', { DATA_DIR: dataDir }).exit;
    expect(JSON.parse(second.output.trim())).toEqual({ migrated: [], database: 'sqlite' });
    fs.rmSync(dataDir, { recursive: true, force: true });
  }, 30_000);
});

mysqlRedisOnly('the web role as several processes (WEB_CONCURRENCY)', () => {
  it('forks WEB_CONCURRENCY workers on one port, replaces one that dies, and stops them all on SIGTERM', async () => {
    const stores = await freshStores();
    const env = { ...stores.env, CATALOG_PATH: catalog, LOG_LEVEL: 'info' };
    try {
      expect((await run('cli/migrate.ts', env).exit).code).toBe(0);
      const port = await freePort();
      const web = run('api/main.ts', { ...env, PORT: String(port), WEB_CONCURRENCY: '2' });
      try {
        expect(await until(healthy(port), 60_000)).toBe(true);
        await web.waitForOutput(/forking 2 workers/);
        expect(await until(() => childrenOf(web.pid).length === 2, 30_000)).toBe(true);
        const workers = childrenOf(web.pid);
        // Both workers answer on the one port (the primary hands connections out in turn).
        await until(() => (web.output().match(/HTTP API listening/g) ?? []).length >= 2, 30_000);
        const listening = web.output().match(/"worker":(\d+)[^\n]*HTTP API listening|HTTP API listening[^\n]*"worker":(\d+)/g) ?? [];
        expect(listening.length).toBe(2);

        // A worker that dies is forked again; the port keeps answering meanwhile.
        process.kill(workers[0] as number, 'SIGKILL');
        expect(await until(() => {
          const now = childrenOf(web.pid);
          return now.length === 2 && !now.includes(workers[0] as number);
        }, 30_000)).toBe(true);
        expect(await until(healthy(port), 30_000)).toBe(true);
        await web.waitForOutput(/worker died; forking another/);
        // The new one is serving too before the shutdown below.
        expect(await until(() => (web.output().match(/HTTP API listening/g) ?? []).length === 3, 30_000)).toBe(true);

        const before = childrenOf(web.pid);
        web.kill('SIGTERM');
        const { code, output } = await web.exit;
        expect(code).toBe(0);
        expect(output).toMatch(/every worker stopped/);
        // Each worker closed what it started (lifecycle.ts) before the primary left.
        expect((output.match(/"part":"http"[^\n]*"msg":"stopped"/g) ?? []).length).toBe(2);
        for (const pid of before) expect(alive(pid)).toBe(false);
      } finally {
        web.kill('SIGKILL');
      }
    } finally {
      await stores.cleanup();
    }
  }, 120_000);

  it('exits 1 when its workers cannot start (a database that refuses), not forking forever', async () => {
    const stores = await freshStores();
    try {
      const port = await freePort();
      const web = run('api/main.ts', {
        ...stores.env,
        DATABASE_URL: 'mysql://nobody:wrong@127.0.0.1:1/none',
        DATABASE_BOOT_WAIT_SECONDS: '0',
        CATALOG_PATH: catalog,
        PORT: String(port),
        WEB_CONCURRENCY: '2',
        LOG_LEVEL: 'info',
      });
      const { code, output } = await web.exit;
      expect(code).toBe(1);
      expect(output).toMatch(/exited before it listened/);
    } finally {
      await stores.cleanup();
    }
  }, 120_000);
});

embeddedOnly('the web role on the embedded stores', () => {
  it('stays one process whatever WEB_CONCURRENCY says (SQLite and the in-process queue are one process\'s)', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gensvc-proc-'));
    try {
      expect((await run('cli/migrate.ts', { DATA_DIR: dataDir }).exit).code).toBe(0);
      const port = await freePort();
      const web = run('api/main.ts', { DATA_DIR: dataDir, PORT: String(port), CATALOG_PATH: catalog, LOG_LEVEL: 'info', WEB_CONCURRENCY: '4' });
      try {
        expect(await until(healthy(port), 60_000)).toBe(true);
        expect(childrenOf(web.pid)).toEqual([]);
        expect(web.output()).not.toMatch(/forking/);
      } finally {
        web.kill('SIGTERM');
      }
      expect((await web.exit).code).toBe(0);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
