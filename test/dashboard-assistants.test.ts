/**
 * Assistants in the dashboard (real Chromium): find one in the marketplace, install it, use it in
 * the playground (its model, its defaults in the form and in the price, its system prompt sent),
 * rate it, remove it.
 */
import path from 'node:path';
import type { Page } from 'playwright-core';
import { FakeProvider } from './helpers/fake-provider';
import { useDashboard } from './helpers/browser';
import './helpers/locator-matchers';
import { userOnPlan } from './helpers/users';

const CATALOG_PATH = path.join(__dirname, 'fixtures/catalog.json');
const ASSISTANTS_PATH = path.join(__dirname, 'fixtures/assistants.json');

describe('assistants in the dashboard', () => {
  const fake = new FakeProvider('fake');
  const d = useDashboard({ CATALOG_PATH, ASSISTANTS_PATH }, { providers: [fake.adapter()] });
  let page: Page;

  beforeAll(async () => {
    const user = await userOnPlan(d.rig.app, 'basic');
    ({ page } = await d.rig.newPage());
    await page.goto('/sign-in');
    await page.getByLabel('E-mail').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/overview');
  });

  it('installs one from the marketplace and generates with it at the price shown', async () => {
    await page.getByRole('link', { name: 'Assistants' }).click();
    await page.waitForURL('**/assistants');
    await page.getByText('None installed yet').waitFor();
    await page.getByLabel('Search').fill('paint');
    await expect(page.getByTestId('market-assistant')).toHaveCountLater(1);
    await page.getByTestId('market-assistant').getByRole('button', { name: 'Install' }).click();
    const mine = page.getByTestId('installed-assistant');
    await expect(mine).toHaveCountLater(1);
    expect(await mine.locator('h3').textContent()).toBe('Painter');

    await mine.getByRole('link', { name: 'Use in the playground' }).click();
    await page.waitForURL('**/playground?assistant=painter');
    await page.getByTestId('assistant').waitFor();
    expect(await page.getByLabel('Model').inputValue()).toBe('fake-image');
    // Its default size (wide: twice the price) is in the form and in the price.
    await page.getByText('Options').click();
    expect(await page.getByLabel('Size').inputValue()).toBe('1792x1024');
    await expect(page.getByTestId('price')).toHaveTextLater('Price: 8 tokens');
    await page.getByLabel('Prompt', { exact: true }).fill('a harbour');
    await page.getByRole('button', { name: 'Generate for 8 tokens' }).click();
    await page.getByTestId('charged').waitFor();
    expect(await page.getByTestId('charged').textContent()).toContain('Charged 8 tokens.');
    expect(JSON.stringify(fake.calls.at(-1)?.request)).toContain('1792');
  });

  it('rates and removes it', async () => {
    await page.goto('/assistants');
    const mine = page.getByTestId('installed-assistant');
    await expect(mine).toHaveCountLater(1);
    await mine.getByLabel('Rating').selectOption('5');
    await expect(page.getByTestId('market-assistant').filter({ hasText: 'Painter' }).locator('.muted').first()).toHaveTextLater('1 installs · rating 5.0');
    await mine.getByRole('button', { name: 'Remove' }).click();
    await expect(page.getByTestId('installed-assistant')).toHaveCountLater(0);
  });
});
