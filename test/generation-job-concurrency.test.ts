/**
 * GENERATION_JOB_CONCURRENCY: how many generation jobs one worker runs at once (they mostly wait
 * on an upstream, whose own cap protects it). Here two at once, with an uncapped provider: five
 * slow generations never have more than two calls in flight, and every one completes, charged once.
 */
import path from 'node:path';
import { loadConfig } from '../shared/config';
import { useTestApp } from './helpers/app';
import { countingImageCalls, FakeProvider } from './helpers/fake-provider';
import { userOnPlan } from './helpers/users';

it('defaults to 16 generation jobs at once and refuses a value that is not a count', () => {
  expect(loadConfig({}).generationJobConcurrency).toBe(16);
  expect(loadConfig({ GENERATION_JOB_CONCURRENCY: '40' }).generationJobConcurrency).toBe(40);
  expect(() => loadConfig({ GENERATION_JOB_CONCURRENCY: 'many' })).toThrow(/GENERATION_JOB_CONCURRENCY/);
});

describe('a worker with GENERATION_JOB_CONCURRENCY=2', () => {
  const fake = new FakeProvider('fake');
  const { adapter: counted, flight } = countingImageCalls(fake);
  const t = useTestApp(
    { CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json'), FAKE_MAX_CONCURRENCY: '100', GENERATION_JOB_CONCURRENCY: '2' },
    { providers: [counted], worker: true },
  );

  it('runs two generations at once, no more, and completes all of them', async () => {
    const user = await userOnPlan(t.app, 'elite');
    // The first two calls finish only when the test opens the gate: once both are in flight at the
    // same time and all five are queued, plus a pause in which a third would start if it could.
    let openGate = (): void => undefined;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    fake.next({ kind: 'succeed', waitFor: gate }, { kind: 'succeed', waitFor: gate }, ...Array.from({ length: 3 }, () => ({ kind: 'succeed' as const, delayMs: 50 })));
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await t.app.http().post('/api/v2/generate').set('authorization', `Bearer ${user.accessToken}`).send({ model: 'fake-art', prompt: `lighthouse ${i}` });
      expect(res.body.status).toBe('pending');
      ids.push(res.body.id as string);
    }
    await Promise.race([flight.reached(2), new Promise((r) => setTimeout(r, 10_000))]);
    await new Promise((r) => setTimeout(r, 300));
    expect(flight.now).toBe(2);
    openGate();
    for (const id of ids) {
      const started = Date.now();
      let body: { status: string; tokens_spent: number } = { status: 'pending', tokens_spent: 0 };
      while (body.status === 'pending' && Date.now() - started < 20_000) {
        body = (await t.app.http().get(`/api/v2/generate/${id}`).set('authorization', `Bearer ${user.accessToken}`)).body as typeof body;
        if (body.status === 'pending') await new Promise((r) => setTimeout(r, 25));
      }
      expect(body).toMatchObject({ status: 'completed', tokens_spent: 6 });
    }
    expect(flight.max).toBe(2);
    expect(fake.calls).toHaveLength(5);
  }, 30_000);
});
