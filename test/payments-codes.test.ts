/**
 * Redemption codes: made by the admin command line (`create-codes`, printed once, stored as
 * SHA-256 hashes), redeemed with POST /api/v2/billing/redeem (a session only): one use per
 * account and at most `uses` per code under any concurrency, each a payment with its ledger row;
 * wrong, expired and spent codes are clear 4xx answers that count against the account's attempt
 * limit (429 with retry_after once it is used up). The ledger audit is clean after every test.
 */
import crypto from 'node:crypto';
import { runAdminCommand, UsageError } from '../cli/admin-commands';
import { addDays } from '../shared/clock';
import { LedgerEntry, Payment, RedemptionCode } from '../shared/db/entities';
import { FailedAttemptLimiter } from '../shared/limits';
import { useTestApp } from './helpers/app';
import { expectAuditClean } from './helpers/payments';
import { registerUser, TestUser, userOnPlan } from './helpers/users';

const t = useTestApp();

afterEach(() => expectAuditClean(t.app));

interface BatchOut {
  id: number;
  tokens: number;
  plan: string | null;
  plan_days: number | null;
  uses_per_code: number;
  count: number;
  uses_left: number;
  expires_at: string | null;
  note: string | null;
}

const CODE = /^[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4}$/;
const inDays = (days: number) => addDays(t.app.clock.now(), days).toISOString();

async function admin<T>(...argv: string[]): Promise<T> {
  return (await runAdminCommand(t.app.container, argv)) as T;
}

async function makeCodes(...options: string[]): Promise<{ batch: BatchOut; codes: string[] }> {
  return admin('create-codes', ...options);
}

async function oneCode(...options: string[]): Promise<string> {
  const { codes } = await makeCodes(...(options.length > 0 ? options : ['--tokens', '100']));
  return codes[0] as string;
}

function redeem(user: TestUser, code: unknown) {
  return t.app.http().post('/api/v2/billing/redeem').set('authorization', `Bearer ${user.accessToken}`).send({ code });
}

async function codeRow(code: string): Promise<RedemptionCode> {
  const hash = crypto.createHash('sha256').update(code.replace(/-/g, '')).digest('hex');
  return t.app.container.db.repo(RedemptionCode).findOneByOrFail({ codeHash: hash });
}

/** A well-formed code that no batch has. */
const unknownCode = () => 'ABCD-EFGH-JKLM-NPQR'.replace(/[A-Z]/g, () => 'ABCDEFGHJKLMNPQRSTUVWXYZ'[crypto.randomInt(24)] as string);

describe('admin create-codes', () => {
  it('makes a batch of random codes, printed once and stored only as the SHA-256 of each', async () => {
    const expires = inDays(30);
    const { batch, codes } = await makeCodes('--tokens', '250', '--uses', '3', '--count', '5', '--expires', expires, '--note', 'launch');
    expect(batch).toMatchObject({ tokens: 250, plan: null, plan_days: null, uses_per_code: 3, count: 5, uses_left: 15, expires_at: expires, note: 'launch' });
    expect(codes).toHaveLength(5);
    expect(new Set(codes).size).toBe(5);
    for (const code of codes) expect(code).toMatch(CODE);
    const rows = await t.app.container.db.repo(RedemptionCode).findBy({ batchId: batch.id });
    expect(rows).toHaveLength(5);
    for (const code of codes) expect(await codeRow(code)).toMatchObject({ batchId: batch.id, usesLeft: 3 });
    const stored = JSON.stringify(rows);
    for (const code of codes) expect(stored).not.toContain(code.replace(/-/g, ''));
  });

  it('makes plan codes for some days, and lists every batch with its uses left', async () => {
    const { batch } = await makeCodes('--plan', 'pro', '--days', '7', '--count', '2');
    expect(batch).toMatchObject({ tokens: 0, plan: 'pro', plan_days: 7, uses_per_code: 1, count: 2, uses_left: 2, expires_at: null });
    const { batches } = await admin<{ batches: BatchOut[] }>('list-code-batches');
    expect(batches.find((b) => b.id === batch.id)).toMatchObject({ plan: 'pro', uses_left: 2 });
  });

  it.each([
    [['--tokens', '5', '--plan', 'pro', '--days', '3'], /either --tokens N or --plan PLAN --days N/],
    [['--count', '3'], /either --tokens N or --plan PLAN --days N/],
    [['--plan', 'free', '--days', '3'], /--plan must be a paid plan/],
    [['--plan', 'gold', '--days', '3'], /--plan must be one of/],
    [['--plan', 'pro'], /--days is required/],
    [['--tokens', '5', '--days', '3'], /--days goes with --plan/],
    [['--tokens', '0'], /--tokens must be between 1/],
    [['--tokens', '5', '--count', '10001'], /--count must be between 1 and 10000/],
    [['--tokens', '5', '--uses', '0'], /--uses must be between 1/],
    [['--tokens', '5', '--expires', '2020-01-01T00:00:00Z'], /--expires must be in the future/],
    [['--tokens', '5', '--expires', 'soon'], /--expires must be an ISO-8601 date/],
  ])('refuses %j', async (options, message) => {
    await expect(runAdminCommand(t.app.container, ['create-codes', ...options])).rejects.toThrow(UsageError);
    await expect(runAdminCommand(t.app.container, ['create-codes', ...options])).rejects.toThrow(message);
  });
});

