/**
 * MySQL's group commit (shared/db/mysql-group-commit.ts): transactions asked for together travel
 * in one round trip and commit once, yet each keeps its own results and its own outcome. The
 * money rules that run through it are in billing.test.ts (concurrent holds, captures and
 * releases, now batched on MySQL). MySQL only: SQLite has a group commit of its own (database.ts).
 */
import { useTestApp } from './helpers/app';
import { storeKind } from './helpers/stores';

const run = storeKind() === 'mysql-redis' ? describe : describe.skip;

run('MySQL group commit', () => {
  const t = useTestApp();
  const mysql = () => {
    const raw = t.app.container.db.mysql;
    if (!raw) throw new Error('this suite needs the MySQL store');
    return raw;
  };

  beforeAll(async () => {
    await t.app.container.db.write({ sql: 'CREATE TABLE group_commit_probe (id INT PRIMARY KEY, note VARCHAR(20) NOT NULL)' });
    await t.app.container.db.write({ sql: 'CREATE TABLE group_commit_order (seq INT AUTO_INCREMENT PRIMARY KEY, label VARCHAR(20) NOT NULL)' });
  });

  it('sends transactions asked for together in fewer round trips, each with its own results', async () => {
    const before = { ...mysql().groupCommit.sent };
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, n) => mysql().transaction([{ sql: 'SET @probe := :n', params: { n } }, { sql: 'SELECT @probe AS n, :n AS asked', params: { n } }], 'k7')),
    );
    results.forEach((result, n) => expect(result[1]).toEqual([{ n, asked: n }]));
    const sent = mysql().groupCommit.sent;
    expect(sent.transactions - before.transactions).toBe(12);
    // All twelve were asked for in one turn of the event loop: one batch.
    expect(sent.batches - before.batches).toBe(1);
  });

  it('fails only the transaction at fault, with its own writes undone, and commits the others', async () => {
    const insert = (id: number, note: string) => ({ sql: 'INSERT INTO group_commit_probe (id, note) VALUES (:id, :note)', params: { id, note } });
    const before = { ...mysql().groupCommit.sent };
    const outcomes = await Promise.allSettled([
      mysql().transaction([insert(1, 'first')], 'k1'),
      mysql().transaction([insert(2, 'second')], 'k1'),
      // Its first row would be written, then its second breaks the primary key.
      mysql().transaction([insert(100, 'undone'), insert(100, 'duplicate')], 'k1'),
      mysql().transaction([insert(3, 'third')], 'k1'),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect((outcomes[2] as PromiseRejectedResult).reason).toMatchObject({ code: 'ER_DUP_ENTRY' });
    for (const i of [0, 1, 3]) expect((outcomes[i] as PromiseFulfilledResult<unknown>).value).toEqual([{ affected: 1, insertId: 0 }]);
    const rows = await t.app.container.db.read<{ id: number; note: string }>({ sql: 'SELECT id, note FROM group_commit_probe ORDER BY id' });
    expect(rows).toEqual([
      { id: 1, note: 'first' },
      { id: 2, note: 'second' },
      { id: 3, note: 'third' },
    ]);
    // They went out as one batch (then, after its rollback, one by one).
    expect(mysql().groupCommit.sent.batches - before.batches).toBe(1);
  });

  it('runs nothing again when the connection breaks mid-batch (the COMMIT may have happened): every transaction hears the error', async () => {
    const insert = (id: number) => ({ sql: 'INSERT INTO group_commit_probe (id, note) VALUES (:id, :note)', params: { id, note: 'after a break' } });
    const batch = Promise.allSettled([
      mysql().transaction([{ sql: 'SELECT SLEEP(3) AS group_commit_kill_probe' }], 'k5'),
      mysql().transaction([insert(200)], 'k5'),
    ]);
    // The batch's connection, found by its statement and killed while it sleeps.
    let killed = false;
    for (let i = 0; i < 100 && !killed; i++) {
      const [running] = await t.app.container.db.read<{ id: number }>({
        sql: "SELECT ID AS id FROM information_schema.PROCESSLIST WHERE INFO LIKE '%SLEEP(3) AS group_commit_kill_probe%' AND INFO NOT LIKE '%PROCESSLIST%'",
      });
      if (running) {
        await t.app.container.db.write({ sql: `KILL CONNECTION ${Number(running.id)}` });
        killed = true;
      } else await new Promise((r) => setTimeout(r, 20));
    }
    expect(killed).toBe(true);
    const outcomes = await batch;
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
    expect(await t.app.container.db.read({ sql: 'SELECT id FROM group_commit_probe WHERE id = 200' })).toEqual([]);
  });

  it('lets one transaction waiting on a lock hold up none of the others of its batch', async () => {
    const insert = (id: number) => ({ sql: 'INSERT INTO group_commit_probe (id, note) VALUES (:id, :note)', params: { id, note: 'beside a lock' } });
    await t.app.container.db.write(insert(300));
    // Another connection holds row 300 in an open transaction.
    const holder = t.app.container.db.source.createQueryRunner();
    await holder.connect();
    await holder.startTransaction();
    await holder.query('SELECT id FROM group_commit_probe WHERE id = 300 FOR UPDATE');
    try {
      const started = Date.now();
      const settledAt: number[] = [];
      const timed = (index: number, running: Promise<unknown>) => running.finally(() => (settledAt[index] = Date.now() - started));
      const first = timed(0, mysql().transaction([insert(301)], 'owner:9a'));
      // Once its own transaction has settled, a key is free again: the next of it goes at once.
      const next = first.then(() => timed(3, mysql().transaction([insert(303)], 'owner:9a')));
      const outcomes = await Promise.allSettled([
        first,
        // Waits a second for the lock (this session only), times out, and is tried again alone.
        timed(1, mysql().transaction([{ sql: 'SET SESSION innodb_lock_wait_timeout = 1' }, { sql: "UPDATE group_commit_probe SET note = 'locked' WHERE id = 300" }], 'owner:9b')),
        timed(2, mysql().transaction([insert(302)], 'owner:9c')),
        next,
      ]);
      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
      expect((outcomes[1] as PromiseRejectedResult).reason).toMatchObject({ code: 'ER_LOCK_WAIT_TIMEOUT' });
      // The others committed after the batch's one timeout, not after the lone retries of the waiting one,
      // and the first owner's next transaction did not wait for those retries either.
      expect(Math.max(settledAt[0] as number, settledAt[2] as number, settledAt[3] as number)).toBeLessThan(settledAt[1] as number);
      expect(settledAt[1] as number).toBeGreaterThan(3_000);
      const rows = await t.app.container.db.read<{ id: number }>({ sql: 'SELECT id FROM group_commit_probe WHERE id IN (301, 302, 303) ORDER BY id' });
      expect(rows).toEqual([{ id: 301 }, { id: 302 }, { id: 303 }]);
    } finally {
      await holder.rollbackTransaction();
      await holder.release();
      // The sessions that took the short timeout are this suite's own pool's, closed with it.
    }
  }, 30_000);

  const inserted = (label: string) => ({ sql: 'INSERT INTO group_commit_order (label) VALUES (:label)', params: { label } });
  const executionOrder = async (): Promise<string[]> =>
    (await t.app.container.db.read<{ label: string }>({ sql: 'SELECT label FROM group_commit_order ORDER BY seq' })).map((row) => row.label);

  it("never has two batches of one key on their way (they would queue on its row lock), while other keys' batches go meanwhile", async () => {
    await t.app.container.db.write({ sql: 'DELETE FROM group_commit_order' });
    const before = { ...mysql().groupCommit.sent };
    const slow = mysql().transaction([{ sql: 'SELECT SLEEP(0.5) AS slept' }, inserted('owner 1, first')], 'owner:1');
    // The slow batch has left; these two are asked for while it is on its way.
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    const sameKey = mysql().transaction([inserted('owner 1, second')], 'owner:1');
    const otherKey = mysql().transaction([inserted('owner 2')], 'owner:2');
    await Promise.all([slow, sameKey, otherKey]);
    // Owner 2's went at once and ran during the sleep; owner 1's second waited for the first's COMMIT.
    expect(await executionOrder()).toEqual(['owner 2', 'owner 1, first', 'owner 1, second']);
    expect(mysql().groupCommit.sent.batches - before.batches).toBe(3);
  });

  it('runs the transactions of a batch in the order of their keys (one order of row locks for every process), one key in the order asked', async () => {
    await t.app.container.db.write({ sql: 'DELETE FROM group_commit_order' });
    const before = { ...mysql().groupCommit.sent };
    await Promise.all([
      mysql().transaction([inserted('c')], 'owner:c'),
      mysql().transaction([inserted('a 1')], 'owner:a'),
      mysql().transaction([inserted('b')], 'owner:b'),
      mysql().transaction([inserted('a 2')], 'owner:a'),
    ]);
    expect(await executionOrder()).toEqual(['a 1', 'a 2', 'b', 'c']);
    expect(mysql().groupCommit.sent.batches - before.batches).toBe(1);
  });

  it("runs one key's transactions of a refused batch again one at a time, in the order asked", async () => {
    await t.app.container.db.write({ sql: 'DELETE FROM group_commit_order' });
    const outcomes = await Promise.allSettled([
      // Slow: run again at the same time as the third, the third's row would come first.
      mysql().transaction([{ sql: 'SELECT SLEEP(0.3) AS slept' }, inserted('first')], 'owner:order'),
      mysql().transaction([inserted('second'), ...[1, 2].map(() => ({ sql: 'INSERT INTO group_commit_probe (id, note) VALUES (900, :note)', params: { note: 'duplicate' } }))], 'owner:order'),
      mysql().transaction([inserted('third')], 'owner:order'),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(await executionOrder()).toEqual(['first', 'third']);
  });

  it('treats a missing stored procedure as refused before the COMMIT: only its transaction fails', async () => {
    await t.app.container.db.write({ sql: 'DELETE FROM group_commit_order' });
    const outcomes = await Promise.allSettled([
      mysql().transaction([inserted('before')], 'owner:p1'),
      mysql().transaction([{ sql: 'CALL gensvc_no_such_procedure()' }], 'owner:p2'),
      mysql().transaction([inserted('after')], 'owner:p3'),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((outcomes[1] as PromiseRejectedResult).reason).toMatchObject({ code: 'ER_SP_DOES_NOT_EXIST' });
    // The two good ones run again each alone and at the same time, so either may commit first.
    expect((await executionOrder()).sort()).toEqual(['after', 'before']);
  });

  it('sends a transaction of a quiet service alone and at once', async () => {
    const before = { ...mysql().groupCommit.sent };
    const [result] = await mysql().transaction([{ sql: 'SELECT 1 AS one' }], 'k3');
    expect(result).toEqual([{ one: 1 }]);
    expect(mysql().groupCommit.sent.batches - before.batches).toBe(1);
  });
});
