/**
 * The statements every generation runs, in plain SQL (db/raw.ts) because they run once or more
 * per request: accepting (the insert, with the hold of its price), a worker's claim (take the
 * lease, read the row), ending (pending → completed with the capture of the hold, or pending →
 * failed with its release) and reading a row. The money moves in billing/, in the transaction
 * of the row's write: one round trip on MySQL, a few synchronous statements on SQLite.
 */
import type { Billing } from '../billing';
import { Database, parseDbDate } from '../db/database';
import { Generation } from '../db/entities';
import { lockKey, Row, rowsAt, Statement, writeAt } from '../db/raw';
import { EntityRows } from '../db/rows';

/** What completion writes on the row. */
export const COMPLETION_FIELDS = [
  'status',
  'provider',
  'resultText',
  'resultKey',
  'thumbnailKey',
  'resultMetadata',
  'usage',
  'seed',
  'progress',
  'tokensSpent',
  'processingMs',
  'completedAt',
  'leaseUntil',
  'updatedAt',
] as const satisfies ReadonlyArray<keyof Generation>;
export type CompletionSet = Pick<Generation, (typeof COMPLETION_FIELDS)[number]>;

/** What failing writes on the row. */
export const FAILURE_FIELDS = ['status', 'error', 'resultMetadata', 'tokensSpent', 'leaseUntil', 'processingMs', 'completedAt', 'updatedAt'] as const satisfies ReadonlyArray<keyof Generation>;
export type FailureSet = Pick<Generation, (typeof FAILURE_FIELDS)[number]>;

/** What a new generation is made of; everything else starts empty (`pendingGeneration`). */
export type NewGeneration = Pick<
  Generation,
  'userId' | 'modelSlug' | 'category' | 'source' | 'prompt' | 'input' | 'price' | 'seed' | 'etaSeconds' | 'idempotencyKey' | 'requestHash' | 'scheduleId' | 'assistantId' | 'createdAt'
>;

/** What every row is born with beside its own fields (updatedAt is its createdAt). */
const AT_BIRTH = {
  provider: null,
  status: 'pending',
  tokensSpent: 0,
  resultText: null,
  resultKey: null,
  thumbnailKey: null,
  resultMetadata: null,
  usage: null,
  error: null,
  progress: 0,
  processingMs: null,
  attempts: 0,
  leaseUntil: null,
  upstreamRef: null,
  isFavorited: false,
  userRating: null,
  hiddenAt: null,
  startedAt: null,
  completedAt: null,
} as const satisfies Omit<Generation, 'id' | 'user' | 'updatedAt' | keyof NewGeneration>;

/**
 * A row as it is born: pending, its price held, nothing charged, run or rated yet. Built with
 * Object.assign, not an object literal spreading `fields` before twenty more properties: V8 builds
 * such a literal in dictionary mode, ~60 µs a row, which the profile of bench:peer showed at 2–5 %
 * of the CPU. Object.assign copies the same properties in about a microsecond.
 */
export function pendingGeneration(fields: NewGeneration): Generation {
  return Object.assign(new Generation(), fields, AT_BIRTH, { updatedAt: fields.createdAt });
}

/** The row's id and the owner's balance as the hold left it; or the balance could not cover the price. */
export type HeldInsert = { held: true; id: number; balance: number } | { held: false };

export interface Completed {
  /** What the user paid: the price, or less if an operator took tokens from under the hold. */
  charged: number;
  /** Subscription plus bonus tokens after the charge. */
  balance: number;
  /** Whether the owner has an active webhook (to hear of the end). */
  hasWebhooks: boolean;
}

/**
 * Whether the owner has an active webhook, read with the capture: a generation's end is announced
 * to them, and for the many users without one that then costs no statement.
 */
/** Read with a completion's outcome (columns of its SELECT): whether anyone is to be told. */
const HAS_WEBHOOKS = 'EXISTS (SELECT 1 FROM webhooks WHERE user_id = :userId AND disabled_at IS NULL) AS webhooks';

const CLAIM = `UPDATE generations SET lease_until = :leaseUntil, attempts = attempts + 1, started_at = COALESCE(started_at, :now), updated_at = :now
  WHERE id = :id AND status = 'pending' AND (lease_until IS NULL OR lease_until < :now)`;

/**
 * The lease of a running job, renewed or let go only by the claim that took it (its attempt
 * number): a runner whose lease lapsed and was taken by another cannot extend or drop it.
 */
