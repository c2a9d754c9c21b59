/**
 * No job is lost: a worker killed mid-job (bee-queue on Redis) leaves a stalled job that another
 * worker finishes, once, charged once; on the embedded queue the recovery sweep at start re-runs
 * pending rows whose lease has lapsed.
 */
import { ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { Generation, LedgerEntry } from '../shared/db/entities';
import { buildJobTable } from '../shared/jobs/table';
import { sweepPending } from '../shared/jobs/worker';
import { User } from '../shared/db/entities';
import { startTestApp, TestApp, useTestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { storeKind } from './helpers/stores';
import { registerUser } from './helpers/users';

const catalog = path.join(__dirname, 'fixtures/catalog.json');

function startWorkerProcess(env: Record<string, string>, extra: Record<string, string>): { child: ChildProcess; waitFor: (text: string) => Promise<void> } {
  const child = spawn(process.execPath, ['-r', '@swc-node/register', path.join(__dirname, 'helpers/worker-process.ts')], {
    env: { ...process.env, ...env, ...extra, LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const waitFor = (text: string) =>
    new Promise<void>((resolve, reject) => {
      const started = Date.now();
      const check = setInterval(() => {
        if (output.includes(text)) {
          clearInterval(check);
          resolve();
        } else if (Date.now() - started > 30_000 || child.exitCode !== null) {
          clearInterval(check);
          reject(new Error(`worker never printed ${text}: ${output}`));
        }
      }, 20);
    });
  return { child, waitFor };
}

async function waitForEnd(app: TestApp, id: number, timeoutMs: number): Promise<Generation> {
  const started = Date.now();
  for (;;) {
    const row = await app.container.db.repo(Generation).findOneByOrFail({ id });
    if (row.status !== 'pending' || Date.now() - started > timeoutMs) return row;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const onRedis = storeKind() === 'mysql-redis';

(onRedis ? describe : describe.skip)('a worker killed mid-job (bee-queue)', () => {
  let app: TestApp;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    // The API process only enqueues; the workers are separate processes.
    app = await startTestApp({ CATALOG_PATH: catalog }, { providers: [new FakeProvider('fake').adapter()], worker: false });
  });
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await app.close();
  });

  it('is finished by another worker within 30 s of the kill, once, and charged once', async () => {
    const env = { ...app.stores.env, CATALOG_PATH: catalog };
    const first = startWorkerProcess(env, { FAKE_FIRST: 'hang' });
    children.push(first.child);
    await first.waitFor('worker-ready');

    const user = await registerUser(app);
    const res = await app.http().post('/api/v2/generate').set('authorization', `Bearer ${user.accessToken}`).send({ model: 'fake-art', prompt: 'survive a crash' });
    expect(res.body.status).toBe('pending');
    await first.waitFor('calls:1');
    first.child.kill('SIGKILL');
    const killedAt = Date.now();

    // Nothing is faked: the dead worker's lease lapses and the next worker's sweep queues the row.
    const second = startWorkerProcess(env, {});
    children.push(second.child);
    await second.waitFor('worker-ready');

    const row = await waitForEnd(app, res.body.id, 40_000);
    expect(row.status).toBe('completed');
    expect(Date.now() - killedAt).toBeLessThan(30_000);
    expect(row.tokensSpent).toBe(6);
    expect(await app.container.db.repo(LedgerEntry).countBy({ generationId: res.body.id })).toBe(1);
    const me = await app.http().get('/api/v2/user/balance').set('authorization', `Bearer ${user.accessToken}`);
    expect(me.body).toMatchObject({ token_balance: 44, held_tokens: 0 });
  }, 60_000);
});

describe('the recovery sweep', () => {
  let app: TestApp;
  const fake = new FakeProvider('fake');

  beforeAll(async () => {
    app = await startTestApp({ CATALOG_PATH: catalog }, { providers: [fake.adapter()], worker: false });
  });
  afterAll(async () => {
    await app.close();
  });

  it('re-enqueues pending asynchronous rows and fails abandoned synchronous ones', async () => {
    const user = await registerUser(app);
    const auth = ['authorization', `Bearer ${user.accessToken}`] as const;
    // Accepted while no worker runs: the row waits, as after a crash of the in-process queue.
    const pending = await app.http().post('/api/v2/generate').set(...auth).send({ model: 'fake-art', prompt: 'left behind' });
    expect(pending.body.status).toBe('pending');
    // A synchronous row whose request died long ago (its process crashed mid-call).
    // Accepted, then neither run nor queued: its process died before it could.
    const accepted = await app.container.generations.start(
      { user: (await app.container.users.getById(user.id)), plan: app.container.plans.get('free') },
      { model: 'fake-text', prompt: 'orphan', topLevel: {} },
      { source: 'api', runIn: 'background', beforeRun: async () => false },
    );
    app.clock.advance(3600);

    const result = await sweepPending(app.container);
    expect(result).toEqual({ requeued: 1, abandoned: 1 });
    const orphan = await app.container.db.repo(Generation).findOneByOrFail({ id: accepted.generation.id });
    expect(orphan).toMatchObject({ status: 'failed', tokensSpent: 0 });

    if (app.container.queue.kind === 'in-process') {
      app.container.queue.startProcessing(buildJobTable(app.container));
      const row = await waitForEnd(app, pending.body.id, 10_000);
      expect(row).toMatchObject({ status: 'completed', tokensSpent: 6 });
    }
    const row = await app.container.db.repo(User).findOneByOrFail({ id: user.id });
    expect(row.heldTokens).toBe(app.container.queue.kind === 'in-process' ? 0 : 6);
  });

  it('answers an accepted request with its id even when queueing it fails, and the sweep queues it', async () => {
    const user = await registerUser(app);
    const auth = ['authorization', `Bearer ${user.accessToken}`] as const;
    const { queue } = app.container;
    const enqueue = queue.enqueue.bind(queue);
    queue.enqueue = async () => {
      throw new Error('NOSCRIPT No matching script. Please use EVAL.');
    };
    let res;
    try {
      res = await app.http().post('/api/v2/generate').set(...auth).send({ model: 'fake-art', prompt: 'queue is down' });
    } finally {
      queue.enqueue = enqueue;
    }
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'pending', id: expect.any(Number) });
    expect((await app.container.db.repo(User).findOneByOrFail({ id: user.id })).heldTokens).toBe(6);
    const requeued: number[] = [];
    queue.enqueue = async (name, payload, options) => {
      if (name === 'generation.run') requeued.push((payload as { generationId: number }).generationId);
      return enqueue(name, payload, options);
    };
    try {
      await sweepPending(app.container);
    } finally {
      queue.enqueue = enqueue;
    }
    expect(requeued).toContain(res.body.id);
  });
});

describe('a job lease', () => {
  const fake = new FakeProvider('fake');
  // Leases of 1.5 s renewed every 0.5 s, so their failures show within a test.
  const t = useTestApp({ CATALOG_PATH: catalog }, { providers: [fake.adapter()], worker: true, leases: { leaseMs: 1500, renewMs: 500 } });

  async function runningJob(prompt: string): Promise<{ id: number; userId: number }> {
    const user = await registerUser(t.app);
    fake.next({ kind: 'hang' });
    const calls = fake.calls.length;
    const res = await t.app.http().post('/api/v2/generate').set('authorization', `Bearer ${user.accessToken}`).send({ model: 'fake-art', prompt });
    expect(res.body.status).toBe('pending');
    await eventually(() => fake.calls.length > calls, 5_000);
    return { id: res.body.id as number, userId: user.id };
  }

  it('stops a run whose claim another runner took over, and leaves the generation to it', async () => {
    const aborts = fake.aborts.length;
    const { id, userId } = await runningJob('taken over');
    // Another runner claims the row (its lease lapsed as far as that runner could tell).
    await t.app.container.db.repo(Generation).increment({ id }, 'attempts', 1);
    await eventually(() => fake.aborts.length > aborts, 3_000);
    expect(fake.aborts.at(-1)).toMatch(/another runner took it/);
    // Not failed, not charged, still held: it is the other runner's to end.
    await new Promise((r) => setTimeout(r, 300));
    expect(await t.app.container.db.repo(Generation).findOneByOrFail({ id })).toMatchObject({ status: 'pending', tokensSpent: 0 });
    expect((await t.app.container.db.repo(User).findOneByOrFail({ id: userId })).heldTokens).toBe(6);
  });

  it('stops a run that cannot renew its lease before the lease can lapse', async () => {
    const store = t.app.container.generationStore;
    const renew = store.renewLease.bind(store);
    store.renewLease = async () => {
      throw new Error('database unreachable');
    };
    try {
      const aborts = fake.aborts.length;
      const { id } = await runningJob('cut off');
      // It stops by itself, a renewal period before its lease could lapse (keepLease's own check:
      // no wall-clock bound here, which a loaded machine would make flaky).
      await eventually(() => fake.aborts.length > aborts, 5_000);
      expect(fake.aborts.at(-1)).toMatch(/could not be renewed/);
      expect(await t.app.container.db.repo(Generation).findOneByOrFail({ id })).toMatchObject({ status: 'pending' });
    } finally {
      store.renewLease = renew;
    }
  });
});

async function eventually(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
