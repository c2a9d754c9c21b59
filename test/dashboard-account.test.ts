/**
 * The ledger and the account in the dashboard (real Chromium): transactions say what changed the
 * balance; the name can be changed; a password change needs the current one and signs the other
 * devices out; deleting the account asks first and ends it.
 */
import path from 'node:path';
import type { Page } from 'playwright-core';
import { FakeProvider } from './helpers/fake-provider';
import { cspViolations, signIn, useDashboard } from './helpers/browser';
import './helpers/locator-matchers';
import { registerUser, TestUser } from './helpers/users';

const CATALOG_PATH = path.join(__dirname, 'fixtures/catalog.json');
// A 1×1 PNG: the avatar's stand-in.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');


describe('transactions and the account', () => {
  const fake = new FakeProvider('fake');
  const d = useDashboard({ CATALOG_PATH }, { providers: [fake.adapter()] });
  let user: TestUser;

  beforeAll(async () => {
    user = await registerUser(d.rig.app, { name: 'Before' });
    await d.rig.app.http().post('/api/v2/generate').set('authorization', `Bearer ${user.accessToken}`).send({ model: 'fake-image', prompt: 'x' }).expect(200);
  });

  it('lists the balance changes with their reasons', async () => {
    const { context, page } = await d.rig.newPage();
    await signIn(page, user);
    await page.getByRole('link', { name: 'Transactions' }).click();
    await page.waitForURL('**/transactions');
    const rows = page.getByTestId('ledger-row');
    await expect(rows).toHaveCountLater(2);
    const texts = await rows.allTextContents();
    expect(texts[0]).toMatch(/Generation #\d+−446$/);
    expect(texts[1]).toMatch(/Welcome allowance\+5050$/);
    await context.close();
  });

  it('sets an avatar from a picture address, shows it (the policy lets https pictures in), and removes it', async () => {
    const owner = await registerUser(d.rig.app, { name: 'Pic' });
    const { context, page } = await d.rig.newPage();
    // The picture's host is not reachable from here: the browser gets a stand-in PNG.
    await page.route('https://avatars.example.test/**', (route) => route.fulfill({ status: 200, contentType: 'image/png', body: PNG }));
    await signIn(page, owner);
    await page.getByRole('link', { name: 'Account' }).click();
    await page.waitForURL('**/account');
    await page.getByLabel(/^Avatar/).fill('https://avatars.example.test/me.png');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved.').waitFor();
    const me = await d.rig.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${owner.accessToken}`).expect(200);
    expect(me.body.avatar_url).toBe('https://avatars.example.test/me.png');
    const header = page.getByTestId('header-avatar');
    await header.waitFor();
    // Loaded, not refused by the page's policy: the picture has its pixels.
    const loaded = (): Promise<boolean> =>
      page.evaluate(() => {
        type Img = { complete: boolean; naturalWidth: number };
        const doc = (globalThis as unknown as { document: { querySelector(selector: string): Img | null } }).document;
        const img = doc.querySelector('[data-testid="header-avatar"]');
        return img !== null && img.complete && img.naturalWidth > 0;
      });
    for (let i = 0; i < 100 && !(await loaded()); i++) await new Promise((r) => setTimeout(r, 50));
    expect(await loaded()).toBe(true);
    expect(await cspViolations(page)).toEqual([]);

    await page.getByLabel(/^Avatar/).fill('');
    await page.getByRole('button', { name: 'Save' }).click();
    await header.waitFor({ state: 'detached' });
    const after = await d.rig.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${owner.accessToken}`).expect(200);
    expect(after.body.avatar_url).toBeNull();
    await context.close();
  });

  it('changes the name and the password (the current one is checked), then deletes the account', async () => {
    const { context, page } = await d.rig.newPage();
    const other = await d.rig.newPage();
    await signIn(page, user);
    await signIn(other.page, user);
    await page.getByRole('link', { name: 'Account' }).click();
    await page.waitForURL('**/account');

    await page.getByLabel('Name', { exact: true }).fill('After');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved.').waitFor();
    const me = await d.rig.app.http().post('/api/v2/auth/login').send({ email: user.email, password: user.password });
    expect(me.body.user.name).toBe('After');

    await page.getByLabel('Current password').fill('not the password');
    await page.getByLabel('New password').fill('a newer password');
    await page.getByRole('button', { name: 'Change the password' }).click();
    await page.getByText('The current password is not right.').waitFor();
    await page.getByLabel('Current password').fill(user.password);
    await page.getByLabel('New password').fill('a newer password');
    await page.getByRole('button', { name: 'Change the password' }).click();
    await page.getByText('Password changed. Your other devices are signed out.').waitFor();
    // The other browser's session has ended: its next call takes it to the sign-in page.
    await other.page.reload();
    await other.page.waitForURL('**/sign-in**');
    await other.context.close();

    await page.getByRole('button', { name: 'Delete the account' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Delete the account' }).click();
    await page.waitForURL('**/sign-in**');
    const gone = await d.rig.app.http().post('/api/v2/auth/login').send({ email: user.email, password: 'a newer password' });
    expect(gone.status).toBe(401);
    await context.close();
  });
});
