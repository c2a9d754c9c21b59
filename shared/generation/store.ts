/**
 * The statements every generation runs, in plain SQL (db/raw.ts) because they run once or more
 * per request: accepting (hold the price and insert the pending row), a worker's claim (take
 * the lease, read the row), completing (pending → completed, capture the hold with its ledger
 * row, read the balance) and reading a row. Each write is one transaction: one round trip on
 * MySQL (a multi-statement batch whose session variables, @gensvc_*, are set before they are
 * read), a few synchronous statements on SQLite.
 */
import type { Database } from '../db/database';
import { Generation } from '../db/entities';
import { BatchResult, Row, rowsAt, writeAt } from '../db/raw';
import { EntityRows } from '../db/rows';
import { CHARGE_SQL, HOLD_SQL, LEDGER_COLUMNS, splitCharge } from '../billing/holds';

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

/** What a new generation is made of; everything else starts empty (`pendingGeneration`). */
export type NewGeneration = Pick<
  Generation,
  'userId' | 'modelSlug' | 'category' | 'source' | 'prompt' | 'input' | 'price' | 'seed' | 'etaSeconds' | 'idempotencyKey' | 'requestHash' | 'scheduleId' | 'assistantId' | 'createdAt'
>;

/** A row as it is born: pending, its price held, nothing charged, run or rated yet. */
export function pendingGeneration(fields: NewGeneration): Generation {
  return Object.assign(new Generation(), {
    ...fields,
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
    updatedAt: fields.createdAt,
  } satisfies Omit<Generation, 'id' | 'user'>);
}

export type HeldInsert = { held: true; id: number } | { held: false };

export interface Captured {
  /** What the user paid: the price, or less if an operator took tokens from under the hold. */
  charged: number;
  /** Subscription plus bonus tokens after the charge. */
  balance: number;
  /** Whether the owner has an active webhook (to hear of the end). */
  hasWebhooks: boolean;
}

/**
 * Whether the owner has an active webhook (param: user id), read with the charge: a generation's
 * end is announced to them, and for the many users without one that then costs no statement.
 */
const HAS_WEBHOOKS = 'EXISTS (SELECT 1 FROM webhooks WHERE user_id = ? AND disabled_at IS NULL)';
const AFTER_CAPTURE_SQL = `SELECT subscription_tokens + bonus_tokens AS balance, ${HAS_WEBHOOKS} AS webhooks FROM users WHERE id = ?`;

const CLAIM_SQL = `UPDATE generations SET lease_until = ?, attempts = attempts + 1, started_at = COALESCE(started_at, ?), updated_at = ?
  WHERE id = ? AND status = 'pending' AND (lease_until IS NULL OR lease_until < ?)`;

/** A free generation holds nothing: the insert goes ahead as if a hold had succeeded. */
const FREE_OF_CHARGE = 'SET @gensvc_held := 1';

export class GenerationStore {
  private readonly rows: EntityRows<Generation>;
  private readonly findSql: string;
  private readonly insertColumns: ReadonlyArray<keyof Generation & string>;
  private readonly insertSql: string;
  private readonly completeSql: string;
  private readonly mysqlCaptureSql: string;

