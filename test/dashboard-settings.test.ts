/**
 * The default image size in Settings (real Chromium): the choice lists the sizes the catalog's
 * image models offer, is saved through PATCH /user/settings and kept across a reload; the
 * playground starts an image model that offers it with that size (at its price), and the
 * generation is made at that size.
 */
import path from 'node:path';
import { Generation, User } from '../shared/db/entities';
import { FakeProvider } from './helpers/fake-provider';
import { signIn, useDashboard } from './helpers/browser';
import './helpers/locator-matchers';
import { registerUser } from './helpers/users';

const CATALOG_PATH = path.join(__dirname, 'fixtures/catalog.json');

describe('the default image size', () => {
  const d = useDashboard({ CATALOG_PATH }, { providers: [new FakeProvider('fake').adapter()] });

  it('is chosen in Settings among the sizes the image models offer, kept across a reload, and preselected in the playground', async () => {
    const user = await registerUser(d.rig.app);
    const { context, page } = await d.rig.newPage();
    await signIn(page, user);
    await page.goto('/settings');
    const choice = page.getByLabel('Default image size');
    await expect(choice.locator('option')).toHaveCountLater(3);
    expect(await choice.locator('option').allTextContents()).toEqual(['1024 × 1024 (square)', '1792 × 1024 (landscape)', '1024 × 1792 (portrait)']);
    expect(await choice.inputValue()).toBe('1024x1024');

    await choice.selectOption({ label: '1792 × 1024 (landscape)' });
    await page.getByText('Saved.').waitFor();
    expect((await d.rig.app.container.db.repo(User).findOneByOrFail({ id: user.id })).defaultImageSize).toBe('1792x1024');
    await page.reload();
    await expect(page.getByLabel('Default image size').locator('option')).toHaveCountLater(3);
    expect(await page.getByLabel('Default image size').inputValue()).toBe('1792x1024');

    // The playground starts the image model with the account's size, priced as such (4 × 2).
    await page.goto('/playground');
    await page.getByLabel('Model').selectOption('fake-image');
    expect(await page.getByLabel(/^size/i).inputValue()).toBe('1792x1024');
    await expect(page.getByTestId('price')).toHaveTextLater('Price: 8 tokens');
    await page.getByLabel('Prompt', { exact: true }).fill('a wide fox');
    await page.getByRole('button', { name: 'Generate for 8 tokens' }).click();
    await page.getByTestId('charged').waitFor();
    const made = await d.rig.app.container.db.repo(Generation).findOneByOrFail({ userId: user.id });
    expect((await d.rig.app.container.generations.requestOf(made)).params.size).toBe('1792x1024');
    expect(made.tokensSpent).toBe(8);
    await context.close();
  });
});
