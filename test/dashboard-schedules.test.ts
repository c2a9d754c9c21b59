/**
 * Schedules in the dashboard (real Chromium): the form shows the next five firings while the
 * cron is typed (and refuses one it cannot read), a schedule made there fires (the test's clock,
 * injected) into history as an ordinary generation, and can be paused.
 */
import path from 'node:path';
import type { Page } from 'playwright-core';
import { FakeProvider } from './helpers/fake-provider';
import { useDashboard } from './helpers/browser';
import './helpers/locator-matchers';
import { TestUser, userOnPlan } from './helpers/users';

const CATALOG_PATH = path.join(__dirname, 'fixtures/catalog.json');

describe('schedules in the dashboard', () => {
  const fake = new FakeProvider('fake');
  const d = useDashboard({ CATALOG_PATH }, { providers: [fake.adapter()], worker: true });
  let page: Page;
  let user: TestUser;

  beforeAll(async () => {
    user = await userOnPlan(d.rig.app, 'basic');
    ({ page } = await d.rig.newPage());
    await page.goto('/sign-in');
    await page.getByLabel('E-mail').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/overview');
  });

  it('makes a schedule with the next firings shown, which then fires into history', async () => {
    await page.getByRole('link', { name: 'Schedules' }).click();
    await page.waitForURL('**/schedules');
    await page.getByLabel('Name').fill('sea every hour');
    await page.getByLabel('Model').selectOption('fake-text');
    await page.getByLabel('Prompt').fill('the sea');
    await page.getByLabel('Time zone').fill('UTC');

    await page.getByLabel('When (cron)').fill('61 * * * *');
    await page.getByTestId('cron-invalid').waitFor();
    await page.getByLabel('Or pick').selectOption('0 * * * *');
    expect(await page.getByLabel('When (cron)').inputValue()).toBe('0 * * * *');
    const firings = page.getByTestId('firings').locator('li');
    await expect(firings).toHaveCountLater(5);
    const shown = await firings.allTextContents();
    for (const text of shown) expect(text).toMatch(/\d{2}:00$/);

    await page.getByRole('button', { name: 'Create the schedule' }).click();
    const card = page.getByTestId('schedule');
    await expect(card).toHaveCountLater(1);
    const auth = `Bearer ${(await d.rig.app.http().post('/api/v2/auth/login').send({ email: user.email, password: user.password })).body.access_token}`;
    const listed = await d.rig.app.http().get('/api/v2/scheduled').set('authorization', auth);
    const schedule = listed.body.schedules[0] as { id: number; next_run_at: string; timezone: string; cron: string };
    expect(schedule).toMatchObject({ cron: '0 * * * *', timezone: 'UTC' });
    // The helper's first firing (in UTC, the schedule's zone) is the service's next run.
    const nextRun = new Date(schedule.next_run_at);
    expect(shown[0]).toMatch(new RegExp(`${String(nextRun.getUTCHours()).padStart(2, '0')}:00$`));
    expect(await card.getByTestId('schedule-next').textContent()).toMatch(/^Next run: /);

    // The clock reaches the firing: the run is an ordinary generation in history.
    d.rig.app.clock.set(nextRun);
    expect(await d.rig.app.container.schedules.fire(schedule.id, nextRun)).toBe(true);
    // A token of the new time (the first may be older than its 15 minutes by then).
    const later = `Bearer ${(await d.rig.app.http().post('/api/v2/auth/login').send({ email: user.email, password: user.password })).body.access_token}`;
    let items: Array<{ schedule_id: number | null; prompt: string; status: string }> = [];
    for (let i = 0; i < 100 && !items.some((item) => item.status === 'completed'); i++) {
      items = (await d.rig.app.http().get('/api/v2/user/history').set('authorization', later).expect(200)).body.items;
      if (!items.some((item) => item.status === 'completed')) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(items).toEqual([expect.objectContaining({ schedule_id: schedule.id, prompt: 'the sea', status: 'completed' })]);
    d.rig.app.clock.set(new Date());

    await page.getByRole('link', { name: 'History' }).click();
    await page.getByTestId('history-item').first().waitFor();
    expect(await page.getByTestId('history-item').first().textContent()).toContain('the sea');
    await page.getByRole('link', { name: 'Schedules' }).click();
    await page.getByText('Last run:').waitFor();
  });

  it('pauses and resumes it', async () => {
    const card = page.getByTestId('schedule');
    await card.getByRole('button', { name: 'Pause' }).click();
    await expect(card.getByTestId('schedule-next')).toHaveTextLater('Paused');
    await card.getByRole('button', { name: 'Resume' }).click();
    await card.getByText('Next run:').waitFor();
  });
});
