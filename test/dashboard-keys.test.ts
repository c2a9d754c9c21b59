/**
 * API keys in the dashboard (real Chromium): a vip account makes a key, sees its secret once,
 * sees when it was last used after a program called the API with it, and deletes it; below vip
 * the page says which plans unlock keys.
 */
import type { BrowserContext, Page } from 'playwright-core';
import { screenshot, signIn, useDashboard } from './helpers/browser';
import './helpers/locator-matchers';
import { userOnPlan } from './helpers/users';


describe('API keys in the dashboard', () => {
  const d = useDashboard();
  let context: BrowserContext;
  let page: Page;

  beforeEach(async () => {
    ({ context, page } = await d.rig.newPage());
  });
  afterEach(async () => {
    await context?.close();
  });

  it('a vip account creates a key, sees it once, then sees when it was last used, and deletes it', async () => {
    const vip = await userOnPlan(d.rig.app, 'vip');
    await signIn(page, vip);
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.waitForURL('**/keys');
    await page.getByLabel('Key name').fill('build server');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secretField = page.getByTestId('new-key');
    await secretField.waitFor();
    const secret = await secretField.inputValue();
    expect(secret).toMatch(/^gsk_[0-9A-Za-z]{44}$/);
    expect(await page.getByText('it is shown only once').count()).toBe(1);
    const row = page.getByTestId('key-row');
    await expect(row).toHaveCountLater(1);
    expect(await row.locator('th').textContent()).toBe('build server');
    expect(await row.locator('code').textContent()).toBe(`${secret.slice(0, 8)}…${secret.slice(-4)}`);
    expect(await page.getByTestId('key-last-used').textContent()).toBe('Never');
    await screenshot(page, 'keys-new-secret');

    // Once dismissed (or on any later visit) the secret is nowhere on the page.
    await page.getByRole('button', { name: 'I have saved it' }).click();
    await page.reload();
    await expect(page.getByTestId('key-row')).toHaveCountLater(1);
    expect(await page.content()).not.toContain(secret);

    // A program uses the key over HTTP.
    const used = await d.rig.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${secret}`);
    expect(used.status).toBe(200);
    await page.reload();
    await expect(page.getByTestId('key-row')).toHaveCountLater(1);
    const lastUsed = (await page.getByTestId('key-last-used').textContent()) ?? '';
    expect(lastUsed).not.toBe('Never');
    expect(lastUsed).toMatch(/\d{2}:\d{2}/);
    await screenshot(page, 'keys');

    // Deleting asks first; cancelling keeps it.
    await page.getByRole('button', { name: 'Delete: build server' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain('Delete the key “build server”?');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await expect(page.getByTestId('key-row')).toHaveCountLater(1);
    await page.getByRole('button', { name: 'Delete: build server' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await expect(page.getByTestId('key-row')).toHaveCountLater(0);
    await page.getByText('No keys yet.').waitFor();
    const refused = await d.rig.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${secret}`);
    expect(refused.status).toBe(401);
  });

  it('below vip, the page says which plans unlock keys and offers no form', async () => {
    const pro = await userOnPlan(d.rig.app, 'pro');
    await signIn(page, pro);
    await page.goto('/keys');
    const locked = page.getByTestId('keys-locked');
    await locked.waitFor();
    expect(await locked.textContent()).toContain('API keys come with the VIP, Elite plans. Your plan is Pro.');
    expect(await page.getByLabel('Key name').count()).toBe(0);
    await locked.getByRole('link', { name: 'See plans and upgrade' }).click();
    await page.waitForURL('**/overview#top-up');
  });
});
