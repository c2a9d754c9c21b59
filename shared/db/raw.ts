/**
 * Plain SQL on the connections TypeORM opened, for the few statements every generation runs
 * (authentication, hold + insert, completion + capture). TypeORM's query building and result
 * transformation cost more CPU than the statements themselves there, and on MySQL each statement
 * of a TypeORM transaction is a round trip of its own; here a transaction is one round trip
 * (a multi-statement batch) and a SQLite transaction is a few synchronous calls. Balance
 * changes that belong with other TypeORM writes run their SQL inside that TypeORM transaction
 * (`runInTransaction`). Everything else goes through TypeORM (database.ts).
 *
 * Statements name their parameters (`:price`), converted to `?` by mysql2's own converter for
 * both dialects, so a batch of several statements never depends on the order of a value list.
 */
import createCompiler from 'named-placeholders';
import type { EntityManager } from 'typeorm';
import type { Pool, PoolConnection, QueryOptions } from 'mysql2';
import { MysqlGroupCommit } from './mysql-group-commit';

export type Row = Record<string, unknown>;
export type NamedParams = Readonly<Record<string, unknown>>;

/** One SQL statement and its parameters, `:name` in the text, bound from `params` (never spliced in). */
export interface Statement {
  readonly sql: string;
  readonly params?: NamedParams;
}

/** What a write statement reports: rows it changed, and the id an INSERT made. */
export interface WriteResult {
  affected: number;
  insertId: number;
}

const compile = createCompiler({ cache: 1000 });

/**
 * The statement with `?` placeholders and its values in order. A name the SQL uses that `params`
 * does not give is a bug, thrown rather than bound as NULL.
 */
export function positional(statement: Statement): { sql: string; values: unknown[] } {
  const [sql, values] = compile(statement.sql, statement.params ?? {});
  if (values.includes(undefined)) {
    throw new Error(`a parameter of this statement is missing: ${statement.sql.replace(/\s+/g, ' ').slice(0, 120)}`);
  }
  return { sql, values };
}

/** How SQLite keeps a datetime: UTC text in the form TypeORM writes (it cannot bind a Date). */
export function sqliteDateText(date: Date): string {
  return date.toISOString().replace('T', ' ').replace('Z', '');
}

/** better-sqlite3 binds neither booleans nor Dates: stored as 0/1 and as TypeORM's UTC text. */
function sqliteValue(value: unknown): unknown {
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (value instanceof Date) return sqliteDateText(value);
  return value;
}

const LOCK_CONFLICTS = new Set(['ER_LOCK_DEADLOCK', 'ER_LOCK_WAIT_TIMEOUT']);

/**
 * Runs a whole MySQL transaction again when the server chose it as a deadlock victim or it timed
 * out waiting for a lock (the server rolled all of it back): up to five times, with jitter.
 */
export async function retryLockConflicts<T>(transaction: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction();
    } catch (error) {
      const code = (error as { code?: string }).code ?? (error as { driverError?: { code?: string } }).driverError?.code;
      if (attempt >= 5 || !code || !LOCK_CONFLICTS.has(code)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 5 * attempt + Math.random() * 20));
    }
  }
}

/**
 * A statement inside a TypeORM transaction (either dialect), for the writes that go with other
 * TypeORM work (a grant beside the user row it creates): the rows it read, or what it changed.
 */
export async function runInTransaction(em: EntityManager, statement: Statement): Promise<{ rows: Row[]; affected: number }> {
  const runner = em.queryRunner;
  if (!runner) throw new Error('runInTransaction needs an EntityManager of a transaction');
  const { sql, values } = positional(statement);
  const sqlite = em.connection.options.type === 'better-sqlite3';
  const result = (await runner.query(sql, sqlite ? values.map(sqliteValue) : values, true)) as { records?: Row[]; affected?: number };
  return { rows: result.records ?? [], affected: Number(result.affected ?? 0) };
}

