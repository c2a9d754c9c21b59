/**
 * Run again from the history (real Chromium): the playground opens with that generation's model,
 * prompt and options, shows their price, and running it makes a new generation with the same
 * request.
 */
import path from 'node:path';
import type { Page } from 'playwright-core';
import { Generation } from '../shared/db/entities';
import { FakeProvider } from './helpers/fake-provider';
import { signIn, useDashboard } from './helpers/browser';
import './helpers/locator-matchers';
import { registerUser, TestUser } from './helpers/users';

const CATALOG_PATH = path.join(__dirname, 'fixtures/catalog.json');


describe('run again from the history', () => {
  const d = useDashboard({ CATALOG_PATH }, { providers: [new FakeProvider('fake').adapter()] });

  it('fills the playground with the same model, prompt and options, at their price, and runs them', async () => {
    const user = await registerUser(d.rig.app);
    await d.rig.app
      .http()
      .post('/api/v2/generate')
      .set('authorization', `Bearer ${user.accessToken}`)
      .send({ model: 'fake-image', prompt: 'a red fox', params: { size: '1792x1024', quality: 'standard' } })
      .expect(200);
    const { context, page } = await d.rig.newPage();
    await signIn(page, user);
    await page.goto('/history');
    await page.getByRole('link', { name: 'Run again: Fake image, same prompt and options' }).click();
    await page.waitForURL('**/playground?**');
    expect(await page.getByLabel('Model').inputValue()).toBe('fake-image');
    expect(await page.getByLabel('Prompt', { exact: true }).inputValue()).toBe('a red fox');
    expect(await page.getByLabel(/^size/i).inputValue()).toBe('1792x1024');
    // The size doubles the base price of 4: the price is asked for what is in the form.
    await expect(page.getByTestId('price')).toHaveTextLater('Price: 8 tokens');
    await page.getByRole('button', { name: 'Generate for 8 tokens' }).click();
    await page.getByTestId('charged').waitFor();

    const rows = await d.rig.app.container.db.repo(Generation).find({ where: { userId: user.id }, order: { id: 'ASC' } });
    expect(rows).toHaveLength(2);
    const [first, again] = await Promise.all(rows.map((g) => d.rig.app.container.generations.requestOf(g)));
    expect(again?.prompt).toBe('a red fox');
    expect(again?.params).toEqual(first?.params);
    expect(rows[1]?.tokensSpent).toBe(8);
    await context.close();
  });
});