  constructor(private readonly db: Database) {
    const rows = new EntityRows(db.source, Generation);
    this.rows = rows;
    this.findSql = `SELECT ${rows.selectList('g', '')} FROM generations g WHERE g.id = ?`;
    this.insertColumns = rows.columns.map((c) => c.property as keyof Generation & string).filter((p) => p !== 'id');
    const names = rows.columnNames(this.insertColumns).join(', ');
    const marks = this.insertColumns.map(() => '?').join(', ');
    this.insertSql = db.mysql
      ? `INSERT INTO generations (${names}) SELECT ${marks} FROM DUAL WHERE @gensvc_held = 1`
      : `INSERT INTO generations (${names}) VALUES (${marks})`;
    const assignments = rows.columnNames([...COMPLETION_FIELDS]).map((c) => `${c} = ?`).join(', ');
    this.completeSql = `UPDATE generations SET ${assignments} WHERE id = ? AND status = 'pending'`;
    // The charge computed by the server, against the user row it has just locked: the same
    // split as splitCharge (subscription first, then bonus, never more than is left).
    this.mysqlCaptureSql = [
      'SET @gensvc_won := ROW_COUNT(), @gensvc_s := 0, @gensvc_b := 0, @gensvc_fs := 0, @gensvc_fb := 0',
      // Each expression reads only the row, never a variable this statement assigns.
      // INTO after the locking clause: the position MySQL 8 prefers and MariaDB accepts.
      `SELECT subscription_tokens, bonus_tokens, LEAST(?, GREATEST(subscription_tokens, 0)),
         LEAST(? - LEAST(?, GREATEST(subscription_tokens, 0)), GREATEST(bonus_tokens, 0))
         FROM users WHERE id = ? AND @gensvc_won = 1 FOR UPDATE INTO @gensvc_s, @gensvc_b, @gensvc_fs, @gensvc_fb`,
      `UPDATE users SET subscription_tokens = subscription_tokens - @gensvc_fs, bonus_tokens = bonus_tokens - @gensvc_fb,
         held_tokens = CASE WHEN held_tokens >= ? THEN held_tokens - ? ELSE 0 END,
         tokens_used_this_period = tokens_used_this_period + @gensvc_fs + @gensvc_fb WHERE id = ? AND @gensvc_won = 1`,
      // The row is locked since the SELECT, so the balances after are the ones read minus the charge.
      `INSERT INTO token_ledger (${LEDGER_COLUMNS})
         SELECT ?, -(@gensvc_fs + @gensvc_fb), 'generation', ?, @gensvc_s - @gensvc_fs, @gensvc_b - @gensvc_fb, NULL, ? FROM DUAL
         WHERE @gensvc_won = 1 AND @gensvc_fs + @gensvc_fb > 0`,
      'UPDATE generations SET tokens_spent = @gensvc_fs + @gensvc_fb WHERE id = ? AND @gensvc_won = 1 AND @gensvc_fs + @gensvc_fb <> ?',
      `SELECT @gensvc_won AS won, @gensvc_fs + @gensvc_fb AS charged, @gensvc_s - @gensvc_fs + @gensvc_b - @gensvc_fb AS balance,
         ${HAS_WEBHOOKS} AS webhooks`,
    ].join(';\n');
  }

  /** The row as TypeORM would read it, or null. */
  async find(id: number): Promise<Generation | null> {
    const [row] = await this.db.read<Row>(this.findSql, [id]);
    return row ? this.rows.hydrate(row) : null;
  }

  /**
   * A runner takes a pending row until `leaseUntil`, if no other runner holds it (its lease
   * passed, or none was taken), and counts the attempt. Returns the row as claimed, or null when
   * it is not this runner's to run (ended, or leased elsewhere). One round trip on MySQL.
   */
  async claim(id: number, leaseUntil: Date, now: Date): Promise<Generation | null> {
    const params = [leaseUntil, now, now, id, now];
    const mysql = this.db.mysql;
    if (mysql) {
      // One transaction: the row read is the one claimed (a cancel cannot slip in between).
      const results = await mysql.batch(`START TRANSACTION;\n${CLAIM_SQL};\n${this.findSql};\nCOMMIT`, [...params, id]);
      const [row] = rowsAt(results, 2);
      return writeAt(results, 1).affected === 1 && row ? this.rows.hydrate(row) : null;
    }
    return this.db.sqliteWrite((sqlite) => {
      if (sqlite.run(CLAIM_SQL, params).affected !== 1) return null;
      const [row] = sqlite.all(this.findSql, [id]);
      return row ? this.rows.hydrate(row) : null;
    });
  }

