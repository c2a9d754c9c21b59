/**
 * Group commit on MySQL: the transactions asked for while an earlier one of the same lane is on
 * its way travel together, as one transaction in one round trip, and commit once.
 *
 * Why: every billed generation runs two short transactions that all lock the owner's `users`
 * row. Profiled under load (README, "What the profiles showed"), the cost was not the statements
 * but what surrounds each transaction: a socket write per round trip (on loopback the sender pays
 * for the receiver's TCP stack too), MariaDB waking a thread per connection, twenty connections
 * queueing on the same row lock, and a commit each. A lane has at most eight batches on their way,
 * so under load its transactions gather into batches by themselves (measured: ~9 a commit), and
 * a quiet service sends every transaction alone, at once.
 *
 * Each transaction keeps its own outcome: when the server refuses a statement of a batch before
 * its COMMIT (a duplicate key in one of them, a lock conflict), it has stopped there and the batch
 * is rolled back, and then each of its transactions runs again on its own, so only the one at
 * fault hears an error. On any other error (the connection broke, the COMMIT failed) nothing runs
 * again, since the COMMIT may have happened: every transaction of the batch hears the error, as
 * it would have alone. Nothing of a batch is reported before its COMMIT has answered.
 *
 * The contract for a transaction's statements: read no session variable the transaction did not
 * set itself (billing/sql.ts sets its flags first), since the batch before it ran on the same
 * session.
 */
import type { PoolConnection } from 'mysql2';

/** A transaction's statements compiled to `?` placeholders, and how many there are. */
export interface CompiledTransaction {
  sql: string;
  values: unknown[];
  statements: number;
}

/** About how many bytes a transaction adds to a batch's packet. */
function sizeOf(transaction: CompiledTransaction): number {
  let bytes = transaction.sql.length;
  for (const value of transaction.values) bytes += typeof value === 'string' || Buffer.isBuffer(value) ? value.length * 2 : 24;
  return bytes;
}

/** One result per statement: rows for a SELECT, the server's OK packet for the others. */
export type RawResults = unknown[];

export interface GroupCommitDeps {
  /** A pooled connection. */
  connection(): Promise<PoolConnection>;
  /** Runs `work` again when the server picked it as a deadlock victim (raw.ts retryLockConflicts). */
  retryLockConflicts<T>(work: () => Promise<T>): Promise<T>;
}

interface Waiting {
  transaction: CompiledTransaction;
  resolve(results: RawResults): void;
  reject(error: unknown): void;
}

interface Lane {
  /** Transactions asked for since the lane's batch left. */
  waiting: Waiting[];
  /** Batches on their way. */
  inFlight: number;
  /** A batch leaves at the end of this turn of the event loop. */
  scheduled: boolean;
}

/**
 * How many batches one process has on their way at once: transactions of different owners go
 * in parallel (MariaDB runs each connection's batch on a thread of its own), one owner's one
 * batch after another (they would only queue on its row lock).
 */
const LANES = 2;
/** A batch stays well under MariaDB's max_allowed_packet (16 MB by default) and keeps its locks briefly. */
const IN_FLIGHT = 8;
const MAX_BATCH_TRANSACTIONS = 64;
const MAX_BATCH_BYTES = 1 << 20;

/**
 * The server's refusals of a statement before the COMMIT (the batch stops there with nothing
 * committed): a duplicate key, a lock conflict, a missing parent row, a value the column refuses,
 * a statement it cannot parse. Any other error may have come from the COMMIT or after it.
 */
const REFUSED_BEFORE_COMMIT = new Set([
  'ER_DUP_ENTRY',
  'ER_DUP_KEY',
  'ER_LOCK_DEADLOCK',
  'ER_LOCK_WAIT_TIMEOUT',
  'ER_NO_REFERENCED_ROW',
  'ER_NO_REFERENCED_ROW_2',
  'ER_ROW_IS_REFERENCED_2',
  'ER_BAD_NULL_ERROR',
  'ER_DATA_TOO_LONG',
  'ER_TRUNCATED_WRONG_VALUE',
  'ER_TRUNCATED_WRONG_VALUE_FOR_FIELD',
  'ER_WARN_DATA_OUT_OF_RANGE',
  'ER_CHECK_CONSTRAINT_VIOLATED',
  'ER_PARSE_ERROR',
  'ER_BAD_FIELD_ERROR',
  'ER_NO_SUCH_TABLE',
]);

export class MysqlGroupCommit {
  private readonly lanes: Lane[] = Array.from({ length: LANES }, () => ({ waiting: [], inFlight: 0, scheduled: false }));
  /** Batches sent, and the transactions they carried (the tests read how many went together). */
  readonly sent = { batches: 0, transactions: 0 };

  constructor(private readonly deps: GroupCommitDeps) {}

