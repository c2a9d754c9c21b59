/**
 * Products as data (product/products.json, or PRODUCTS_PATH): validated at boot, listed by
 * GET /api/v2/billing/products to anyone (a pricing page shows them before sign-up), with each
 * price in Telegram Stars and in a currency's minor units for Stripe.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig, projectRoot } from '../shared/config';
import { buildContainer } from '../shared/container';
import { loadProducts, parseProducts } from '../shared/payments/products';
import { startTestApp, useTestApp } from './helpers/app';
import { userOnPlan } from './helpers/users';

const t = useTestApp();

const SHIPPED = {
  token_packs: [
    { id: 'tokens-500', name: '500 tokens', tokens: 500, price_stars: 150, price: { amount: 299, currency: 'usd' } },
    { id: 'tokens-2000', name: '2,000 tokens', tokens: 2000, price_stars: 500, price: { amount: 999, currency: 'usd' } },
    { id: 'tokens-10000', name: '10,000 tokens', tokens: 10000, price_stars: 2000, price: { amount: 3999, currency: 'usd' } },
  ],
  plans: [
    { id: 'basic-monthly', plan: 'basic', name: 'Basic', token_limit: 1000, period: 'month', price_stars: 400, price: { amount: 799, currency: 'usd' } },
    { id: 'pro-monthly', plan: 'pro', name: 'Pro', token_limit: 3000, period: 'month', price_stars: 1000, price: { amount: 1999, currency: 'usd' } },
    { id: 'vip-monthly', plan: 'vip', name: 'VIP', token_limit: 8000, period: 'month', price_stars: 2500, price: { amount: 4999, currency: 'usd' } },
    { id: 'elite-monthly', plan: 'elite', name: 'Elite', token_limit: 25000, period: 'month', price_stars: 7500, price: { amount: 14999, currency: 'usd' } },
  ],
};

const validFile = () => ({
  token_packs: [{ id: 'pack', display_name: 'A pack', tokens: 10, price_stars: 5, price: { amount: 100, currency: 'EUR' } }],
  plans: [{ id: 'pro-month', plan: 'pro', price_stars: 50, price: { amount: 900, currency: 'eur' } }],
});

function tempFile(content: unknown): string {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'gensvc-products-')), 'products.json');
  fs.writeFileSync(file, JSON.stringify(content));
  return file;
}

describe('GET /api/v2/billing/products', () => {
  it('lists the shipped token packs and plan months without authentication', async () => {
    const res = await t.app.http().get('/api/v2/billing/products');
    expect(res.status).toBe(200);
    expect(res.body).toEqual(SHIPPED);
    expect(res.headers['x-ratelimit-limit-hour']).toBeUndefined();
  });

  it('authenticates a caller who sends credentials (session or API key): the limit headers come along, a bad credential is 401', async () => {
    const user = await userOnPlan(t.app, 'vip');
    const session = await t.app.http().get('/api/v2/billing/products').set('authorization', `Bearer ${user.accessToken}`);
    expect(session.status).toBe(200);
    expect(session.headers['x-ratelimit-limit-hour']).toBe('100');
    const key = await t.app.http().post('/api/v2/keys').set('authorization', `Bearer ${user.accessToken}`).send({ name: 'shop' });
    const byKey = await t.app.http().get('/api/v2/billing/products').set('authorization', `Bearer ${key.body.key}`);
    expect(byKey.status).toBe(200);
    expect(byKey.body).toEqual(SHIPPED);
    const bad = await t.app.http().get('/api/v2/billing/products').set('authorization', 'Bearer nonsense');
    expect(bad.status).toBe(401);
  });
});

describe('PRODUCTS_PATH', () => {
  it('replaces the products file, read through the one config object', async () => {
    const file = tempFile(validFile());
    expect(loadConfig({ PRODUCTS_PATH: file }).productFiles.products).toBe(file);
    expect(loadConfig({}).productFiles.products).toBe(path.join(projectRoot(), 'product', 'products.json'));
    const app = await startTestApp({ PRODUCTS_PATH: file });
    try {
      const res = await app.http().get('/api/v2/billing/products');
      expect(res.body).toEqual({
        token_packs: [{ id: 'pack', name: 'A pack', tokens: 10, price_stars: 5, price: { amount: 100, currency: 'eur' } }],
        plans: [{ id: 'pro-month', plan: 'pro', name: 'Pro', token_limit: 3000, period: 'month', price_stars: 50, price: { amount: 900, currency: 'eur' } }],
      });
    } finally {
      await app.close();
    }
  });

  it('stops the boot when the file is invalid, naming the problem', async () => {
    const file = tempFile({ ...validFile(), plans: [{ id: 'free-month', plan: 'free', price_stars: 1, price: { amount: 1, currency: 'usd' } }] });
    // Products are read before any store is opened: nothing to clean up.
    const config = loadConfig({ PRODUCTS_PATH: file, DATA_DIR: path.dirname(file), LOG_LEVEL: 'silent' });
    await expect(buildContainer(config, {})).rejects.toThrow(/^Products file .* is invalid: plans\.0\.plan: must be a paid plan/);
  });
});

describe('the products file', () => {
  it.each([
    ['a duplicate id', (f: ReturnType<typeof validFile>) => f.plans.push({ ...f.plans[0]!, id: 'pack', plan: 'vip' }), /product ids must be unique/],
    ['a plan priced twice', (f: ReturnType<typeof validFile>) => f.plans.push({ ...f.plans[0]!, id: 'pro-again' }), /plans: must price each plan at most once/],
    ['a currency that is not ISO 4217', (f: ReturnType<typeof validFile>) => (f.token_packs[0]!.price.currency = 'euro'), /token_packs\.0\.price\.currency: must be a three-letter ISO 4217 code/],
    ['a price of zero', (f: ReturnType<typeof validFile>) => (f.token_packs[0]!.price.amount = 0), /token_packs\.0\.price\.amount/],
    ['fractional Stars', (f: ReturnType<typeof validFile>) => (f.plans[0]!.price_stars = 1.5), /plans\.0\.price_stars/],
    ['a pack without tokens', (f: ReturnType<typeof validFile>) => (f.token_packs[0]!.tokens = 0), /token_packs\.0\.tokens/],
    ['an id that cannot travel in an invoice payload', (f: ReturnType<typeof validFile>) => (f.token_packs[0]!.id = 'Pack 1'), /token_packs\.0\.id: must be 1-48 characters/],
  ])('is refused with %s', (_what, spoil, pattern) => {
    const file = validFile();
    spoil(file);
    expect(() => parseProducts(file, 'custom.json')).toThrow(/^Products file custom\.json is invalid: /);
    expect(() => parseProducts(file, 'custom.json')).toThrow(pattern);
  });

  it('keeps currencies in lower case (Stripe\'s form), and says so when it cannot be read', () => {
    const table = parseProducts(validFile(), 'custom.json');
    expect(table.get('pack')).toMatchObject({ kind: 'token_pack', price: { amount: 100, currency: 'eur' } });
    expect(table.find('nope')).toBeUndefined();
    expect(() => table.get('nope')).toThrow(expect.objectContaining({ code: 'not_found' }));
    expect(() => loadProducts('/nonexistent/products.json')).toThrow(/^Cannot read products file \/nonexistent\/products\.json/);
    expect(loadProducts(path.join(projectRoot(), 'product', 'products.json')).tokenPacks()).toHaveLength(3);
  });
});

describe('REDEEM_FAILED_ATTEMPTS_PER_HOUR', () => {
  it('defaults to 10, takes 0 to disable the limit, and refuses anything else at boot', () => {
    expect(loadConfig({}).redeemFailuresPerHour).toBe(10);
    expect(loadConfig({ REDEEM_FAILED_ATTEMPTS_PER_HOUR: '0' }).redeemFailuresPerHour).toBe(0);
    expect(() => loadConfig({ REDEEM_FAILED_ATTEMPTS_PER_HOUR: 'many' })).toThrow(ConfigError);
    expect(() => loadConfig({ REDEEM_FAILED_ATTEMPTS_PER_HOUR: '-1' })).toThrow(/REDEEM_FAILED_ATTEMPTS_PER_HOUR: must be a non-negative integer/);
  });
});