/** The part of better-sqlite3's API used here (the package ships no types of its own). */
export interface SqliteStatement {
  readonly reader: boolean;
  all(...params: unknown[]): Row[];
  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint };
}
export interface SqliteConnection {
  readonly inTransaction: boolean;
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

  private prepared(statement: Statement): { prepared: SqliteStatement; values: unknown[] } {
    const { sql, values } = positional(statement);
    let prepared = this.statements.get(sql);
    if (!prepared) {
      prepared = this.connection.prepare(sql);
      this.statements.set(sql, prepared);
    }
    return { prepared, values: values.map(sqliteValue) };
  }

  all<T = Row>(statement: Statement): T[] {
    const { prepared, values } = this.prepared(statement);
    return prepared.all(...values) as T[];
  }

  run(statement: Statement): WriteResult {
    const { prepared, values } = this.prepared(statement);
    const result = prepared.run(...values);
    return { affected: result.changes, insertId: Number(result.lastInsertRowid) };
  }

  /** Runs `work` as one transaction (better-sqlite3 commits it, or rolls it back if it throws). */
  transaction<T>(work: () => T): T {
    return this.connection.transaction(work)();
  }
}

/** One result per statement of a batch: rows for a SELECT, counts for a write. */
export type BatchResult = Array<Row[] | WriteResult>;

/**
 * MySQL: mysql2's callback API on TypeORM's pool (the promise wrapper captures a stack trace per
 * query). The pool is opened with `multipleStatements`, so a batch of statements, a whole
 * transaction included, travels in one round trip. Values are always bound, never spliced in.
 */
export class MysqlRaw {
  readonly groupCommit: MysqlGroupCommit;

  constructor(private readonly pool: Pool) {
    this.groupCommit = new MysqlGroupCommit({ connection: () => this.connection(), retryLockConflicts });
  }

  query<T = Row>(statement: Statement): Promise<T[]> {
    const { sql, values } = positional(statement);
    return new Promise((resolve, reject) => {
      this.pool.query(options(sql, values), (error, rows) => (error ? reject(error) : resolve(rows as T[])));
    });
  }

  /** One write, committed on its own. */
  run(statement: Statement): Promise<WriteResult> {
    const { sql, values } = positional(statement);
    return new Promise((resolve, reject) => {
      this.pool.query(options(sql, values), (error, result) => (error ? reject(error) : resolve(writeResult(result))));
    });
  }

  /**
   * Runs `statements` as one transaction and answers one result per statement. `key` is what it
   * locks (the owner, or a claimed generation): transactions asked for together travel in one
   * round trip and commit together, never two batches of one key at once (mysql-group-commit.ts). If
   * a statement fails, the rest do not run and the transaction is rolled back; a deadlock or lock
   * wait runs the whole of it again.
   */
  async transaction(statements: ReadonlyArray<Statement>, key: string): Promise<BatchResult> {
    const compiled = statements.map(positional);
    const results = await this.groupCommit.run({ sql: compiled.map((c) => c.sql).join(';\n'), values: compiled.flatMap((c) => c.values), statements: compiled.length }, key);
    return results.map((result) => (Array.isArray(result) ? (result as Row[]) : writeResult(result)));
  }

  private connection(): Promise<PoolConnection> {
    return new Promise((resolve, reject) => {
      this.pool.getConnection((error, connection) => (error ? reject(error) : resolve(connection)));
    });
  }
}

/** What a MySQL transaction locks, as `MysqlRaw.transaction` keys it: one owner's row, or one claimed generation. */
export const lockKey = {
  owner: (userId: number): string => `owner:${userId}`,
  generation: (generationId: number): string => `generation:${generationId}`,
};

/** mysql2 types its values as mutable; it only reads them. */
function options(sql: string, values: ReadonlyArray<unknown>): QueryOptions {
  return { sql, values: values as QueryOptions['values'] };
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
