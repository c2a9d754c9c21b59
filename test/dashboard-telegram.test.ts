/**
 * Telegram in the dashboard (real Chromium): Account → Link Telegram takes the code the bot's
 * /link gives and joins the Telegram account to the web one, and says in words why a code is
 * refused (wrong or expired, or a Telegram account with its own history).
 */
import type { Page } from 'playwright-core';
import { Identity, User } from '../shared/db/entities';
import { TEXTS } from '../shared/telegram/texts';
import { en } from '../web/src/messages/en';
import { ru } from '../web/src/messages/ru';
import { cspViolations, screenshot, signIn, useDashboard } from './helpers/browser';
import './helpers/locator-matchers';
import { registerUser } from './helpers/users';

const BOT_TOKEN = '7000000001:AAH-test-bot-token_for-gensvc';


describe('the words of the bot and the dashboard', () => {
  it('the bot names the page and the heading the dashboard shows', () => {
    expect(TEXTS.en.linkCode('ABCD2345', 10, 'https://x.test/')).toContain(`${en['nav.account']} → ${en['account.linkTelegram']}`);
    expect(TEXTS.ru.linkCode('ABCD2345', 10, 'https://x.test/')).toContain(`«${ru['nav.account']} → ${ru['account.linkTelegram']}»`);
  });
});

describe('Account → Link Telegram', () => {
  const d = useDashboard({ TELEGRAM_BOT_TOKEN: BOT_TOKEN });

  it('links the Telegram account of a /link code; a wrong code is refused in words', async () => {
    const app = d.rig.app;
    const web = await registerUser(app);
    const { user: telegram } = await app.container.messenger.findOrCreateUser({ telegramId: 610_000_001, firstName: 'Ann', username: 'ann_tg' });
    const code = await app.container.links.createCode(telegram.id);

    const { context, page } = await d.rig.newPage();
    // The bot's button opens /account: a signed-out visitor signs in and lands there.
    await page.goto('/account');
    await page.waitForURL('**/sign-in?next=%2Faccount');
    await page.getByLabel('E-mail').fill(web.email);
    await page.getByLabel('Password').fill(web.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL('**/account');
    await page.getByRole('heading', { name: 'Link Telegram' }).waitFor();

    await page.getByLabel('Link code').fill('WRONG123');
    await page.getByRole('button', { name: 'Link Telegram' }).click();
    await page.getByText('This code is wrong, expired or already used. Send /link to the bot for a new one').waitFor();
    await screenshot(page, 'account-link-telegram-refused');

    // People type codes in lower case and with spaces; the API forgives both.
    await page.getByLabel('Link code').fill(`${code.slice(0, 4).toLowerCase()} ${code.slice(4)}`);
    await page.getByRole('button', { name: 'Link Telegram' }).click();
    await page.getByText('Telegram is linked. The bot now uses this account’s balance and history.').waitFor();
    await expect(page.getByLabel('Link code')).toHaveCountLater(0);

    const identity = await app.container.db.repo(Identity).findOneByOrFail({ kind: 'messenger', subject: '610000001' });
    expect(identity.userId).toBe(web.id);
    expect(await app.container.db.repo(User).findOneBy({ id: telegram.id })).toBeNull();

    // After a reload the page says which Telegram account is linked.
    await page.reload();
    await expect(page.getByTestId('telegram-linked')).toHaveTextLater('Telegram @ann_tg is linked to this account.');
    await screenshot(page, 'account-telegram-linked');
    expect(await cspViolations(page)).toEqual([]);
    await context.close();
  });

  it('refuses a Telegram account with its own bonus tokens, and says so', async () => {
    const app = d.rig.app;
    const web = await registerUser(app);
    const { user: telegram } = await app.container.messenger.findOrCreateUser({ telegramId: 610_000_002, firstName: 'Bob' });
    await app.container.db.repo(User).update({ id: telegram.id }, { bonusTokens: 10 });
    const code = await app.container.links.createCode(telegram.id);

    const { context, page } = await d.rig.newPage();
    await signIn(page, web);
    await page.goto('/account');
    await page.getByLabel('Link code').fill(code);
    await page.getByRole('button', { name: 'Link Telegram' }).click();
    await page.getByText('That Telegram account already has its own generations or bonus tokens').waitFor();
    const identity = await app.container.db.repo(Identity).findOneByOrFail({ kind: 'messenger', subject: '610000002' });
    expect(identity.userId).toBe(telegram.id);
    await context.close();
  });
});