  /** Runs `transaction` in a batch of its lane, chosen by `key` (what it locks: the owner, or a claim's generation). */
  run(transaction: CompiledTransaction, key: number): Promise<RawResults> {
    const lane = this.lanes[Math.abs(Math.trunc(key)) % LANES] as Lane;
    return new Promise<RawResults>((resolve, reject) => {
      lane.waiting.push({ transaction, resolve, reject });
      this.pump(lane);
    });
  }

  /**
   * Sends the lane's next batch at the end of this turn of the event loop, when it has room: the
   * transactions asked for in the same turn (the requests whose answers arrived together) join it.
   */
  private pump(lane: Lane): void {
    if (lane.scheduled || lane.inFlight >= IN_FLIGHT || lane.waiting.length === 0) return;
    lane.scheduled = true;
    setImmediate(() => {
      lane.scheduled = false;
      const batch = takeBatch(lane.waiting);
      lane.inFlight++;
      this.sent.batches++;
      this.sent.transactions += batch.length;
      // More than one batch's worth waiting: the next leaves too if there is room.
      this.pump(lane);
      void this.settle(batch).finally(() => {
        lane.inFlight--;
        this.pump(lane);
      });
    });
  }

  private async settle(batch: Waiting[]): Promise<void> {
    if (batch.length === 1) {
      const [only] = batch as [Waiting];
      await this.deps.retryLockConflicts(() => this.execute([only.transaction])).then(
        ([results]) => only.resolve(results as RawResults),
        (error: unknown) => only.reject(error),
      );
      return;
    }
    try {
      const results = await this.executeRetryingDeadlocks(batch.map((w) => w.transaction));
      batch.forEach((waiting, i) => waiting.resolve(results[i] as RawResults));
    } catch (error) {
      if (!REFUSED_BEFORE_COMMIT.has(String((error as { code?: unknown }).code))) {
        // The connection broke, or an error the COMMIT itself may have raised: whether it
        // happened is unknown, so running the transactions again could apply them twice. Each
        // caller hears the error, as it would have alone.
        for (const waiting of batch) waiting.reject(error);
        return;
      }
      // A statement was refused and the batch rolled back as a whole: each transaction again on
      // its own, all at once (one waiting on a lock holds up none of the others), so only the
      // one at fault fails.
      await Promise.all(batch.map((waiting) => this.settle([waiting])));
    }
  }

  /**
   * A batch the server picked as a deadlock victim runs again (it was rolled back whole, and
   * deadlocks are found at once). A lock wait that timed out does not: the batch's transactions
   * then run on their own, so the one waiting holds up no other for another timeout.
   */
  private async executeRetryingDeadlocks(transactions: CompiledTransaction[]): Promise<RawResults[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.execute(transactions);
      } catch (error) {
        if (attempt >= 5 || (error as { code?: unknown }).code !== 'ER_LOCK_DEADLOCK') throw error;
        await new Promise((resolve) => setTimeout(resolve, 5 * attempt + Math.random() * 20));
      }
    }
  }

  /** One round trip: START TRANSACTION, every transaction's statements, COMMIT; results by transaction. */
  private async execute(transactions: CompiledTransaction[]): Promise<RawResults[]> {
    const sql = ['START TRANSACTION', ...transactions.map((t) => t.sql), 'COMMIT'].join(';\n');
    const values = transactions.flatMap((t) => t.values);
    const connection = await this.deps.connection();
    let results: RawResults;
    try {
      results = (await query(connection, sql, values)) as RawResults;
    } catch (error) {
      // The server stopped at the failing statement with the transaction open.
      await query(connection, 'ROLLBACK', []).then(
        () => connection.release(),
        () => connection.destroy(),
      );
      throw error;
    }
    connection.release();
    const byTransaction: RawResults[] = [];
    let at = 1; // after START TRANSACTION's result
    for (const transaction of transactions) {
      byTransaction.push(results.slice(at, at + transaction.statements));
      at += transaction.statements;
    }
    return byTransaction;
  }
}

/** The oldest waiting transactions that fit in one batch (always at least one). */
function takeBatch(waiting: Waiting[]): Waiting[] {
  let bytes = 0;
  let count = 0;
  for (const next of waiting) {
    bytes += sizeOf(next.transaction);
    if (count > 0 && (count >= MAX_BATCH_TRANSACTIONS || bytes > MAX_BATCH_BYTES)) break;
    count++;
  }
  return waiting.splice(0, count);
}

function query(connection: PoolConnection, sql: string, values: ReadonlyArray<unknown>): Promise<unknown> {
  return new Promise((resolve, reject) => {
    connection.query({ sql, values: values as unknown[] }, (error, result) => (error ? reject(error) : resolve(result)));
  });
}
