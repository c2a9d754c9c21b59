/**
 * Chaos on MySQL + Redis with real processes, the Procfile's shape: worker processes killed with
 * SIGKILL mid-job again and again, a web process killed in the middle of a burst, Redis restarted
 * under load, a deadlock forced on the capture batch. After each, the ledger audit
 * (admin audit-ledger) must find nothing: no job lost, nothing charged twice, no hold left over.
 */
import { ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import mysql from 'mysql2/promise';
import { auditLedger } from '../shared/billing/audit';
import { Like } from 'typeorm';
import { BotState, Generation, LedgerEntry, User } from '../shared/db/entities';
import { sweepPending } from '../shared/jobs/worker';
import { CompletionSet, pendingGeneration } from '../shared/generation/store';
import { startTestApp, TestApp } from './helpers/app';
import { freePort } from './helpers/child-process';
import { FakeProvider } from './helpers/fake-provider';
import { OwnRedis, redisServerAvailable } from './helpers/own-redis';
import { storeKind } from './helpers/stores';
import { registerUser, TestUser, userOnPlan } from './helpers/users';

const run = storeKind() === 'mysql-redis' && redisServerAvailable() ? describe : describe.skip;
const catalog = path.join(__dirname, 'fixtures/catalog.json');

interface RoleProcess {
  child: ChildProcess;
  ready: Promise<void>;
}

function startRole(env: Record<string, string>, role: 'worker' | 'web', extra: Record<string, string> = {}): RoleProcess {
  const child = spawn(process.execPath, ['-r', '@swc-node/register', path.join(__dirname, 'helpers/worker-process.ts')], {
    env: { ...process.env, ...env, ...extra, ROLE: role, LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const ready = new Promise<void>((resolve, reject) => {
    const started = Date.now();
    const check = setInterval(() => {
      if (output.includes(`${role}-ready`)) {
        clearInterval(check);
        resolve();
      } else if (Date.now() - started > 30_000 || child.exitCode !== null) {
        clearInterval(check);
        reject(new Error(`${role} never became ready: ${output}`));
      }
    }, 20);
  });
  return { child, ready };
}

function kill(processes: RoleProcess[]): Promise<void> {
  return Promise.all(
    processes.map(
      ({ child }) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGKILL');
        }),
    ),
  ).then(() => undefined);
}

async function until(condition: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function completion(now: Date): CompletionSet {
  return {
    status: 'completed', provider: 'fake', resultText: 'ok', resultKey: null, thumbnailKey: null, resultMetadata: '{}', usage: null,
    seed: null, progress: 100, tokensSpent: 4, processingMs: 1, completedAt: now, leaseUntil: null, updatedAt: now,
  };
}

async function expectSoundLedger(app: TestApp): Promise<void> {
  const report = await auditLedger(app.container.db);
  expect(report.violations).toEqual([]);
}

run('chaos with real processes on MySQL + Redis', () => {
  let app: TestApp;
  const processes: RoleProcess[] = [];

  beforeAll(async () => {
    // This process is only the API that accepts; workers (and a web process) are children.
    app = await startTestApp({ CATALOG_PATH: catalog }, { providers: [new FakeProvider('fake').adapter()], worker: false });
  });
  afterAll(async () => {
    await kill(processes);
    await app?.close();
  });

  const env = (): Record<string, string> => ({ ...app.stores.env, CATALOG_PATH: catalog });
  const auth = (user: TestUser): [string, string] => ['authorization', `Bearer ${user.accessToken}`];

  it('loses no job and charges none twice when both workers are killed three times mid-work', async () => {
    const user = await userOnPlan(app, 'pro');
    const start = () => {
      const pair = [startRole(env(), 'worker', { FAKE_DELAY_MS: '800' }), startRole(env(), 'worker', { FAKE_DELAY_MS: '800' })];
      processes.push(...pair);
      return pair;
    };
    let workers = start();
    await Promise.all(workers.map((w) => w.ready));
    const ids: number[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await app.http().post('/api/v2/generate').set(...auth(user)).send({ model: 'fake-art', prompt: `job ${i}` });
      expect(res.status).toBe(200);
      ids.push(res.body.id as number);
    }
    for (let round = 0; round < 3; round++) {
      await new Promise((r) => setTimeout(r, 600));
      await kill(workers);
      workers = start();
      await Promise.all(workers.map((w) => w.ready));
    }
    const lastKill = Date.now();
    const rows = () => app.container.db.repo(Generation).findBy(ids.map((id) => ({ id })));
    await until(async () => (await rows()).every((g) => g.status === 'completed'), 60_000, 'all 20 completed');
    // Every job a dead worker held resumed within the lease plus a sweep (and the run itself).
    expect(Date.now() - lastKill).toBeLessThan(30_000 + 5_000);
    for (const id of ids) expect(await app.container.db.repo(LedgerEntry).countBy({ generationId: id, reason: 'generation' })).toBe(1);
    expect((await app.container.db.repo(User).findOneByOrFail({ id: user.id })).heldTokens).toBe(0);
    await expectSoundLedger(app);
    await kill(workers);
  }, 120_000);

  it('charges nothing that was not answered when a web process is killed mid-burst, and leaves no hold behind', async () => {
    const user = await userOnPlan(app, 'pro');
    const port = await freePort();
    const web = startRole({ ...env(), PORT: String(port) }, 'web', { FAKE_DELAY_MS: '150' });
    processes.push(web);
    await web.ready;
    const answered: number[] = [];
    const burst = Array.from({ length: 40 }, (_, i) =>
      fetch(`http://127.0.0.1:${port}/api/v2/generate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${user.accessToken}` },
        body: JSON.stringify({ model: 'fake-text', prompt: `burst ${i}` }),
      }).then(
        async (res) => {
          const body = (await res.json()) as { id?: string; status?: string };
          if (res.status === 200 && body.status === 'completed' && body.id) answered.push(Number(String(body.id).replace('gen_', '')));
        },
        () => undefined,
      ),
    );
    await new Promise((r) => setTimeout(r, 400));
    await kill([web]);
    await Promise.all(burst);

    // What the dead process left running is failed by the sweep once its requests' time is up.
    app.clock.set(new Date(Date.now() + 3_600_000));
    await sweepPending(app.container);
    const rows = await app.container.db.repo(Generation).findBy({ userId: user.id });
    expect(rows.filter((g) => g.status === 'pending')).toEqual([]);
    const charged = rows.filter((g) => g.tokensSpent > 0).map((g) => g.id);
    for (const id of answered) expect(charged).toContain(id);
    // A kill can land between a charge's commit and its answer's first byte: a microsecond
    // window, so at most one such generation; none was ever seen.
    expect(charged.filter((id) => !answered.includes(id)).length).toBeLessThanOrEqual(1);
    expect((await app.container.db.repo(User).findOneByOrFail({ id: user.id })).heldTokens).toBe(0);
    await expectSoundLedger(app);
  }, 120_000);

  it('retries a capture chosen as a deadlock victim and charges it once', async () => {
    const user = await userOnPlan(app, 'pro');
    const { generationStore: store, clock } = app.container;
    const row = pendingGeneration({
      userId: user.id, modelSlug: 'fake-text', category: 'text', source: 'api', prompt: 'deadlock', input: '{}', price: 4, seed: null,
      etaSeconds: null, idempotencyKey: null, requestHash: null, scheduleId: null, assistantId: null, createdAt: clock(),
    });
    const held = await store.insertHeld(row, null);
    if (!held.held) throw new Error('not held');
    const before = await app.container.db.repo(User).findOneByOrFail({ id: user.id });

    // Another transaction, larger than the capture (so InnoDB picks the capture as the victim),
    // holds the user row; the capture then locks the generation row and waits for the user row;
    // the other transaction's update of the generation row closes the cycle.
    const other = await mysql.createConnection(app.stores.env.DATABASE_URL as string);
    let capture: Promise<unknown> = Promise.resolve();
    try {
      await other.query('START TRANSACTION');
      for (let i = 0; i < 5; i++) await other.query('INSERT INTO bot_state (state_key, value, updated_at) VALUES (?, ?, NOW(3))', [`chaos-${held.id}-${i}`, 'x']);
      await other.query('UPDATE users SET name = CONCAT(name, \'!\'), updated_at = NOW(3) WHERE id = ?', [user.id]);
      capture = store.complete({ id: held.id, userId: user.id, price: 4 }, completion(clock()), clock());
      await new Promise((r) => setTimeout(r, 300));
      // Closes the cycle: InnoDB rolls back the smaller transaction, the capture, which is retried.
      await other.query('UPDATE generations SET progress = progress + 1 WHERE id = ?', [held.id]);
      await other.query('COMMIT');
    } finally {
      await other.end();
    }
    const captured = await capture;

    // The other transaction got the generation row the capture had locked, and committed: the
    // capture was the one rolled back, and its retry then went through.
    expect(await app.container.db.repo(BotState).countBy({ key: Like(`chaos-${held.id}-%`) })).toBe(5);
    expect(captured).toMatchObject({ charged: 4 });
    const after = await app.container.db.repo(User).findOneByOrFail({ id: user.id });
    expect(after.subscriptionTokens + after.bonusTokens).toBe(before.subscriptionTokens + before.bonusTokens - 4);
    expect(after.heldTokens).toBe(0);
    expect(await app.container.db.repo(LedgerEntry).countBy({ generationId: held.id })).toBe(1);
    await expectSoundLedger(app);
  }, 60_000);

  it('keeps every queue working when Redis restarts under load: no 500 after acceptance, every accepted job done', async () => {
    const redis = await OwnRedis.start();
    const ownEnv = { ...env(), REDIS_URL: redis.url };
    const port = await freePort();
    const web = startRole({ ...ownEnv, PORT: String(port) }, 'web');
    const worker = startRole(ownEnv, 'worker', { FAKE_DELAY_MS: '200' });
    processes.push(web, worker);
    await Promise.all([web.ready, worker.ready]);
    const user = await registerUser(app);
    await app.container.users.setPlan(user.id, 'pro');
    const statuses: number[] = [];
    const accepted: number[] = [];
    const submit = async (i: number): Promise<void> => {
      const res = await fetch(`http://127.0.0.1:${port}/api/v2/generate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${user.accessToken}` },
        body: JSON.stringify({ model: 'fake-art', prompt: `under load ${i}` }),
      });
      statuses.push(res.status);
      if (res.status === 200) accepted.push(((await res.json()) as { id: number }).id);
    };
    const load = (async () => {
      for (let i = 0; i < 30; i++) {
        await submit(i);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    await new Promise((r) => setTimeout(r, 1000));
    await redis.restart(300);
    await load;
    await submit(99);
    expect(statuses.filter((s) => s >= 500 && s !== 503)).toEqual([]);
    expect(accepted.length).toBeGreaterThan(20);
    await until(
      async () => (await app.container.db.repo(Generation).findBy(accepted.map((id) => ({ id })))).every((g) => g.status === 'completed'),
      40_000,
      'every accepted job completed',
    );
    await expectSoundLedger(app);
    await kill([web, worker]);
    await redis.kill();
  }, 120_000);
});
