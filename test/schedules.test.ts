/**
 * Scheduled generations (spec 2.8, 4.11; decisions.md): CRUD with cron and time-zone checks,
 * firings recorded once per minute whoever fires them, catch-up after downtime, runs as ordinary
 * generations of the owner, refusals recorded and five in a row pausing the schedule, and the
 * clock picking up changes.
 */
import path from 'node:path';
import { Generation, Schedule, ScheduleFiring } from '../shared/db/entities';
import { ClockRunner } from '../shared/schedules/clock-runner';
import { lastFiringBetween, nextRun } from '../shared/schedules';
import { useTestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { registerUser, TestUser } from './helpers/users';

const fake = new FakeProvider('fake');
const t = useTestApp({ CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json') }, { providers: [fake.adapter()], worker: true });

function auth(user: TestUser): [string, string] {
  return ['authorization', `Bearer ${user.accessToken}`];
}

async function waitFor<T>(check: () => Promise<T | undefined>, timeoutMs = 5000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() - started > timeoutMs) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('CRUD', () => {
  it('creates (201) with next_run_at, lists, merges a PUT, deletes; another user sees 404', async () => {
    const user = await registerUser(t.app);
    const created = await t.app.http().post('/api/v2/scheduled').set(...auth(user)).send({ name: 'Morning poem', cron: '0 9 * * *', model: 'fake-text', prompt: 'A poem', timezone: 'Europe/Berlin' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ id: expect.any(Number), name: 'Morning poem', cron: '0 9 * * *', model: 'fake-text', prompt: 'A poem', params: {}, is_active: true, timezone: 'Europe/Berlin', last_run_at: null, last_generation_id: null, last_error: null });
    // 09:00 in Berlin (UTC+1 in November) is 08:00 UTC; the test clock stands at 2026-11-01T12:00Z.
    expect(created.body.next_run_at).toBe('2026-11-02T08:00:00.000Z');
    const put = await t.app.http().put(`/api/v2/scheduled/${created.body.id}`).set(...auth(user)).send({ cron: '30 * * * *' });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ name: 'Morning poem', cron: '30 * * * *', timezone: 'Europe/Berlin', next_run_at: '2026-11-01T12:30:00.000Z' });
    expect((await t.app.http().get('/api/v2/scheduled').set(...auth(user))).body.total).toBe(1);
    const stranger = await registerUser(t.app);
    expect((await t.app.http().put(`/api/v2/scheduled/${created.body.id}`).set(...auth(stranger)).send({ name: 'x' })).status).toBe(404);
    expect((await t.app.http().delete(`/api/v2/scheduled/${created.body.id}`).set(...auth(stranger))).status).toBe(404);
    expect((await t.app.http().delete(`/api/v2/scheduled/${created.body.id}`).set(...auth(user))).status).toBe(204);
  });

  it.each([
    [{ cron: '* * * *' }, 'cron'],
    [{ cron: '61 * * * *' }, 'cron'],
    [{ cron: 'every day' }, 'cron'],
    [{ timezone: 'Mars/Olympus' }, 'timezone'],
    [{ name: '' }, 'name'],
  ])('refuses %j with 422', async (patch, field) => {
    const user = await registerUser(t.app);
    const res = await t.app.http().post('/api/v2/scheduled').set(...auth(user)).send({ name: 'n', cron: '0 * * * *', model: 'fake-text', prompt: 'p', ...patch });
    expect(res.status).toBe(422);
    expect(res.body.errors[0].field).toBe(field);
  });

  it('caps schedules at 50 per user', async () => {
    const user = await registerUser(t.app);
    for (let i = 0; i < 50; i++) await t.app.container.schedules.create(user.id, { name: `s${i}`, cron: '0 * * * *', model: 'fake-text', prompt: 'p', params: {}, is_active: false, timezone: 'UTC' });
    const res = await t.app.http().post('/api/v2/scheduled').set(...auth(user)).send({ name: 'one more', cron: '0 * * * *', model: 'fake-text', prompt: 'p' });
    expect(res.status).toBe(422);
  });
});

describe('firing and running', () => {
  it('fires a minute once even when two clocks fire it, and the run is an ordinary generation in history', async () => {
    const user = await registerUser(t.app);
    const s = await t.app.container.schedules.create(user.id, { name: 'hourly', cron: '0 * * * *', model: 'fake-text', prompt: 'tick', params: {}, is_active: true, timezone: 'UTC' });
    const at = new Date('2026-11-01T13:00:00.250Z');
    const results = await Promise.all([t.app.container.schedules.fire(s.id, at), t.app.container.schedules.fire(s.id, at)]);
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await t.app.container.db.repo(ScheduleFiring).countBy({ scheduleId: s.id })).toBe(1);
    const generation = await waitFor(async () => (await t.app.container.db.repo(Generation).findOneBy({ scheduleId: s.id })) ?? undefined);
    const done = await waitFor(async () => {
      const row = await t.app.container.db.repo(Schedule).findOneByOrFail({ id: s.id });
      return row.lastGenerationId ? row : undefined;
    });
    expect(done).toMatchObject({ lastGenerationId: generation.id, lastError: null, consecutiveFailures: 0 });
    const history = await t.app.http().get('/api/v2/user/history').set(...auth(user));
    expect(history.body.items[0]).toMatchObject({ id: generation.id, schedule_id: s.id, prompt: 'tick', status: 'completed', tokens_spent: 2 });
    expect((await t.app.http().get('/api/v2/user/balance').set(...auth(user))).body.token_balance).toBe(48);
  });

  it('catches up one firing per schedule missed within the last hour, once', async () => {
    const user = await registerUser(t.app);
    const s = await t.app.container.schedules.create(user.id, { name: 'quarter', cron: '*/15 * * * *', model: 'fake-text', prompt: 'catch up', params: {}, is_active: true, timezone: 'UTC' });
    t.app.clock.advance(2 * 3600 + 7 * 60);
    const first = await t.app.container.schedules.catchUp();
    expect(first).toBeGreaterThanOrEqual(1);
    const firings = await t.app.container.db.repo(ScheduleFiring).findBy({ scheduleId: s.id });
    expect(firings).toHaveLength(1);
    expect(firings[0]?.fireAt.toISOString()).toBe('2026-11-01T14:00:00.000Z');
    expect(await t.app.container.schedules.catchUp()).toBe(0);
  });

  it('records refused runs and pauses a schedule after five failures in a row', async () => {
    const user = await registerUser(t.app);
    const s = await t.app.container.schedules.create(user.id, { name: 'too dear', cron: '* * * * *', model: 'fake-expensive', prompt: 'x', params: {}, is_active: true, timezone: 'UTC' });
    for (let i = 0; i < 5; i++) await t.app.container.schedules.run(s.id, `2026-11-01T15:0${i}:00.000Z`);
    const row = await t.app.container.db.repo(Schedule).findOneByOrFail({ id: s.id });
    expect(row).toMatchObject({ lastError: 'Insufficient tokens', consecutiveFailures: 5, isActive: false, nextRunAt: null });
    const reactivated = await t.app.http().put(`/api/v2/scheduled/${s.id}`).set(...auth(user)).send({ is_active: true });
    expect(reactivated.body).toMatchObject({ is_active: true, last_error: null });
  });

  it('runs a firing once even when its job is delivered twice', async () => {
    const user = await registerUser(t.app);
    const s = await t.app.container.schedules.create(user.id, { name: 'dup', cron: '0 * * * *', model: 'fake-text', prompt: 'once', params: {}, is_active: true, timezone: 'UTC' });
    await t.app.container.schedules.run(s.id, '2026-11-01T16:00:00.000Z');
    await t.app.container.schedules.run(s.id, '2026-11-01T16:00:00.000Z');
    expect(await t.app.container.db.repo(Generation).countBy({ scheduleId: s.id })).toBe(1);
  });
});

