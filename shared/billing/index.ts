/**
 * Every movement of a balance, and the only code that moves one. A generation's price is held
 * at acceptance (one conditional UPDATE, so concurrent requests can never hold more than the
 * balance), then captured when it completes (charged: subscription tokens first, then bonus,
 * with a ledger row) or released when it fails. Grants, refills, plan changes and corrections
 * are balance changes with a ledger row each.
 *
 * A hold, capture or release happens in the same transaction as the write of the generation row
 * it belongs to (the caller's statements: insert, or the conditional pending → ended update),
 * one round trip on MySQL and a few synchronous statements on SQLite. The SQL is in sql.ts.
 */
import type { EntityManager } from 'typeorm';
import type { Database } from '../db/database';
import type { LedgerReason, User } from '../db/entities';
import { lockKey, Row, rowsAt, runInTransaction, Statement, writeAt, WriteResult } from '../db/raw';
import * as sql from './sql';

export interface Hold {
  userId: number;
  /** Tokens; 0 holds nothing. */
  price: number;
}

export interface Charge extends Hold {
  generationId: number;
  now: Date;
}

export interface Captured {
  /** What the user paid: the price, or less if an operator took tokens from under the hold. */
  charged: number;
  /** Subscription plus bonus tokens after the charge. */
  balance: number;
  /** The first row of the read that travelled with the capture, if one was given. */
  read: Row | null;
}

export interface BalanceChange {
  subscriptionDelta: number;
  bonusDelta: number;
  reason: LedgerReason;
  generationId?: number | null;
  note?: string | null;
}

export interface ChargeSplit {
  fromSubscription: number;
  fromBonus: number;
}

/**
 * How a held price is charged: subscription tokens first, then bonus tokens (decisions.md
 * "Plans"). Normally the whole price; if an operator took tokens from under the hold, only what
 * is left. (MySQL computes the same in SQL: the procedure sql.ts MYSQL_CAPTURE calls.)
 */
export function splitCharge(price: number, subscription: number, bonus: number): ChargeSplit {
  const fromSubscription = Math.min(price, Math.max(0, subscription));
  const fromBonus = Math.min(price - fromSubscription, Math.max(0, bonus));
  return { fromSubscription, fromBonus };
}

/**
 * What taking `amount` tokens back (a negative grant, a refund) removes: bonus tokens first, then
 * subscription tokens, never more than the free balance, so what pending generations hold stays
 * (decisions.md: a correction never takes held tokens). Less than `amount` when less is there.
 */
export function splitTakeBack(amount: number, user: Pick<User, 'subscriptionTokens' | 'bonusTokens' | 'heldTokens'>): ChargeSplit {
  const available = Math.min(Math.max(0, amount), freeBalance(user));
  const fromBonus = Math.min(available, Math.max(0, user.bonusTokens));
  const fromSubscription = Math.min(available - fromBonus, Math.max(0, user.subscriptionTokens));
  return { fromSubscription, fromBonus };
}

/** `token_balance` / `balance_remaining`: subscription plus bonus tokens, holds not subtracted. */
export function tokenBalance(user: Pick<User, 'subscriptionTokens' | 'bonusTokens'>): number {
  return user.subscriptionTokens + user.bonusTokens;
}

/** What a new generation can still hold: the balance less what pending generations hold. */
export function freeBalance(user: Pick<User, 'subscriptionTokens' | 'bonusTokens' | 'heldTokens'>): number {
  return Math.max(0, tokenBalance(user) - user.heldTokens);
}

const tokens = (n: number): number => Math.trunc(n);

export class Billing {
  constructor(private readonly db: Database) {}

  /** Subscription plus bonus tokens (the balance answers show), read with one indexed statement; null for no such user. */
  async balanceOf(userId: number): Promise<number | null> {
    const [row] = await this.db.read<{ balance: number | string }>({ sql: sql.BALANCE, params: { userId } });
    return row ? Number(row.balance) : null;
  }

  /**
   * On MySQL, the condition a write passed to `holdThen` must carry to run only when the price was
   * held (its batch cannot branch); on SQLite such writes run only then anyway.
   */
  get onlyIfHeld(): string {
    return this.db.mysql ? sql.MYSQL_HELD : '1 = 1';
  }

  /**
   * One transaction: holds `price` of the user's free balance and, only if it was held, runs
   * `writes` (which on MySQL carry `onlyIfHeld`). Their results and the balance after them (read
   * in the same transaction: a queued generation's answer carries it without a statement of its
   * own), or null when the balance cannot cover the price and nothing changed.
   */
  async holdThen(hold: Hold, writes: ReadonlyArray<Statement>): Promise<{ written: WriteResult[]; balance: number } | null> {
    const params = { userId: hold.userId, price: tokens(hold.price) };
    const mysql = this.db.mysql;
    if (mysql) {
      // A write without the guard would run whether or not the price was held.
      const unguarded = writes.find((write) => !write.sql.includes(sql.MYSQL_HELD));
      if (unguarded) throw new Error(`a write after a hold must carry onlyIfHeld: ${unguarded.sql.slice(0, 80)}`);
      const holding = params.price > 0 ? [{ sql: sql.HOLD, params }, { sql: sql.MYSQL_HOLD_RESULT }] : [{ sql: sql.MYSQL_NOTHING_TO_HOLD }];
      const results = await mysql.transaction([...holding, ...writes, { sql: sql.BALANCE, params }], lockKey.owner(hold.userId));
      // The hold's own count says whether it was held (the writes after it were guarded by it).
      if (params.price > 0 && writeAt(results, 0).affected !== 1) return null;
      return { written: results.slice(holding.length, -1) as WriteResult[], balance: Number(rowsAt(results, results.length - 1)[0]?.balance ?? 0) };
    }
    return this.db.sqliteWrite((sqlite) => {
      if (params.price > 0 && sqlite.run({ sql: sql.HOLD, params }).affected !== 1) return null;
      const written = writes.map((write) => sqlite.run(write));
      return { written, balance: Number(sqlite.all<{ balance: number }>({ sql: sql.BALANCE, params })[0]?.balance ?? 0) };
    });
  }

