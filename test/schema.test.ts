/**
 * The schema comes from the migrations only: after migrating, the entities describe exactly the
 * tables (no pending DDL), datetimes keep milliseconds in UTC, and the migrations revert cleanly.
 */
import type { DataSource } from 'typeorm';
import { loadConfig } from '../shared/config';
import { createDataSource, dialectOf, openDatabase } from '../shared/db/data-source';
import { User } from '../shared/db/entities';
import { migrations } from '../migrations';
import { freshStores, TestStores } from './helpers/stores';

let stores: TestStores;
let dataSource: DataSource;

beforeAll(async () => {
  stores = await freshStores();
  const config = loadConfig(stores.env);
  dataSource = await openDatabase(config.database, { migrate: migrations });
});

afterAll(async () => {
  if (dataSource?.isInitialized) await dataSource.destroy();
  await stores?.cleanup();
});

async function pendingSchemaChanges(): Promise<string[]> {
  const sql = await dataSource.driver.createSchemaBuilder().log();
  return sql.upQueries.map((q) => q.query);
}

async function tableNames(): Promise<string[]> {
  const rows: Array<{ name: string }> =
    dialectOf(dataSource) === 'sqlite'
      ? await dataSource.query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`)
      : await dataSource.query(`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE()`);
  return rows.map((r) => r.name).sort();
}

/** The stored procedures of the database (MySQL's capture: billing/sql.ts MYSQL_CAPTURE); SQLite has none. */
async function routineNames(): Promise<string[]> {
  if (dialectOf(dataSource) === 'sqlite') return [];
  const rows: Array<{ name: string }> = await dataSource.query('SELECT routine_name AS name FROM information_schema.routines WHERE routine_schema = DATABASE()');
  return rows.map((r) => r.name).sort();
}

function userRow(overrides: Partial<User> = {}): User {
  const repo = dataSource.getRepository(User);
  const now = new Date('2031-05-06T07:08:09.123Z');
  return repo.create({
    name: 'schema test',
    email: `schema-${Math.random().toString(36).slice(2)}@example.test`,
    plan: 'free',
    subscriptionTokens: 50,
    periodStartedAt: now,
    nextRefillAt: new Date('2031-06-06T07:08:09.987Z'),
    createdAt: now,
    updatedAt: now,
    ...overrides,
  });
}

describe('schema', () => {
  it('has applied every migration, in order', async () => {
    const applied: Array<{ name: string }> = await dataSource.query('SELECT name FROM schema_migrations ORDER BY id');
    expect(applied.map((m) => m.name)).toEqual(migrations.map((m) => new m().name ?? m.name));
  });

  it('matches the entities exactly after migrating (no pending DDL)', async () => {
    expect(await pendingSchemaChanges()).toEqual([]);
  });

  it('never synchronizes the schema from the entities', async () => {
    expect(dataSource.options.synchronize ?? false).toBe(false);
    expect(dataSource.options.migrationsRun ?? false).toBe(false);
    const fresh = await createDataSource(loadConfig(stores.env).database, migrations);
    expect(fresh.options.synchronize ?? false).toBe(false);
    expect(fresh.options.dropSchema ?? false).toBe(false);
    expect(fresh.isInitialized).toBe(false);
  });

  it('round-trips datetimes with millisecond precision in UTC', async () => {
    const repo = dataSource.getRepository(User);
    const planExpiresAt = new Date('2031-12-31T23:59:59.999Z');
    const saved = await repo.save(userRow({ planExpiresAt }));
    const loaded = await repo.findOneByOrFail({ id: saved.id });
    expect(loaded.createdAt).toBeInstanceOf(Date);
    expect(loaded.createdAt.toISOString()).toBe('2031-05-06T07:08:09.123Z');
    expect(loaded.nextRefillAt.toISOString()).toBe('2031-06-06T07:08:09.987Z');
    expect(loaded.planExpiresAt?.toISOString()).toBe('2031-12-31T23:59:59.999Z');

    // Stored as UTC wall-clock text, whatever the time zone of the process or the server.
    const rawSql =
      dialectOf(dataSource) === 'sqlite'
        ? 'SELECT created_at AS v FROM users WHERE id = ?'
        : "SELECT DATE_FORMAT(created_at, '%Y-%m-%d %H:%i:%s.%f') AS v FROM users WHERE id = ?";
    const raw: Array<{ v: string }> = await dataSource.query(rawSql, [saved.id]);
    expect(String(raw[0]?.v)).toMatch(/^2031-05-06 07:08:09\.123(000)?$/);

    // A date of a different UTC offset than the process's stays the same instant.
    const odd = new Date(Date.UTC(2030, 0, 1, 0, 0, 0, 1));
    await repo.update({ id: saved.id }, { updatedAt: odd });
    const reloaded = await repo.findOneByOrFail({ id: saved.id });
    expect(reloaded.updatedAt.getTime()).toBe(odd.getTime());

    // Queries comparing datetimes see the same instants.
    const later = await repo
      .createQueryBuilder('u')
      .where('u.id = :id', { id: saved.id })
      .andWhere('u.created_at > :t', { t: dialectOf(dataSource) === 'sqlite' ? '2031-05-06 07:08:09.122' : new Date('2031-05-06T07:08:09.122Z') })
      .getCount();
    expect(later).toBe(1);
    await repo.delete({ id: saved.id });
  });

  it('keeps the column defaults of the entities', async () => {
    const repo = dataSource.getRepository(User);
    const saved = await repo.save(userRow());
    const loaded = await repo.findOneByOrFail({ id: saved.id });
    expect(loaded).toMatchObject({ bonusTokens: 0, heldTokens: 0, language: 'en', imageFormat: 'webp', notificationsEnabled: true });
    expect(loaded.planExpiresAt).toBeNull();
    await repo.delete({ id: saved.id });
  });

  it('reverts every migration and runs them again to the same schema', async () => {
    const before = await tableNames();
    expect(before).toEqual(expect.arrayContaining(['users', 'sessions', 'generations', 'schema_migrations']));

    const routinesBefore = await routineNames();
    expect(routinesBefore).toEqual(dialectOf(dataSource) === 'sqlite' ? [] : ['gensvc_capture']);
    for (let i = 0; i < migrations.length; i++) await dataSource.undoLastMigration({ transaction: 'each' });
    expect(await tableNames()).toEqual(['schema_migrations']);
    expect(await routineNames()).toEqual([]);
    const remaining: Array<{ name: string }> = await dataSource.query('SELECT name FROM schema_migrations');
    expect(remaining).toEqual([]);

    const ran = await dataSource.runMigrations({ transaction: 'each' });
    expect(ran.map((m) => m.name)).toEqual(migrations.map((m) => new m().name ?? m.name));
    expect(await tableNames()).toEqual(before);
    expect(await routineNames()).toEqual(routinesBefore);
    expect(await pendingSchemaChanges()).toEqual([]);

    // The re-created schema works.
    const repo = dataSource.getRepository(User);
    const saved = await repo.save(userRow());
    expect((await repo.findOneByOrFail({ id: saved.id })).createdAt.toISOString()).toBe('2031-05-06T07:08:09.123Z');
  });

  it('reverts the last two migrations one at a time and re-applies them', async () => {
    const before = { tables: await tableNames(), routines: await routineNames() };
    // The last drops MySQL's capture procedure (it changes nothing on SQLite).
    await dataSource.undoLastMigration({ transaction: 'each' });
    expect(await routineNames()).toEqual([]);
    expect(await pendingSchemaChanges()).toEqual([]);
    // The one before it drops a table: the entities are then ahead of the schema.
    await dataSource.undoLastMigration({ transaction: 'each' });
    expect(await tableNames()).toContain('users');
    expect(await pendingSchemaChanges()).not.toEqual([]);
    await dataSource.runMigrations({ transaction: 'each' });
    expect({ tables: await tableNames(), routines: await routineNames() }).toEqual(before);
    expect(await pendingSchemaChanges()).toEqual([]);
  });
});

describe('MySQL sessions', () => {
  it('run every transaction READ COMMITTED, set once per pooled connection rather than per transaction', async () => {
    if (dialectOf(dataSource) === 'sqlite') return;
    // Several connections at once, so more than the first pooled one is checked.
    const levels = await Promise.all(
      Array.from({ length: 6 }, () =>
        dataSource.transaction(async (em) => {
          const [row] = (await em.query('SELECT @@tx_isolation AS level, SLEEP(0.05) AS s')) as Array<{ level: string }>;
          return row?.level;
        }),
      ),
    );
    expect(new Set(levels)).toEqual(new Set(['READ-COMMITTED']));
    expect(dataSource.options).not.toHaveProperty('isolationLevel');
  });
});
