/**
 * Plain SQL on the connections TypeORM opened, for the few statements every generation runs
 * (authentication, hold + insert, completion + capture). TypeORM's query building and result
 * transformation cost more CPU than the statements themselves there, and on MySQL each statement
 * of a TypeORM transaction is a round trip of its own; here a transaction is one round trip
 * (a multi-statement batch) and a SQLite transaction is a few synchronous calls.
 * Everything else goes through TypeORM (database.ts).
 */
import type { Pool, PoolConnection, QueryOptions } from 'mysql2';

export type Row = Record<string, unknown>;
export type Params = ReadonlyArray<unknown>;

/** What a write statement reports: rows it changed, and the id an INSERT made. */
export interface WriteResult {
  affected: number;
  insertId: number;
}

/** The part of better-sqlite3's API used here (the package ships no types of its own). */
export interface SqliteStatement {
  readonly reader: boolean;
  all(...params: unknown[]): Row[];
  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint };
}
export interface SqliteConnection {
  prepare(sql: string): SqliteStatement;
  transaction<T>(work: () => T): () => T;
}

/**
 * SQLite: statements prepared once and run synchronously. Writes must be serialized with
 * TypeORM's transactions on the same connection, so `Database.sqliteWrite` queues them.
 */
export class SqliteRaw {
  private readonly statements = new Map<string, SqliteStatement>();

  constructor(readonly connection: SqliteConnection) {}

  private statement(sql: string): SqliteStatement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.connection.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  all<T = Row>(sql: string, params: Params = []): T[] {
    return this.statement(sql).all(...params.map(sqliteValue)) as T[];
  }

  run(sql: string, params: Params = []): WriteResult {
    const result = this.statement(sql).run(...params.map(sqliteValue));
    return { affected: result.changes, insertId: Number(result.lastInsertRowid) };
  }

  /** Runs `work` as one transaction (better-sqlite3 commits it, or rolls it back if it throws). */
  transaction<T>(work: () => T): T {
    return this.connection.transaction(work)();
  }
}

/** better-sqlite3 binds neither booleans nor Dates: stored as 0/1 and as TypeORM's UTC text. */
function sqliteValue(value: unknown): unknown {
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (value instanceof Date) return value.toISOString().replace('T', ' ').replace('Z', '');
  return value;
}

/** One result per statement of a batch: rows for a SELECT, counts for a write. */
export type BatchResult = Array<Row[] | WriteResult>;

const RETRIED_CODES = new Set(['ER_LOCK_DEADLOCK', 'ER_LOCK_WAIT_TIMEOUT']);

/**
 * MySQL: mysql2's callback API on TypeORM's pool (the promise wrapper captures a stack trace per
 * query). The pool is opened with `multipleStatements`, so a batch of statements, a whole
 * transaction included, travels in one round trip. Values are always bound, never spliced in.
 */
export class MysqlRaw {
  constructor(private readonly pool: Pool) {}

  query<T = Row>(sql: string, params: Params = []): Promise<T[]> {
    return new Promise((resolve, reject) => {
      this.pool.query(options(sql, params), (error, rows) => (error ? reject(error) : resolve(rows as T[])));
    });
  }

  /**
   * Sends `sql` (several statements, usually `START TRANSACTION; ...; COMMIT`) in one round trip.
   * If a statement fails, the rest do not run and the open transaction is rolled back before the
   * connection goes back to the pool. A transaction that lost a deadlock or a lock wait is run
   * again; a batch that is not one transaction is not (its first statements may have committed).
   */
  async batch(sql: string, params: Params): Promise<BatchResult> {
    const retriable = sql.startsWith('START TRANSACTION');
    for (let attempt = 1; ; attempt++) {
      const connection = await this.connection();
      try {
        const results = (await send(connection, sql, params)) as unknown[];
        connection.release();
        return results.map((result) => (Array.isArray(result) ? (result as Row[]) : writeResult(result)));
      } catch (error) {
        await send(connection, 'ROLLBACK', []).then(
          () => connection.release(),
          () => connection.destroy(),
        );
        const code = (error as { code?: string }).code;
        if (!retriable || attempt >= 5 || !code || !RETRIED_CODES.has(code)) throw error;
        await new Promise((resolve) => setTimeout(resolve, 5 * attempt + Math.random() * 20));
      }
    }
  }

  private connection(): Promise<PoolConnection> {
    return new Promise((resolve, reject) => {
      this.pool.getConnection((error, connection) => (error ? reject(error) : resolve(connection)));
    });
  }
}

/** mysql2 types its values as mutable; it only reads them. */
function options(sql: string, params: Params): QueryOptions {
  return { sql, values: params as QueryOptions['values'] };
}

function send(connection: PoolConnection, sql: string, params: Params): Promise<unknown> {
  return new Promise((resolve, reject) => {
    connection.query(options(sql, params), (error, result) => (error ? reject(error) : resolve(result)));
  });
}

function writeResult(result: unknown): WriteResult {
  const header = result as { affectedRows?: number; insertId?: number };
  return { affected: Number(header.affectedRows ?? 0), insertId: Number(header.insertId ?? 0) };
}

/** A batch statement's write counts (throws if the statement at `index` returned rows). */
export function writeAt(results: BatchResult, index: number): WriteResult {
  const result = results[index];
  if (!result || Array.isArray(result)) throw new Error(`batch statement ${index} is not a write`);
  return result;
}

/** A batch statement's rows (throws if the statement at `index` was a write). */
export function rowsAt(results: BatchResult, index: number): Row[] {
  const result = results[index];
  if (!Array.isArray(result)) throw new Error(`batch statement ${index} returned no rows`);
  return result;
}