const RENEW_LEASE = "UPDATE generations SET lease_until = :leaseUntil WHERE id = :id AND status = 'pending' AND attempts = :attempt";
const LET_GO_OF_LEASE = 'UPDATE generations SET lease_until = NULL WHERE id = :id AND attempts = :attempt';
const SAVE_UPSTREAM_REF = "UPDATE generations SET upstream_ref = :ref WHERE id = :id AND status = 'pending'";
const SAVE_PROGRESS = "UPDATE generations SET progress = :progress WHERE id = :id AND status = 'pending'";

/** Pending rows no runner holds: their lease lapsed (a runner died), or none was ever taken. */
const LAPSED = `SELECT id, model_slug, created_at, lease_until FROM generations
  WHERE status = 'pending' AND lease_until IS NOT NULL AND lease_until < :now ORDER BY id LIMIT 10000`;
const UNHELD = `SELECT id, model_slug, created_at, lease_until FROM generations
  WHERE status = 'pending' AND (lease_until IS NULL OR lease_until < :now) ORDER BY id LIMIT 10000`;

export interface UnheldRow {
  id: number;
  modelSlug: string;
  createdAt: Date;
  /** Null when no runner ever claimed it (a request runs it, or it waits in the queue). */
  leaseUntil: Date | null;
}

/** Lets go of an idempotency key older than the window, so the new row may take it. */
const LET_GO_OF_KEY = 'UPDATE generations SET idempotency_key = NULL WHERE id = :id';

/** The row's values by property name, as a statement's parameters. */
function valuesOf<K extends keyof Generation & string>(row: Pick<Generation, K>, properties: ReadonlyArray<K>): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const property of properties) values[property] = row[property];
  return values;
}

export class GenerationStore {
  private readonly rows: EntityRows<Generation>;
  private readonly findSql: string;
  private readonly insertColumns: ReadonlyArray<keyof Generation & string>;
  /** Columns an INSERT may leave out when the row's value is null (nullable, no default). */
  private readonly nullByDefault: ReadonlySet<string>;
  /** The INSERT for each set of columns a row fills (a new row leaves most of them null). */
  private readonly insertSqlByColumns = new Map<string, string>();
  private readonly insertSuffix: string;
  private readonly completeSql: string;
  private readonly failSql: string;

  constructor(
    private readonly db: Database,
    private readonly billing: Billing,
  ) {
    const rows = new EntityRows(db.source, Generation);
    this.rows = rows;
    this.findSql = `SELECT ${rows.selectList('g', '')} FROM generations g WHERE g.id = :id`;
    this.insertColumns = rows.columns.map((c) => c.property as keyof Generation & string).filter((p) => p !== 'id');
    this.nullByDefault = new Set(rows.columns.filter((c) => c.nullByDefault).map((c) => c.property));
    // A SELECT rather than VALUES: on MySQL the insert runs only if the hold of its batch succeeded.
    this.insertSuffix = `${db.mysql ? ' FROM DUAL' : ''} WHERE ${billing.onlyIfHeld}`;
    const assign = (fields: ReadonlyArray<keyof Generation & string>): string =>
      rows.columnNames(fields).map((column, i) => `${column} = :${fields[i]}`).join(', ');
    this.completeSql = `UPDATE generations SET ${assign(COMPLETION_FIELDS)} WHERE id = :id AND status = 'pending'`;
    this.failSql = `UPDATE generations SET ${assign(FAILURE_FIELDS)} WHERE id = :id AND status = 'pending'`;
  }

  /** The row as TypeORM would read it, or null. */
  async find(id: number): Promise<Generation | null> {
    const [row] = await this.db.read<Row>({ sql: this.findSql, params: { id } });
    return row ? this.rows.hydrate(row) : null;
  }

  /**
   * A runner takes a pending row until `leaseUntil`, if no other runner holds it (its lease
   * passed, or none was taken), and counts the attempt. Returns the row as claimed, or null when
   * it is not this runner's to run (ended, or leased elsewhere). One round trip on MySQL.
   */
  async claim(id: number, leaseUntil: Date, now: Date): Promise<Generation | null> {
    const claim: Statement = { sql: CLAIM, params: { id, leaseUntil, now } };
    const read: Statement = { sql: this.findSql, params: { id } };
    const mysql = this.db.mysql;
    if (mysql) {
      // One transaction: the row read is the one claimed (a cancel cannot slip in between).
      const results = await mysql.transaction([claim, read], lockKey.generation(id));
      const [row] = rowsAt(results, 1);
      return writeAt(results, 0).affected === 1 && row ? this.rows.hydrate(row) : null;
    }
    return this.db.sqliteWrite((sqlite) => {
      if (sqlite.run(claim).affected !== 1) return null;
      const [row] = sqlite.all(read);
      return row ? this.rows.hydrate(row) : null;
    });
  }

