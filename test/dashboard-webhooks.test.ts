/**
 * Webhooks in the dashboard (real Chromium): add one (the signing secret shown once), send a
 * test ping that reaches a receiver on loopback, read the delivery log (a refused ping shows its
 * HTTP status), delete it after a confirmation; a webhook turned off after a day of failures is
 * turned back on in place.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { useDashboard } from './helpers/browser';
import './helpers/locator-matchers';
import { TestUser, userOnPlan } from './helpers/users';

describe('webhooks in the dashboard', () => {
  const received: string[] = [];
  let answer = 200;
  const receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push(body);
      res.writeHead(answer);
      res.end('ok');
    });
  });
  // Filled in before the app starts (the rig reads its env then): the receiver's own port.
  const env: Record<string, string> = {};
  beforeAll(async () => {
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()));
    env.URL_FETCH_ALLOW = `127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  });
  const d = useDashboard(env);
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

  it('adds a webhook, pings it, reads the log and deletes it', async () => {
    const url = `http://${env.URL_FETCH_ALLOW}/hook`;
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.waitForURL('**/webhooks');
    await page.getByLabel('URL').fill(url);
    await page.getByRole('button', { name: 'Add the webhook' }).click();
    const secret = page.getByTestId('hook-secret');
    await secret.waitFor();
    expect((await secret.inputValue()).length).toBeGreaterThan(20);
    const hook = page.getByTestId('webhook');
    await expect(hook).toHaveCountLater(1);
    expect(await hook.getByTestId('webhook-status').textContent()).toBe('Active');

    await hook.getByRole('button', { name: 'Send a test ping' }).click();
    await expect(hook.getByTestId('delivery')).toHaveCountLater(1);
    expect(await hook.getByTestId('delivery').first().textContent()).toMatch(/^ping · .+ · delivered \(HTTP 200\)$/);
    expect(received).toHaveLength(1);
    expect(JSON.parse(received[0] as string)).toMatchObject({ event: 'ping' });

    answer = 500;
    await hook.getByRole('button', { name: 'Send a test ping' }).click();
    await expect(hook.getByTestId('delivery')).toHaveCountLater(2);
    expect(await hook.getByTestId('delivery').first().textContent()).toMatch(/retrying \(HTTP 500\)$/);
    await page.reload();
    await page.getByTestId('webhook-status').getByText(/^Failing since .+; it is turned off after a day of failures\.$/).waitFor();

    await page.getByTestId('webhook').getByRole('button', { name: 'Delete' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain(`Delete the webhook to ${url}?`);
    await dialog.getByRole('button', { name: 'Delete' }).click();
    await page.getByText('No webhooks yet.').waitFor();
  });

  it('turns a webhook that was turned off back on in place', async () => {
    const url = `http://${env.URL_FETCH_ALLOW}/back-on`;
    await page.getByLabel('URL').fill(url);
    await page.getByRole('button', { name: 'Add the webhook' }).click();
    const hook = page.getByTestId('webhook');
    await expect(hook).toHaveCountLater(1);
    const hookId = (await d.rig.app.container.webhooks.list(user.id))[0]?.id ?? 0;

    // Turned off the way the service does it: its deliveries fail for a day. The server's clock
    // goes a day ahead for the second failure only, then back to the browser's time.
    answer = 500;
    await d.rig.app.container.webhooks.ping(user.id, hookId);
    d.rig.app.clock.advance(24 * 3600 + 1);
    await d.rig.app.container.webhooks.ping(user.id, hookId);
    d.rig.app.clock.set(new Date());
    answer = 200;

    await page.reload();
    const status = page.getByTestId('webhook-status');
    await status.getByText(/^Turned off on .+ after a day of failures\.$/).waitFor();
    expect(await status.textContent()).not.toMatch(/delete|add it again/i);
    await hook.getByRole('button', { name: 'Turn back on' }).click();
    await status.getByText(/^Active$/).waitFor();
    await expect(hook.getByRole('button', { name: 'Turn back on' })).toHaveCountLater(0);
    const row = await d.rig.app.container.webhooks.get(user.id, hookId);
    expect(row).toMatchObject({ disabledAt: null, failingSince: null });

    // Deliveries go out again.
    received.length = 0;
    await hook.getByRole('button', { name: 'Send a test ping' }).click();
    await hook.getByTestId('delivery').first().getByText(/delivered \(HTTP 200\)$/).waitFor();
    expect(received).toHaveLength(1);
    await page.reload();
    await page.getByTestId('webhook-status').getByText(/^Active$/).waitFor();
  });
});
