/**
 * Group commit on MySQL: the transactions asked for while earlier ones are on their way travel
 * together, as one transaction in one round trip, and commit once.
 *
 * Why: every billed generation runs two short transactions that all lock the owner's `users`
 * row. Profiled under load (README, "What the profiles showed"), the cost was not the statements
 * but what surrounds each transaction: a socket write per round trip (on loopback the sender pays
 * for the receiver's TCP stack too), MariaDB waking a thread per connection, twenty connections
 * queueing on the same row lock, and a commit each. At most eight batches are on their way, and
 * never two with the same key (the owner whose row they lock), so under load transactions gather
 * into batches by themselves, and a quiet service sends every transaction alone, at once.
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
  key: string;
  resolve(results: RawResults): void;
  reject(error: unknown): void;
}

/**
 * How many batches one process has on their way at once. Batches of different keys go in
 * parallel (MariaDB runs each connection's batch on a thread of its own); one key's batches go
 * one after another, never two at once: two batches that lock the same owner's row would only
 * queue on its lock inside MariaDB, each waiting thread put to sleep and woken again. Measured
 * with one busy owner (bench/ab.ts): one batch at a time 1.11–1.24× the req/s of eight at once,
 * MariaDB's row-lock waits from one in every two batches to none.
 */
const IN_FLIGHT = 8;
/** A batch stays well under MariaDB's max_allowed_packet (16 MB by default) and keeps its locks briefly. */
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
  // The capture procedure missing, not the caller's to run, or its definer gone.
  'ER_SP_DOES_NOT_EXIST',
  'ER_PROCACCESS_DENIED_ERROR',
  'ER_NO_SUCH_USER',
]);

export class MysqlGroupCommit {
  /** Transactions not yet sent, oldest first. */
  private readonly waiting: Waiting[] = [];
  /** The keys of the batches on their way: a transaction of one of them waits for its batch. */
  private readonly busy = new Set<string>();
  private inFlight = 0;
  /** A batch leaves at the end of this turn of the event loop. */
  private scheduled = false;
  /** Batches sent, and the transactions they carried (the tests read how many went together). */
  readonly sent = { batches: 0, transactions: 0 };

  constructor(private readonly deps: GroupCommitDeps) {}

  /**
   * Runs `transaction` in the next batch that may carry `key` (what it locks: `owner:<id>`, or a
   * claim's `generation:<id>`): the next to leave, unless a batch with that key is on its way.
   */
  run(transaction: CompiledTransaction, key: string): Promise<RawResults> {
    return new Promise<RawResults>((resolve, reject) => {
      this.waiting.push({ transaction, key, resolve, reject });
      // A key with a batch on its way: that batch's return sends this one.
      if (!this.busy.has(key)) this.pump();
    });
  }

  /**
   * Sends the next batch at the end of this turn of the event loop, when there is room: the
   * transactions asked for in the same turn (the requests whose answers arrived together) and
   * those that waited for their key's batch to come back join it.
   */
  private pump(): void {
    if (this.scheduled || this.inFlight >= IN_FLIGHT || this.waiting.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const batch = takeBatch(this.waiting, this.busy);
      if (batch.length === 0) return; // every waiting key has a batch on its way; its return pumps
      for (const waiting of batch) this.busy.add(waiting.key);
      this.inFlight++;
      this.sent.batches++;
      this.sent.transactions += batch.length;
      // Transactions of other keys still waiting: the next batch leaves too if there is room.
      this.pump();
      void this.settle(batch);
    });
  }

  /** A key's transactions are all settled: the next of its waiting ones may leave. */
  private release(key: string): void {
    this.busy.delete(key);
    this.pump();
  }

  /** Runs a batch and answers each of its transactions; frees each key once its own have settled. */
  private async settle(batch: Waiting[]): Promise<void> {
    const keys = [...new Set(batch.map((waiting) => waiting.key))];
    let refused: Map<string, Waiting[]> | null = null;
    try {
      if (batch.length === 1) {
        const [only] = batch as [Waiting];
        await this.runAlone(only);
      } else {
        const results = await this.executeRetryingDeadlocks(batch.map((w) => w.transaction));
        batch.forEach((waiting, i) => waiting.resolve(results[i] as RawResults));
      }
    } catch (error) {
      if (REFUSED_BEFORE_COMMIT.has(String((error as { code?: unknown }).code))) {
        refused = new Map(keys.map((key) => [key, batch.filter((waiting) => waiting.key === key)]));
      } else {
        // The connection broke, or an error the COMMIT itself may have raised: whether it
        // happened is unknown, so running the transactions again could apply them twice. Each
        // caller hears the error, as it would have alone.
        for (const waiting of batch) waiting.reject(error);
      }
    } finally {
      this.inFlight--;
      if (!refused) for (const key of keys) this.release(key);
    }
    if (!refused) return;
    // A statement was refused and the batch rolled back as a whole: each transaction again on
    // its own, so only the one at fault fails. Keys in parallel (one waiting on a lock holds up
    // no other owner, and each key is free again once its own are done), one key's in the order
    // asked, one at a time.
    await Promise.all(
      [...refused].map(async ([key, own]) => {
        for (const waiting of own) await this.runAlone(waiting);
        this.release(key);
      }),
    );
  }

  /** One transaction in a round trip of its own, run again after a deadlock or lock wait (raw.ts). */
  private runAlone(waiting: Waiting): Promise<void> {
    return this.deps.retryLockConflicts(() => this.execute([waiting.transaction])).then(
      ([results]) => waiting.resolve(results as RawResults),
      (error: unknown) => waiting.reject(error),
    );
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

/**
 * The oldest waiting transactions whose key has no batch on its way, as many as fit in one batch
 * (at least one, if any may go), in the order of their keys, so that batches from two processes
 * mostly take the same owners' row locks in the same order (a deadlock left is run again). One
 * key's transactions keep their order (the sort is stable). The rest stay in `waiting`, in order.
 */
function takeBatch(waiting: Waiting[], busy: ReadonlySet<string>): Waiting[] {
  const batch: Waiting[] = [];
  let kept = 0;
  let bytes = 0;
  let full = false;
  for (const next of waiting) {
    const waitsForItsKey = busy.has(next.key);
    // Once one does not fit, none after it goes: a later one of its key would overtake it.
    full ||= !waitsForItsKey && batch.length > 0 && (batch.length >= MAX_BATCH_TRANSACTIONS || bytes + sizeOf(next.transaction) > MAX_BATCH_BYTES);
    if (full || waitsForItsKey) {
      waiting[kept++] = next;
      continue;
    }
    bytes += sizeOf(next.transaction);
    batch.push(next);
  }
  waiting.length = kept;
  return batch.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

function query(connection: PoolConnection, sql: string, values: ReadonlyArray<unknown>): Promise<unknown> {
  return new Promise((resolve, reject) => {
    connection.query({ sql, values: values as unknown[] }, (error, result) => (error ? reject(error) : resolve(result)));
  });
}