  /** Extends the lease of the claim `attempt`; false when the row ended or another claim took it. */
  async renewLease(id: number, attempt: number, leaseUntil: Date): Promise<boolean> {
    return (await this.db.write({ sql: RENEW_LEASE, params: { id, attempt, leaseUntil } })).affected === 1;
  }

  /** Gives the row back to the queue (a retry or a wait for a busy provider), if this claim still holds it. */
  async letGoOfLease(id: number, attempt: number): Promise<void> {
    await this.db.write({ sql: LET_GO_OF_LEASE, params: { id, attempt } });
  }

  async saveUpstreamRef(id: number, ref: string): Promise<void> {
    await this.db.write({ sql: SAVE_UPSTREAM_REF, params: { id, ref } });
  }

  async saveProgress(id: number, progress: number): Promise<void> {
    await this.db.write({ sql: SAVE_PROGRESS, params: { id, progress } });
  }

  /** Pending rows whose lease lapsed; with `unclaimed`, also those no runner ever claimed. */
  async unheld(now: Date, options: { unclaimed: boolean }): Promise<UnheldRow[]> {
    const rows = await this.db.read<Row>({ sql: options.unclaimed ? UNHELD : LAPSED, params: { now } });
    return rows.map((row) => ({
      id: Number(row.id),
      modelSlug: String(row.model_slug),
      createdAt: parseDbDate(row.created_at as string | Date),
      leaseUntil: row.lease_until === null || row.lease_until === undefined ? null : parseDbDate(row.lease_until as string | Date),
    }));
  }

  /**
   * In one transaction: holds the row's price, lets go of a stale idempotency key (a row older
   * than the window), and inserts the row. Nothing changes when the balance cannot cover the price.
   */
  async insertHeld(row: Generation, staleKeyRow: number | null): Promise<HeldInsert> {
    const writes: Statement[] = [];
    if (staleKeyRow !== null) writes.push({ sql: `${LET_GO_OF_KEY} AND ${this.billing.onlyIfHeld}`, params: { id: staleKeyRow } });
    writes.push(this.insertOf(row));
    const written = await this.billing.holdThen({ userId: row.userId, price: row.price }, writes);
    const inserted = written?.written.at(-1);
    return written && inserted ? { held: true, id: inserted.insertId, balance: written.balance } : { held: false };
  }

  /**
   * The INSERT of a new row, naming only the columns it fills: a pending row leaves some twenty of
   * its thirty-four null, and every name and value left out is text the database need not parse.
   */
  private insertOf(row: Generation): Statement {
    const properties = this.insertColumns.filter((p) => !(row[p] === null && this.nullByDefault.has(p)));
    const key = properties.join(',');
    let sql = this.insertSqlByColumns.get(key);
    if (sql === undefined) {
      sql = `INSERT INTO generations (${this.rows.columnNames(properties).join(', ')}) SELECT ${properties.map((p) => `:${p}`).join(', ')}${this.insertSuffix}`;
      // A handful of shapes in practice (which optional fields a request sets); never unbounded.
      if (this.insertSqlByColumns.size < 256) this.insertSqlByColumns.set(key, sql);
    }
    return { sql, params: valuesOf(row, properties) };
  }

  /**
   * pending → completed with `set`, capturing the hold (billing/). Null, and nothing changed,
   * when the row had already ended.
   */
  async complete(generation: Pick<Generation, 'id' | 'userId' | 'price'>, set: CompletionSet, now: Date): Promise<Completed | null> {
    const captured = await this.billing.captureAfter(
      { sql: this.completeSql, params: { ...valuesOf(set, COMPLETION_FIELDS), id: generation.id } },
      { userId: generation.userId, price: generation.price, generationId: generation.id, now },
      { sql: HAS_WEBHOOKS, params: { userId: generation.userId } },
    );
    if (!captured) return null;
    return { charged: captured.charged, balance: captured.balance, hasWebhooks: Number(captured.read?.webhooks) === 1 };
  }

  /** pending → failed with `set`, releasing the hold. False, and nothing changed, when the row had already ended. */
  fail(generation: Pick<Generation, 'id' | 'userId' | 'price'>, set: FailureSet): Promise<boolean> {
    return this.billing.releaseAfter(
      { sql: this.failSql, params: { ...valuesOf(set, FAILURE_FIELDS), id: generation.id } },
      { userId: generation.userId, price: generation.price },
    );
  }
}
