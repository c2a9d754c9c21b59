/**
 * The database: SQLite (better-sqlite3, WAL) in DATA_DIR by default, MySQL/MariaDB through mysql2
 * when a database URL is configured. Schema changes only through the migrations in `migrations/`.
 */
import 'reflect-metadata';
import fs from 'node:fs';
import path from 'node:path';
import mysql from 'mysql2/promise';
import { DataSource, MigrationInterface } from 'typeorm';
import type { DatabaseConfig } from '../config';
import { entities } from './entities';

export type Dialect = 'sqlite' | 'mysql';

/** The schema's migrations, in order: the caller passes them (shared/ never imports migrations/). */
export type Migrations = ReadonlyArray<new () => MigrationInterface>;

export function dialectOf(dataSource: DataSource): Dialect {
  return dataSource.options.type === 'better-sqlite3' ? 'sqlite' : 'mysql';
}

/**
 * TypeORM reads MariaDB's catalogue differently from MySQL's (column defaults in particular), so
 * the server is asked what it is before the DataSource is built.
 */
async function mysqlFlavour(url: string): Promise<'mysql' | 'mariadb'> {
  const connection = await mysql.createConnection(url);
  try {
    const [rows] = await connection.query('SELECT VERSION() AS version');
    const version = String((rows as Array<{ version: string }>)[0]?.version ?? '');
    return /mariadb/i.test(version) ? 'mariadb' : 'mysql';
  } finally {
    await connection.end();
  }
}

export async function createDataSource(database: DatabaseConfig, migrations: Migrations = []): Promise<DataSource> {
  if (database.kind === 'sqlite') {
    if (database.file !== ':memory:') fs.mkdirSync(path.dirname(database.file), { recursive: true });
    return new DataSource({
      type: 'better-sqlite3',
      database: database.file,
      entities,
      migrations: [...migrations],
      migrationsTableName: 'schema_migrations',
      // WAL lets readers and the one writer proceed together; the busy timeout covers the admin
      // command line writing while a server runs on the same file.
      enableWAL: database.file !== ':memory:',
      timeout: 10_000,
      statementCacheSize: 1000,
      prepareDatabase: (db: { pragma: (sql: string) => unknown }) => {
        db.pragma('foreign_keys = ON');
        db.pragma('synchronous = NORMAL');
      },
    });
  }
  const dataSource = new DataSource({
    type: await mysqlFlavour(database.url),
    url: database.url,
    entities,
    migrations: [...migrations],
    migrationsTableName: 'schema_migrations',
    timezone: 'Z',
    charset: 'utf8mb4_unicode_ci',
    supportBigNumbers: true,
    bigNumberStrings: false,
    // The generation hot path sends each transaction as one batch (raw.ts). Every statement in
    // this code base binds its values; none is assembled from input.
    multipleStatements: true,
    extra: { connectionLimit: 20 },
  });
  readCommittedSessions(dataSource);
  return dataSource;
}

/** The SQL every new pooled MySQL connection runs first. */
export const MYSQL_SESSION_SETUP = 'SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED';

interface PoolConnectionLike {
  query(sql: string, callback: (error: Error | null) => void): unknown;
}
interface MysqlModuleLike {
  createPool(options: unknown): { on(event: 'connection', listener: (connection: PoolConnectionLike) => void): unknown };
}

/**
 * READ COMMITTED (no gap locks: concurrent inserts of generations and ledger rows do not deadlock
 * each other) as each connection's session default. TypeORM's `isolationLevel` option would send
 * `SET TRANSACTION ISOLATION LEVEL` before every transaction: a round trip per transaction, two
 * per generation. mysql2 runs a connection's commands in order, so the setting precedes any query.
 */
function readCommittedSessions(dataSource: DataSource): void {
  const driver = dataSource.driver as unknown as { mysql: MysqlModuleLike };
  const mysql = driver.mysql;
  const wrapped: MysqlModuleLike = Object.create(mysql) as MysqlModuleLike;
  wrapped.createPool = (options: unknown) => {
    const pool = mysql.createPool(options);
    pool.on('connection', (connection) => {
      connection.query(MYSQL_SESSION_SETUP, () => undefined);
    });
    return pool;
  };
  driver.mysql = wrapped;
}

/**
 * TypeORM's better-sqlite3 runner caches prepared statements per query runner, and every
 * transaction gets a new runner, so each transaction re-prepared every statement (a fifth of the
 * CPU of a generation request). All runners share one connection, so they can share one cache.
 */
function shareSqliteStatementCache(dataSource: DataSource): void {
  const driver = dataSource.driver as unknown as { createQueryRunner: (mode: string) => { stmtCache?: Map<string, unknown> } };
  const create = driver.createQueryRunner.bind(driver);
  const shared = new Map<string, unknown>();
  driver.createQueryRunner = (mode: string) => {
    const runner = create(mode);
    if (runner.stmtCache instanceof Map) runner.stmtCache = shared;
    return runner;
  };
}

/** Errors of a database that is not there (yet): worth waiting for, unlike a wrong password. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'PROTOCOL_CONNECTION_LOST', 'ER_CON_COUNT_ERROR', 'ER_SERVER_SHUTDOWN']);

function unreachable(error: unknown): boolean {
  const code = (error as { code?: string }).code ?? (error as { driverError?: { code?: string } }).driverError?.code;
  return code !== undefined && UNREACHABLE.has(code);
}

export interface BootWait {
  /** How long to keep trying a database that cannot be reached; 0: fail at once. */
  ms: number;
  /** Told of each failed attempt and the wait before the next (to log it). */
  onRetry(error: unknown, attempt: number, delayMs: number): void;
}

/**
 * A DataSource connected, retrying with backoff (0.5 s doubling to 10 s) while the server cannot
 * be reached, for at most `wait.ms`: a platform that starts the database and the processes at
 * once then needs no restart storm.
 */
async function connected(database: DatabaseConfig, migrations: Migrations | undefined, wait: BootWait | undefined): Promise<DataSource> {
  const deadline = Date.now() + (wait?.ms ?? 0);
  for (let attempt = 1; ; attempt++) {
    try {
      const dataSource = await createDataSource(database, migrations);
      await dataSource.initialize();
      return dataSource;
    } catch (error) {
      const delayMs = Math.min(10_000, 500 * 2 ** (attempt - 1));
      if (!wait || !unreachable(error) || Date.now() + delayMs > deadline) throw error;
      wait.onRetry(error, attempt, delayMs);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
}

/**
 * Opens the store. Given `migrate`, brings the schema up to date with them first (embedded mode,
 * the `release` role and tests); without, the schema is the `release` role's business. Given
 * `wait`, a database that cannot be reached yet is tried again for that long.
 */
export async function openDatabase(database: DatabaseConfig, options: { migrate?: Migrations; wait?: BootWait } = {}): Promise<DataSource> {
  const dataSource = await connected(database, options.migrate, options.wait);
  if (dialectOf(dataSource) === 'sqlite') shareSqliteStatementCache(dataSource);
  if (options.migrate) await dataSource.runMigrations({ transaction: 'each' });
  return dataSource;
}
