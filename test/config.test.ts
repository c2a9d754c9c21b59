/**
 * Boot configuration (decisions.md "Operating"): the embedded defaults, the database URL variables
 * of the usual hosts, refusals that name every bad variable at once, and the plans file.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig, projectRoot } from '../shared/config';
import { loadPlans, parsePlans, PLAN_NAMES } from '../shared/plans';

const SECRET = 'x'.repeat(40);

function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe('loadConfig', () => {
  it('gives the embedded defaults for an empty environment', () => {
    const config = loadConfig({});
    const dataDir = path.join(projectRoot(), 'data');
    expect(projectRoot()).toBe(path.resolve(__dirname, '..'));
    expect(config.port).toBe(8080);
    expect(config.dataDir).toBe(dataDir);
    expect(config.database).toEqual({ kind: 'sqlite', file: path.join(dataDir, 'gensvc.sqlite') });
    expect(config.redisUrl).toBeUndefined();
    expect(config.jwtSecret).toBeUndefined();
    expect(config.publicBaseUrl).toBe('http://localhost:8080');
    expect(config.corsOrigins).toEqual([]);
    expect(config.trustProxy).toBe(false);
    expect(config.smtpUrl).toBeUndefined();
    expect(config.authLimits).toEqual({ loginPerMinute: 10, registerPerMinute: 10, forgotPerHour: 3 });
    expect(config.productFiles.plans).toBe(path.join(projectRoot(), 'product', 'plans.json'));
    expect(config.telegram.apiRoot).toBe('https://api.telegram.org');
  });

  it('treats empty and blank variables as unset', () => {
    const config = loadConfig({ PORT: '', DATABASE_URL: '  ', REDIS_URL: '', TRUST_PROXY: '', JWT_SECRET: '' });
    expect(config.port).toBe(8080);
    expect(config.database.kind).toBe('sqlite');
    expect(config.redisUrl).toBeUndefined();
    expect(config.trustProxy).toBe(false);
  });

  it('puts the embedded store under DATA_DIR', () => {
    const dir = path.join(os.tmpdir(), 'gensvc-config-test');
    const config = loadConfig({ DATA_DIR: dir, PORT: '9090' });
    expect(config.dataDir).toBe(dir);
    expect(config.database).toEqual({ kind: 'sqlite', file: path.join(dir, 'gensvc.sqlite') });
    expect(config.port).toBe(9090);
    expect(config.publicBaseUrl).toBe('http://localhost:9090');
  });

  it('reads the deployment settings', () => {
    const config = loadConfig({
      DATABASE_URL: 'mysql://u:p@db.example:3306/gensvc',
      REDIS_URL: 'rediss://cache.example:6380',
      JWT_SECRET: SECRET,
      PUBLIC_BASE_URL: 'https://gen.example/',
      CORS_ORIGINS: 'https://app.example, https://admin.example,,',
      TRUST_PROXY: 'true',
      AUTH_LOGIN_LIMIT_PER_MINUTE: '0',
    });
    expect(config.database).toEqual({ kind: 'mysql', url: 'mysql://u:p@db.example:3306/gensvc' });
    expect(config.redisUrl).toBe('rediss://cache.example:6380');
    expect(config.jwtSecret).toBe(SECRET);
    expect(config.publicBaseUrl).toBe('https://gen.example');
    expect(config.corsOrigins).toEqual(['https://app.example', 'https://admin.example']);
    expect(config.trustProxy).toBe(true);
    expect(config.authLimits.loginPerMinute).toBe(0);
  });

  it.each(['1', 'true', 'TRUE', 'yes', 'on'])('reads TRUST_PROXY=%s as true', (value) => {
    expect(loadConfig({ TRUST_PROXY: value }).trustProxy).toBe(true);
  });

  it.each(['0', 'false', 'no', 'off'])('reads TRUST_PROXY=%s as false', (value) => {
    expect(loadConfig({ TRUST_PROXY: value }).trustProxy).toBe(false);
  });

  it('refuses a PostgreSQL DATABASE_URL with a clear message', () => {
    for (const url of ['postgres://u:p@db.example/gensvc', 'postgresql://db.example/gensvc']) {
      const error = configError({ DATABASE_URL: url, JWT_SECRET: SECRET });
      expect(error.message).toMatch(/PostgreSQL is not supported/);
      expect(error.message).toMatch(/DATABASE_URL/);
      expect(error.problems).toHaveLength(1);
    }
  });

  it('refuses a database URL of another scheme', () => {
    const error = configError({ DATABASE_URL: 'sqlite:///tmp/x.db', JWT_SECRET: SECRET });
    expect(error.problems).toEqual([expect.stringMatching(/^DATABASE_URL: must be a mysql:\/\/ URL/)]);
  });

  it.each(['JAWSDB_URL', 'JAWSDB_MARIA_URL', 'CLEARDB_DATABASE_URL'])('accepts %s as the database URL', (name) => {
    const config = loadConfig({ [name]: 'mysql://u:p@host.example:3306/db1', JWT_SECRET: SECRET });
    expect(config.database).toEqual({ kind: 'mysql', url: 'mysql://u:p@host.example:3306/db1' });
  });

  it('takes DATABASE_URL before the host-specific variables and reads mariadb:// as MySQL', () => {
    const config = loadConfig({
      DATABASE_URL: 'mariadb://u@primary.example/db',
      JAWSDB_URL: 'mysql://u@jaws.example/db',
      CLEARDB_DATABASE_URL: 'mysql://u@clear.example/db',
      JWT_SECRET: SECRET,
    });
    expect(config.database).toEqual({ kind: 'mysql', url: 'mysql://u@primary.example/db' });
  });

  it('names a host-specific variable that holds a PostgreSQL URL', () => {
    const error = configError({ JAWSDB_URL: 'postgres://db.example/x', JWT_SECRET: SECRET });
    expect(error.problems).toEqual([expect.stringMatching(/^JAWSDB_URL: PostgreSQL is not supported/)]);
  });

  it('refuses a REDIS_URL that is not redis:// or rediss://', () => {
    const error = configError({ REDIS_URL: 'http://x' });
    expect(error.problems).toEqual([expect.stringMatching(/^REDIS_URL: /)]);
  });

  it('requires JWT_SECRET with a database URL, and a long enough one', () => {
    const missing = configError({ DATABASE_URL: 'mysql://u@db.example/x' });
    expect(missing.problems).toEqual([expect.stringMatching(/^JWT_SECRET: required/)]);
    const short = configError({ DATABASE_URL: 'mysql://u@db.example/x', JWT_SECRET: 'short' });
    expect(short.problems).toEqual([expect.stringMatching(/^JWT_SECRET: must be at least 32/)]);
  });

  it.each([
    ['PORT', 'eighty'],
    ['PORT', '-1'],
    ['PORT', '70000'],
    ['TRUST_PROXY', 'maybe'],
    ['PUBLIC_BASE_URL', 'gen.example'],
    ['SMTP_URL', 'mail.example:25'],
    ['LOG_LEVEL', 'loud'],
    ['AUTH_LOGIN_LIMIT_PER_MINUTE', 'ten'],
    ['AUTH_FORGOT_LIMIT_PER_HOUR', '1.5'],
    ['OIDC_ISSUER', 'not a url'],
  ])('refuses %s=%s naming the variable', (name, value) => {
    const error = configError({ [name]: value, ...(name === 'OIDC_ISSUER' ? { OIDC_CLIENT_ID: 'client' } : {}) });
    expect(error.problems.some((p) => p.startsWith(`${name}: `))).toBe(true);
  });

  it('forks one web worker per CPU by default, one fewer when the database is on this machine, or WEB_CONCURRENCY', () => {
    const cpus = os.availableParallelism();
    const mysql = (host: string, more: Record<string, string> = {}) => loadConfig({ DATABASE_URL: `mysql://u:p@${host}:3306/db`, JWT_SECRET: SECRET, ...more }).webConcurrency;
    expect(mysql('db.example.com')).toBe(cpus);
    for (const host of ['127.0.0.1', 'localhost', '[::1]']) expect(mysql(host)).toBe(Math.max(1, cpus - 1));
    expect(mysql('127.0.0.1', { WEB_CONCURRENCY: '3' })).toBe(3);
    expect(mysql('db.example.com', { WEB_CONCURRENCY: '1' })).toBe(1);
    expect(loadConfig({}).webConcurrency).toBe(cpus);
  });

  it('names every bad variable in one error', () => {
    const error = configError({
      PORT: 'abc',
      REDIS_URL: 'http://x',
      TRUST_PROXY: 'maybe',
      DATABASE_URL: 'postgres://db.example/gensvc',
      OIDC_ISSUER: 'https://idp.example',
    });
    expect(error).toBeInstanceOf(ConfigError);
    const named = error.problems.map((p) => p.split(':')[0]);
    expect(named).toEqual(
      expect.arrayContaining(['PORT', 'REDIS_URL', 'TRUST_PROXY', 'DATABASE_URL', 'JWT_SECRET', 'OIDC_ISSUER and OIDC_CLIENT_ID']),
    );
    for (const name of ['PORT', 'REDIS_URL', 'TRUST_PROXY', 'DATABASE_URL', 'JWT_SECRET', 'OIDC_CLIENT_ID']) {
      expect(error.message).toContain(name);
    }
    expect(error.message).toMatch(/PostgreSQL/);
  });
});

describe('plans file', () => {
  const shipped = path.join(projectRoot(), 'product', 'plans.json');

  it('ships the five plans of decisions.md and spec 8.1/8.3', () => {
    const plans = loadPlans(shipped);
    const table = plans.all().map((p) => [p.name, p.tokenLimit, p.hourlyLimit, p.dailyLimit, p.retentionDays, p.apiAccess]);
    expect(table).toEqual([
      ['free', 50, 5, 20, 7, false],
      ['basic', 1000, 30, 200, 30, false],
      ['pro', 3000, 60, 500, 90, false],
      ['vip', 8000, 100, 1000, 90, true],
      ['elite', 25000, 0, 0, null, true],
    ]);
    expect(plans.get('free').displayName).toBe('Starter');
    expect(plans.allows('vip', 'pro')).toBe(true);
    expect(plans.allows('basic', 'pro')).toBe(false);
    expect(plans.allows('free', 'free')).toBe(true);
  });

  it('is what loadConfig points at by default', () => {
    expect(loadConfig({}).productFiles.plans).toBe(shipped);
  });

  function shippedRaw(): { plans: Array<Record<string, unknown>> } {
    return JSON.parse(fs.readFileSync(shipped, 'utf8')) as { plans: Array<Record<string, unknown>> };
  }

  it('accepts a valid replacement', () => {
    const raw = shippedRaw();
    raw.plans[0] = { ...raw.plans[0], token_limit: 75, hourly_limit: 7 };
    const plans = parsePlans(raw, 'custom.json');
    expect(plans.get('free').tokenLimit).toBe(75);
    expect(plans.get('free').hourlyLimit).toBe(7);
  });

  it.each<[string, (raw: { plans: Array<Record<string, unknown>> }) => unknown, RegExp]>([
    ['a missing plan', (raw) => ({ plans: raw.plans.filter((p) => p.name !== 'pro') }), /each of free, basic, pro, vip, elite exactly once/],
    ['a duplicated plan', (raw) => ({ plans: [...raw.plans, raw.plans[1]] }), /exactly once/],
    ['an unknown plan name', (raw) => ({ plans: [...raw.plans, { ...raw.plans[1], name: 'platinum' }] }), /plans\.5\.name/],
    ['a negative limit', (raw) => ({ plans: raw.plans.map((p, i) => (i === 2 ? { ...p, hourly_limit: -1 } : p)) }), /plans\.2\.hourly_limit/],
    ['a fractional token limit', (raw) => ({ plans: raw.plans.map((p, i) => (i === 0 ? { ...p, token_limit: 1.5 } : p)) }), /plans\.0\.token_limit/],
    ['a string for a number', (raw) => ({ plans: raw.plans.map((p, i) => (i === 3 ? { ...p, daily_limit: '1000' } : p)) }), /plans\.3\.daily_limit/],
    ['a zero retention', (raw) => ({ plans: raw.plans.map((p, i) => (i === 1 ? { ...p, retention_days: 0 } : p)) }), /plans\.1\.retention_days/],
    ['no plans key', () => ({ tiers: [] }), /plans/],
    ['not an object', () => [1, 2, 3], /invalid/],
  ])('refuses %s with a clear message', (_label, mutate, pattern) => {
    const raw = mutate(shippedRaw());
    expect(() => parsePlans(raw, 'custom-plans.json')).toThrow(/^Plans file custom-plans\.json is invalid: /);
    expect(() => parsePlans(raw, 'custom-plans.json')).toThrow(pattern);
  });

  it('refuses a plans file that is not JSON, naming the file', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gensvc-plans-'));
    try {
      const file = path.join(dir, 'plans.json');
      fs.writeFileSync(file, '{"plans": [');
      expect(() => loadPlans(file)).toThrow(new RegExp(`^Cannot read plans file ${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`));
      expect(() => loadPlans(path.join(dir, 'missing.json'))).toThrow(/Cannot read plans file/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('knows exactly the five plan names', () => {
    expect([...PLAN_NAMES]).toEqual(['free', 'basic', 'pro', 'vip', 'elite']);
  });
});