  /**
   * One transaction: `finish` (the generation's conditional pending → completed update) and, if
   * it changed the row, the capture of its hold, then `alongside` (columns of a SELECT, read in
   * the same statement as the outcome). Null when `finish` changed nothing (the generation had
   * ended): nothing moved.
   */
  async captureAfter(finish: Statement, charge: Charge, alongside?: Statement): Promise<Captured | null> {
    const params = { userId: charge.userId, price: tokens(charge.price), generationId: charge.generationId, now: charge.now };
    const mysql = this.db.mysql;
    if (mysql) {
      const outcome: Statement = alongside ? { sql: `${sql.MYSQL_CAPTURE_RESULT}, ${alongside.sql}`, params: alongside.params } : { sql: sql.MYSQL_CAPTURE_RESULT };
      // The procedure is handed the finishing write's count: it must come right after it.
      const results = await mysql.transaction([finish, { sql: sql.MYSQL_CAPTURE, params }, outcome], lockKey.owner(charge.userId));
      const row = rowsAt(results, results.length - 1)[0];
      if (!row || Number(row.won) !== 1) return null;
      return { charged: Number(row.charged), balance: Number(row.balance), read: alongside ? row : null };
    }
    return this.db.sqliteWrite((sqlite) => {
      if (sqlite.run(finish).affected !== 1) return null;
      const [before] = sqlite.all<{ subscription: number; bonus: number }>({ sql: sql.BALANCES, params });
      const subscription = Number(before?.subscription ?? 0);
      const bonus = Number(before?.bonus ?? 0);
      const split = splitCharge(params.price, subscription, bonus);
      const charged = split.fromSubscription + split.fromBonus;
      if (params.price > 0) sqlite.run({ sql: sql.SQLITE_CAPTURE, params: { ...params, ...split, charged } });
      const subscriptionAfter = subscription - split.fromSubscription;
      const bonusAfter = bonus - split.fromBonus;
      if (charged > 0) {
        sqlite.run({ sql: sql.LEDGER_ROW, params: { ...params, amount: -charged, reason: 'generation', subscriptionAfter, bonusAfter, note: null } });
      }
      if (charged !== params.price) sqlite.run({ sql: sql.CHARGED_ON_ROW, params: { charged, generationId: params.generationId } });
      return { charged, balance: subscriptionAfter + bonusAfter, read: alongside ? (sqlite.all({ sql: `SELECT ${alongside.sql}`, params: alongside.params })[0] ?? null) : null };
    });
  }

  /**
   * One transaction: `finish` (the generation's conditional pending → failed update) and, if it
   * changed the row, the release of its hold. False when `finish` changed nothing.
   */
  async releaseAfter(finish: Statement, hold: Hold): Promise<boolean> {
    const params = { userId: hold.userId, price: tokens(hold.price) };
    const mysql = this.db.mysql;
    if (mysql) {
      const release = params.price > 0 ? [{ sql: sql.MYSQL_RELEASE_IF_WON, params }] : [];
      const results = await mysql.transaction([finish, { sql: sql.MYSQL_WON_RESULT }, ...release, { sql: sql.MYSQL_WON_FLAG }], lockKey.owner(hold.userId));
      return Number(rowsAt(results, results.length - 1)[0]?.won) === 1;
    }
    return this.db.sqliteWrite((sqlite) => {
      if (sqlite.run(finish).affected !== 1) return false;
      if (params.price > 0) sqlite.run({ sql: sql.RELEASE, params });
      return true;
    });
  }

  /**
   * A grant, refill, plan change or correction with its ledger row, in the caller's transaction
   * (beside the other writes it belongs with). Null, and nothing changed, when it would take a
   * bucket below zero.
   */
  async change(em: EntityManager, userId: number, change: BalanceChange, now: Date): Promise<{ subscriptionAfter: number; bonusAfter: number } | null> {
    const deltas = { subscriptionDelta: tokens(change.subscriptionDelta), bonusDelta: tokens(change.bonusDelta) };
    const changed = await runInTransaction(em, { sql: sql.CHANGE, params: { userId, now, ...deltas } });
    if (changed.affected !== 1) return null;
    const [after] = (await runInTransaction(em, { sql: sql.BALANCES, params: { userId } })).rows;
    const balances = { subscriptionAfter: Number(after?.subscription ?? 0), bonusAfter: Number(after?.bonus ?? 0) };
    await runInTransaction(em, {
      sql: sql.LEDGER_ROW,
      params: {
        userId,
        amount: deltas.subscriptionDelta + deltas.bonusDelta,
        reason: change.reason,
        generationId: change.generationId ?? null,
        note: change.note ?? null,
        now,
        ...balances,
      },
    });
    return balances;
  }
}