describe('the clock', () => {
  it('places active schedules and picks up changes and deletions', async () => {
    const user = await registerUser(t.app);
    const clock = new ClockRunner(t.app.container.schedules, t.app.container.db, t.app.container.log);
    // node-schedule jobs are real timers: always cancel them, or jest never exits.
    try {
      await clock.refresh();
      const created = await t.app.http().post('/api/v2/scheduled').set(...auth(user)).send({ name: 'watched', cron: '5 4 * * *', model: 'fake-text', prompt: 'p' });
      await clock.refresh();
      expect(clock.placed()).toContain(created.body.id);
      await t.app.http().put(`/api/v2/scheduled/${created.body.id}`).set(...auth(user)).send({ is_active: false });
      await clock.refresh();
      expect(clock.placed()).not.toContain(created.body.id);
      await t.app.http().put(`/api/v2/scheduled/${created.body.id}`).set(...auth(user)).send({ is_active: true });
      await clock.refresh();
      expect(clock.placed()).toContain(created.body.id);
      await t.app.http().delete(`/api/v2/scheduled/${created.body.id}`).set(...auth(user));
      await clock.refresh();
      expect(clock.placed()).not.toContain(created.body.id);
    } finally {
      await clock.stop();
    }
  });

  it('computes next and previous firings in the schedule\'s time zone', () => {
    expect(nextRun('0 9 * * 1', 'America/New_York', new Date('2026-11-02T12:00:00Z')).toISOString()).toBe('2026-11-02T14:00:00.000Z');
    expect(lastFiringBetween('0 * * * *', 'UTC', new Date('2026-11-01T10:30:00Z'), new Date('2026-11-01T11:10:00Z'))?.toISOString()).toBe('2026-11-01T11:00:00.000Z');
    expect(lastFiringBetween('0 9 * * *', 'UTC', new Date('2026-11-01T10:00:00Z'), new Date('2026-11-01T11:00:00Z'))).toBeNull();
  });
});
