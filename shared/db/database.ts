/**
 * The handle the domain uses. TypeORM runs SQLite on one connection, where two overlapping
 * transactions would corrupt each other (a second BEGIN fails, a stray write joins the wrong
 * transaction). So on SQLite every write goes through `transaction`, serialized by a queue;
 * MySQL transactions run concurrently on pooled connections.
 */
import { DataSource, EntityManager, EntityTarget, ObjectLiteral, Repository } from 'typeorm';
import type { Pool } from 'mysql2';
import { Dialect, dialectOf } from './data-source';
import { MysqlRaw, retryLockConflicts, SqliteConnection, SqliteRaw, sqliteDateText, Statement, WriteResult } from './raw';

/** A datetime from a raw query: mysql2 gives a Date; SQLite gives UTC text without a zone. */
export function parseDbDate(value: string | Date): Date {
  if (value instanceof Date) return value;
  return new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(value) ? value : `${value.replace(' ', 'T')}Z`);
}

/** One `sqliteWrite`: its work, and how its caller hears the outcome (after the commit). */
interface WriteUnit {
  run(): unknown;
  settle(outcome: { ok: true; value: unknown } | { ok: false; error: unknown }): void;
}

/**
 * Group commit: the batch's writes in one SQLite transaction, each inside a savepoint of its own
 * (a write that throws is rolled back alone, and only its caller hears the error), then one
 * COMMIT for all. Each caller hears its outcome only after that commit. One commit writes each
 * changed page to the WAL once for the whole batch: the users row, the index pages every
 * generation touches. If the COMMIT itself fails, every write of the batch fails with it.
 */
function commitBatch(sqlite: SqliteRaw, batch: WriteUnit[]): void {
  const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
  try {
    sqlite.transaction(() => {
      for (const unit of batch) {
        // An error that rolls back the whole transaction (I/O, disk full) fails the batch: no
        // later write may run outside it and commit on its own while its caller hears an error.
        if (!sqlite.connection.inTransaction) throw new Error('the batch transaction was rolled back');
        try {
          outcomes.push({ ok: true, value: sqlite.transaction(() => unit.run()) });
        } catch (error) {
          outcomes.push({ ok: false, error });
        }
      }
    });
  } catch (error) {
    for (const unit of batch) unit.settle({ ok: false, error });
    return;
  }
  batch.forEach((unit, i) => unit.settle(outcomes[i] ?? { ok: false, error: new Error('write not run') }));
}

export class Database {
  readonly dialect: Dialect;
  private writeQueue: Promise<unknown> = Promise.resolve();
  /** The group commit still taking in writes (sqliteWrite), if any. */
  private openBatch: WriteUnit[] | null = null;
  /** What `afterCommit` asked for, by the transaction's manager (a retried attempt's are dropped with it). */
  private readonly committedEffects = new WeakMap<EntityManager, Array<() => void>>();
  /** Plain SQL on the same connection / pool (raw.ts): set for the dialect in use, null otherwise. */
  readonly sqlite: SqliteRaw | null;
  readonly mysql: MysqlRaw | null;

  constructor(readonly source: DataSource) {
    this.dialect = dialectOf(source);
    const driver = source.driver as unknown as { databaseConnection?: SqliteConnection; pool?: Pool };
    this.sqlite = this.dialect === 'sqlite' && driver.databaseConnection ? new SqliteRaw(driver.databaseConnection) : null;
    this.mysql = this.dialect === 'mysql' && driver.pool ? new MysqlRaw(driver.pool) : null;
  }

  /** A read in plain SQL, outside any transaction, on either dialect. */
  async read<T>(statement: Statement): Promise<T[]> {
    if (this.mysql) return this.mysql.query<T>(statement);
    if (this.sqlite) return this.sqlite.all<T>(statement);
    throw new Error('no plain-SQL connection for this store');
  }

  /** One write in plain SQL, committed on its own, on either dialect. */
  async write(statement: Statement): Promise<WriteResult> {
    if (this.mysql) return this.mysql.run(statement);
    return this.sqliteWrite((sqlite) => sqlite.run(statement));
  }