describe('POST /api/v2/billing/redeem', () => {
  it('adds a code\'s bonus tokens with one redemption row, however the code is typed', async () => {
    const user = await registerUser(t.app);
    const code = await oneCode('--tokens', '250');
    const res = await redeem(user, ` ${code.toLowerCase().replace(/-/g, ' ')} `);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      kind: 'tokens',
      tokens_added: 250,
      plan: null,
      plan_until: null,
      balance: expect.objectContaining({ plan: 'free', token_balance: 300, plan_tokens_remaining: 50, bonus_tokens: 250, held_tokens: 0 }),
    });
    const row = await codeRow(code);
    expect(row.usesLeft).toBe(0);
    const ledger = await t.app.container.db.repo(LedgerEntry).findBy({ userId: user.id, reason: 'redemption' });
    expect(ledger.map((l) => [l.amount, l.note])).toEqual([[250, `code:${row.id}:${user.id}`]]);
    expect(await t.app.container.db.repo(Payment).findOneByOrFail({ provider: 'code', externalId: `${row.id}:${user.id}` })).toMatchObject({ kind: 'tokens', tokens: 250, redemptionCodeId: row.id, amount: null });
    const transactions = await t.app.http().get('/api/v2/user/transactions').set('authorization', `Bearer ${user.accessToken}`);
    expect(transactions.body.items[0]).toMatchObject({ amount: 250, reason: 'redemption', balance_after: 300 });
  });

  it('starts a plan for the code\'s days', async () => {
    const user = await registerUser(t.app);
    const code = await oneCode('--plan', 'pro', '--days', '7');
    const res = await redeem(user, code);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ kind: 'plan', tokens_added: 0, plan: 'pro', plan_until: inDays(7), balance: { plan: 'pro', token_balance: 3000, plan_expires_at: inDays(7) } });
  });

  it('refuses a code for a plan below the one running (not counted as a wrong guess), and keeps its use', async () => {
    const vip = await userOnPlan(t.app, 'vip');
    const code = await oneCode('--plan', 'basic', '--days', '30');
    for (let i = 0; i < 11; i++) {
      const res = await redeem(vip, code);
      expect({ status: res.status, body: res.body }).toEqual({ status: 409, body: { detail: 'A lower plan cannot be bought while a higher plan is running', code: 'plan_downgrade_not_allowed' } });
    }
    expect((await codeRow(code)).usesLeft).toBe(1);
    expect((await redeem(await registerUser(t.app), code)).status).toBe(200);
  });

  it('answers a wrong code 404, an expired one 410, a spent one 410 and a second use by the same account 409, each with its own code', async () => {
    const user = await registerUser(t.app);
    expect((await redeem(user, 'hello')).body).toEqual({ detail: 'Unknown redemption code', code: 'redemption_code_invalid' });
    const wrong = await redeem(user, unknownCode());
    expect({ status: wrong.status, code: wrong.body.code }).toEqual({ status: 404, code: 'redemption_code_invalid' });

    const expiring = await oneCode('--tokens', '10', '--expires', new Date(t.app.clock.now().getTime() + 60_000).toISOString());
    t.app.clock.advance(61);
    const expired = await redeem(user, expiring);
    expect({ status: expired.status, body: expired.body }).toEqual({ status: 410, body: { detail: 'This redemption code has expired', code: 'redemption_code_expired' } });

    const once = await oneCode('--tokens', '10');
    expect((await redeem(await registerUser(t.app), once)).status).toBe(200);
    const spent = await redeem(user, once);
    expect({ status: spent.status, body: spent.body }).toEqual({ status: 410, body: { detail: 'This redemption code has been used up', code: 'redemption_code_spent' } });

    const twice = await oneCode('--tokens', '10', '--uses', '5');
    expect((await redeem(user, twice)).status).toBe(200);
    const again = await redeem(user, twice);
    expect({ status: again.status, body: again.body }).toEqual({ status: 409, body: { detail: 'This account has already redeemed this code', code: 'redemption_code_already_redeemed' } });
    expect((await codeRow(twice)).usesLeft).toBe(4);
    expect(await t.app.container.db.repo(LedgerEntry).countBy({ userId: user.id, reason: 'redemption' })).toBe(1);
  });

  it('gives a code with 5 uses to exactly 5 of 20 accounts redeeming it at once', async () => {
    const code = await oneCode('--tokens', '40', '--uses', '5');
    const users = await Promise.all(Array.from({ length: 20 }, () => registerUser(t.app)));
    const answers = await Promise.all(users.map((u) => redeem(u, code)));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(5);
    expect(answers.filter((a) => a.status === 410 && a.body.code === 'redemption_code_spent')).toHaveLength(15);
    const row = await codeRow(code);
    expect(row.usesLeft).toBe(0);
    expect(await t.app.container.db.repo(Payment).countBy({ redemptionCodeId: row.id })).toBe(5);
    const winners = users.filter((_, i) => answers[i]?.status === 200).map((u) => u.id);
    const rows = await t.app.container.db.repo(LedgerEntry).findBy({ reason: 'redemption' });
    expect(rows.filter((r) => r.note?.startsWith(`code:${row.id}:`)).map((r) => r.userId).sort()).toEqual(winners.sort());
  });

  it('gives a code to one account once when it redeems it 20 times at once', async () => {
    const user = await registerUser(t.app);
    const code = await oneCode('--tokens', '40', '--uses', '10');
    const answers = await Promise.all(Array.from({ length: 20 }, () => redeem(user, code)));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 409 && a.body.code === 'redemption_code_already_redeemed')).toHaveLength(19);
    expect((await codeRow(code)).usesLeft).toBe(9);
    expect(await t.app.container.db.repo(LedgerEntry).countBy({ userId: user.id, reason: 'redemption' })).toBe(1);
  });

  it('counts wrong, expired and spent codes per account: past 10 in an hour every attempt is 429 with retry_after, a right code too', async () => {
    const guesser = await registerUser(t.app);
    const expiring = await oneCode('--tokens', '10', '--expires', new Date(t.app.clock.now().getTime() + 60_000).toISOString());
    const spentCode = await oneCode('--tokens', '10');
    expect((await redeem(await registerUser(t.app), spentCode)).status).toBe(200);
    t.app.clock.advance(61);
    const refusals = [...Array.from({ length: 6 }, unknownCode), expiring, expiring, spentCode, spentCode];
    for (const code of refusals) expect([404, 410]).toContain((await redeem(guesser, code)).status);
    const good = await oneCode('--tokens', '10');
    const limited = await redeem(guesser, good);
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ detail: 'Rate limit exceeded', code: 'rate_limited' });
    expect(limited.body.retry_after).toBeGreaterThan(3500);
    expect(limited.body.retry_after).toBeLessThanOrEqual(3600);
    expect(limited.headers['retry-after']).toBe(String(limited.body.retry_after));
    expect((await redeem(guesser, unknownCode())).status).toBe(429);
    expect((await codeRow(good)).usesLeft).toBe(1);
    // Another account is not affected.
    expect((await redeem(await registerUser(t.app), good)).status).toBe(200);
  });

  it('does not count what is no guess: a second use of one\'s own code, a malformed body', async () => {
    const user = await registerUser(t.app);
    const code = await oneCode('--tokens', '10', '--uses', '2');
    expect((await redeem(user, code)).status).toBe(200);
    for (let i = 0; i < 11; i++) expect((await redeem(user, code)).status).toBe(409);
    for (const body of [{}, { code: '' }, { code: 42 }, { code: 'x'.repeat(65) }]) {
      const res = await t.app.http().post('/api/v2/billing/redeem').set('authorization', `Bearer ${user.accessToken}`).send(body);
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 422, code: 'validation_failed' });
    }
    expect((await redeem(user, await oneCode('--tokens', '10'))).status).toBe(200);
  });

  it('refuses an API key (403 api_key_not_allowed) and no credentials (401), leaving the code unused', async () => {
    const vip = await userOnPlan(t.app, 'vip');
    const key = await t.app.http().post('/api/v2/keys').set('authorization', `Bearer ${vip.accessToken}`).send({ name: 'server' });
    const code = await oneCode('--tokens', '10');
    const byKey = await t.app.http().post('/api/v2/billing/redeem').set('authorization', `Bearer ${key.body.key}`).send({ code });
    expect({ status: byKey.status, body: byKey.body }).toEqual({ status: 403, body: { detail: 'Not allowed with an API key', code: 'api_key_not_allowed' } });
    const anonymous = await t.app.http().post('/api/v2/billing/redeem').send({ code });
    expect(anonymous.status).toBe(401);
    expect((await codeRow(code)).usesLeft).toBe(1);
    expect((await redeem(vip, code)).status).toBe(200);
  });
});

describe('the attempt limiter', () => {
  it('with 0 attempts configured (REDEEM_FAILED_ATTEMPTS_PER_HOUR=0) never refuses', async () => {
    const limiter = new FailedAttemptLimiter(undefined, 'test', 'off', 0, 3600);
    for (let i = 0; i < 50; i++) await limiter.recordFailure('someone');
    await expect(limiter.assertAllowed('someone')).resolves.toBeUndefined();
  });
});
