/**
 * The process roles as an operator runs them: `npm start`'s entry boots on a fresh DATA_DIR,
 * migrates, serves, and stops cleanly on SIGTERM; the Procfile roles refuse what they must.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, runEntry as run } from './helpers/child-process';
import { storeKind } from './helpers/stores';

const catalog = path.join(__dirname, 'fixtures/catalog.json');



const embeddedOnly = storeKind() === 'embedded' ? describe : describe.skip;

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