  /**
   * Synchronous plain-SQL work as one SQLite transaction, queued behind TypeORM's transactions
   * on the same connection (a transaction begun while one of theirs is open would join it).
   * Writes asked for together commit together (commitBatch): each is atomic on its own and is
   * reported only once committed, but one commit serves them all.
   */
  sqliteWrite<T>(work: (sqlite: SqliteRaw) => T): Promise<T> {
    const sqlite = this.sqlite;
    if (!sqlite) throw new Error('sqliteWrite needs the SQLite store');
    return new Promise<T>((resolve, reject) => {
      const unit: WriteUnit = { run: () => work(sqlite), settle: (outcome) => (outcome.ok ? resolve(outcome.value as T) : reject(outcome.error)) };
      if (this.openBatch) {
        this.openBatch.push(unit);
        return;
      }
      const batch: WriteUnit[] = [unit];
      this.openBatch = batch;
      // The batch takes in every write asked for in this turn of the event loop (setImmediate
      // runs after the I/O callbacks of the turn), and any asked for while it waits in the queue.
      const run = this.writeQueue.then(
        () =>
          new Promise<void>((done) =>
            setImmediate(() => {
              this.openBatch = null;
              commitBatch(sqlite, batch);
              done();
            }),
          ),
      );
      this.writeQueue = run.catch(() => undefined);
    });
  }

  /**
   * The MySQL pool's use, for the metrics: connections open, idle, requests waiting for one, and
   * the limit. mysql2 exposes no API for it, so its fields are read defensively; null on SQLite
   * (one connection, no pool) or when they are not there.
   */
  poolUsage(): { open: number; idle: number; waiting: number; limit: number } | null {
    if (this.dialect !== 'mysql') return null;
    const pool = (this.source.driver as unknown as { pool?: unknown }).pool as
      | { _allConnections?: { length: number }; _freeConnections?: { length: number }; _connectionQueue?: { length: number }; config?: { connectionLimit?: number } }
      | undefined;
    if (!pool?._allConnections || !pool._freeConnections || !pool._connectionQueue) return null;
    return {
      open: pool._allConnections.length,
      idle: pool._freeConnections.length,
      waiting: pool._connectionQueue.length,
      limit: Number(pool.config?.connectionLimit ?? 0),
    };
  }

  /** For reads outside a transaction. */
  get manager(): EntityManager {
    return this.source.manager;
  }

  repo<T extends ObjectLiteral>(entity: EntityTarget<T>): Repository<T> {
    return this.source.getRepository(entity);
  }

  transaction<T>(work: (em: EntityManager) => Promise<T>): Promise<T> {
    let lastAttempt: EntityManager | undefined;
    const attempt = (em: EntityManager): Promise<T> => {
      lastAttempt = em;
      return work(em);
    };
    const committed = (result: T): T => {
      const effects = lastAttempt ? this.committedEffects.get(lastAttempt) : undefined;
      for (const effect of effects ?? []) effect();
      return result;
    };
    // MySQL may pick a transaction as a deadlock victim; the whole of it is rolled back and retried.
    if (this.dialect === 'mysql') return retryLockConflicts(() => this.source.transaction(attempt)).then(committed);
    const run = this.writeQueue.then(() => this.source.transaction(attempt));
    // The queue continues whether this transaction commits or fails.
    this.writeQueue = run.catch(() => undefined);
    return run.then(committed);
  }

  /**
   * Runs `effect` once the transaction `em` belongs to (one of `transaction`'s) has committed,
   * never if it rolls back: what others must hear of a change (account-changes) waits for it.
   */
  afterCommit(em: EntityManager, effect: () => void): void {
    const effects = this.committedEffects.get(em);
    if (effects) effects.push(effect);
    else this.committedEffects.set(em, [effect]);
  }

  /**
   * Reads a row to change it: locked until the transaction ends on MySQL; on SQLite the write
   * queue already serializes writers.
   */
  async lockOne<T extends ObjectLiteral>(em: EntityManager, entity: EntityTarget<T>, id: number): Promise<T | null> {
    const qb = em.getRepository(entity).createQueryBuilder('row').where('row.id = :id', { id });
    if (this.dialect === 'mysql') qb.setLock('pessimistic_write');
    return qb.getOne();
  }

  /**
   * A Date as a raw query parameter: MySQL takes the Date (mysql2 formats it in UTC); SQLite keeps
   * datetimes as UTC text in the form TypeORM writes them, and cannot bind a Date at all.
   */
  dateParam(date: Date): Date | string {
    return this.dialect === 'mysql' ? date : sqliteDateText(date);
  }

  async ping(): Promise<void> {
    await this.source.query('SELECT 1');
  }

  async close(): Promise<void> {
    if (this.source.isInitialized) await this.source.destroy();
  }
}