  /**
   * In one transaction: lets go of a stale idempotency key (a row older than the window), holds
   * the row's price, and inserts the row. Nothing changes when the balance cannot cover the price.
   */
  async insertHeld(row: Generation, staleKeyRow: number | null): Promise<HeldInsert> {
    const values = this.insertColumns.map((property) => row[property]);
    const price = Math.trunc(row.price);
    const mysql = this.db.mysql;
    if (mysql) {
      const statements = ['START TRANSACTION'];
      const params: unknown[] = [];
      if (price > 0) {
        statements.push(HOLD_SQL, 'SET @gensvc_held := ROW_COUNT()');
        params.push(price, row.userId, price);
      } else {
        statements.push(FREE_OF_CHARGE);
      }
      if (staleKeyRow !== null) {
        statements.push('UPDATE generations SET idempotency_key = NULL WHERE id = ? AND @gensvc_held = 1');
        params.push(staleKeyRow);
      }
      statements.push(this.insertSql, 'COMMIT');
      params.push(...values);
      const results = await mysql.batch(statements.join(';\n'), params);
      const inserted = writeAt(results, statements.length - 2);
      return inserted.affected === 1 ? { held: true, id: inserted.insertId } : { held: false };
    }
    return this.db.sqliteWrite((sqlite) => {
      if (price > 0 && sqlite.run(HOLD_SQL, [price, row.userId, price]).affected !== 1) return { held: false } as const;
      if (staleKeyRow !== null) sqlite.run('UPDATE generations SET idempotency_key = NULL WHERE id = ?', [staleKeyRow]);
      return { held: true, id: sqlite.run(this.insertSql, values).insertId } as const;
    });
  }

  /**
   * pending → completed with `set`, capturing the hold: subscription tokens first, then bonus,
   * with a ledger row. Null (nothing changed) when the row had already ended.
   */
  async complete(generation: Pick<Generation, 'id' | 'userId' | 'price'>, set: CompletionSet, now: Date): Promise<Captured | null> {
    const values = COMPLETION_FIELDS.map((field) => set[field]);
    const { id, userId } = generation;
    const price = Math.trunc(generation.price);
    const mysql = this.db.mysql;
    if (mysql) {
      const sql = `START TRANSACTION;\n${this.completeSql};\n${this.mysqlCaptureSql};\nCOMMIT`;
      const results: BatchResult = await mysql.batch(sql, [
        ...values, id,
        price, price, price, userId,
        price, price, userId,
        userId, id, now,
        id, price,
        userId,
      ]);
      const [outcome] = rowsAt(results, results.length - 2) as Array<{ won: unknown; charged: unknown; balance: unknown; webhooks: unknown }>;
      if (!outcome || Number(outcome.won) !== 1) return null;
      return { charged: Number(outcome.charged), balance: Number(outcome.balance), hasWebhooks: Number(outcome.webhooks) === 1 };
    }
    return this.db.sqliteWrite((sqlite) => {
      if (sqlite.run(this.completeSql, [...values, id]).affected !== 1) return null;
      const [before] = sqlite.all<{ s: number; b: number }>('SELECT subscription_tokens AS s, bonus_tokens AS b FROM users WHERE id = ?', [userId]);
      const split = splitCharge(price, Number(before?.s ?? 0), Number(before?.b ?? 0));
      const charged = split.fromSubscription + split.fromBonus;
      if (price > 0) sqlite.run(CHARGE_SQL, [split.fromSubscription, split.fromBonus, price, price, charged, userId]);
      if (charged > 0) {
        sqlite.run(
          `INSERT INTO token_ledger (${LEDGER_COLUMNS}) VALUES (?, ?, 'generation', ?, ?, ?, NULL, ?)`,
          [userId, -charged, id, Number(before?.s ?? 0) - split.fromSubscription, Number(before?.b ?? 0) - split.fromBonus, now],
        );
      }
      if (charged !== price) sqlite.run('UPDATE generations SET tokens_spent = ? WHERE id = ?', [charged, id]);
      const [after] = sqlite.all<{ balance: number; webhooks: number }>(AFTER_CAPTURE_SQL, [userId, userId]);
      return { charged, balance: Number(after?.balance ?? 0), hasWebhooks: Number(after?.webhooks) === 1 };
    });
  }
}
