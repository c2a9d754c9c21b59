/**
 * The operator's command line (decisions.md "Operating"): create-user, set-plan, grant-tokens,
 * list-users and revoke-key, in-process through `runAdminCommand` on the test app's own stores,
 * plus the real process (`cli/admin.ts`) on a fresh embedded store.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runAdminCommand, UsageError } from '../cli/admin-commands';
import { Generation, LedgerEntry, User } from '../shared/db/entities';
import { TestApp, useTestApp } from './helpers/app';
import { refreshCookieFrom, registerUser, uniqueEmail } from './helpers/users';


const t = useTestApp();

const PASSWORD = 'admin-made password';
const DAY_MS = 86_400_000;

interface UserOut {
  id: number;
  name: string;
  email: string | null;
  plan: string;
  plan_expires_at: string | null;
  token_balance: number;
  token_limit: number;
  auth_methods: { messenger: boolean; identity_provider: boolean; email: boolean };
  [field: string]: unknown;
}

interface BalanceOut {
  email: string | null;
  plan: string;
  token_balance: number;
  plan_tokens_remaining: number;
  bonus_tokens: number;
  held_tokens: number;
  plan_expires_at: string | null;
  next_refill_at: string | null;
}

async function admin<T>(...argv: string[]): Promise<T> {
  return (await runAdminCommand(t.app.container, argv)) as T;
}

async function createUser(extra: string[] = [], email = uniqueEmail('admin')): Promise<UserOut> {
  return admin<UserOut>('create-user', '--email', email, '--password', PASSWORD, ...extra);
}

async function ledgerOf(userId: number): Promise<LedgerEntry[]> {
  return t.app.container.db.repo(LedgerEntry).find({ where: { userId }, order: { id: 'ASC' } });
}

async function expectUsageError(argv: string[], message?: RegExp): Promise<void> {
  const attempt = runAdminCommand(t.app.container, argv);
  await expect(attempt).rejects.toBeInstanceOf(UsageError);
  if (message) await expect(attempt).rejects.toThrow(message);
}

describe('create-user', () => {
  it('creates a vip user with bonus tokens: 8,000 + 100 = 8,100, printed as the user of spec 2.3', async () => {
    const email = uniqueEmail('vip');
    const now = t.app.clock.now();
    const user = await createUser(['--name', 'Vera', '--plan', 'vip', '--bonus-tokens', '100'], email);
    expect(user).toMatchObject({
      name: 'Vera',
      email,
      messenger_username: null,
      avatar_url: null,
      plan: 'vip',
      token_balance: 8100,
      token_limit: 8000,
      tokens_used_this_period: 0,
      rate_limit_hourly: 100,
      rate_limit_daily: 1000,
      auth_methods: { messenger: false, identity_provider: false, email: true },
    });
    expect(new Date(user.plan_expires_at ?? '').getTime()).toBe(now.getTime() + 30 * DAY_MS);
    expect(JSON.parse(JSON.stringify(user))).toEqual(user);

    const ledger = await ledgerOf(user.id);
    expect(ledger.map((e) => [e.reason, e.amount])).toEqual([
      ['signup_allowance', 8000],
      ['grant', 100],
    ]);

    // The same account the API shows, and it can sign in with the password given.
    const login = await t.app.http().post('/api/v2/auth/login').send({ email, password: PASSWORD });
    expect(login.status).toBe(200);
    const me = await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${login.body.access_token}`);
    expect(me.body).toEqual(user);
  });

  it('defaults to a free account named after the e-mail, with the e-mail lower-cased', async () => {
    const email = uniqueEmail('Mixed.Case');
    const user = await createUser([], email.toUpperCase());
    expect(user).toMatchObject({ email: email.toLowerCase(), name: email.toLowerCase().split('@')[0], plan: 'free', plan_expires_at: null, token_balance: 50, token_limit: 50 });
    expect((await ledgerOf(user.id)).map((e) => e.reason)).toEqual(['signup_allowance']);
  });

  it('creates an elite user with its allowance', async () => {
    const user = await createUser(['--plan', 'elite']);
    expect(user).toMatchObject({ plan: 'elite', token_balance: 25000, rate_limit_hourly: 0, rate_limit_daily: 0 });
  });

  it('refuses an e-mail that is taken, whatever its case', async () => {
    const email = uniqueEmail('taken');
    await createUser([], email);
    await expectUsageError(['create-user', '--email', email.toUpperCase(), '--password', PASSWORD], /exists/);
    const registered = await registerUser(t.app);
    await expectUsageError(['create-user', '--email', registered.email, '--password', PASSWORD]);
  });

  it.each([
    ['no --email', ['create-user', '--password', PASSWORD]],
    ['an empty --email', ['create-user', '--email', '', '--password', PASSWORD]],
    ['no --password', ['create-user', '--email', 'a@example.test']],
    ['a short --password', ['create-user', '--email', 'a@example.test', '--password', 'short']],
    ['a bad --plan', ['create-user', '--email', 'a@example.test', '--password', PASSWORD, '--plan', 'platinum']],
    ['a negative --bonus-tokens', ['create-user', '--email', 'a@example.test', '--password', PASSWORD, '--bonus-tokens', '-5']],
    ['a non-integer --bonus-tokens', ['create-user', '--email', 'a@example.test', '--password', PASSWORD, '--bonus-tokens', '1.5']],
    ['an --email that is not an e-mail address', ['create-user', '--email', 'not-an-email', '--password', PASSWORD]],
    ['a --bonus-tokens beyond the balance range', ['create-user', '--email', 'a@example.test', '--password', PASSWORD, '--bonus-tokens', '99999999999']],
  ])('refuses %s with a UsageError and creates nothing', async (_label, argv) => {
    const before = await t.app.container.db.repo(User).count();
    await expectUsageError(argv);
    expect(await t.app.container.db.repo(User).count()).toBe(before);
  });
});

describe('set-plan', () => {
  it('moves a user to a paid plan for 30 days when no --expires is given, with the new allowance', async () => {
    const created = await createUser(['--bonus-tokens', '7']);
    t.app.clock.advance(3600);
    const now = t.app.clock.now();
    const user = await admin<UserOut>('set-plan', '--email', created.email ?? '', '--plan', 'pro');
    expect(user).toMatchObject({ id: created.id, plan: 'pro', token_balance: 3007, token_limit: 3000, rate_limit_hourly: 60 });
    expect(user.plan_expires_at).toBe(new Date(now.getTime() + 30 * DAY_MS).toISOString());
    const ledger = await ledgerOf(created.id);
    expect(ledger.at(-1)).toMatchObject({ reason: 'plan_change', amount: 2950, subscriptionAfter: 3000, bonusAfter: 7 });
  });

  it('uses the --expires given', async () => {
    const created = await createUser();
    const expires = '2027-03-15T10:30:00.000Z';
    const user = await admin<UserOut>('set-plan', '--email', created.email ?? '', '--plan', 'vip', '--expires', expires);
    expect(user).toMatchObject({ plan: 'vip', plan_expires_at: expires, token_balance: 8000 });
    const row = await t.app.container.db.repo(User).findOneByOrFail({ id: created.id });
    expect(row.planExpiresAt?.toISOString()).toBe(expires);
    // The balance endpoint agrees.
    const login = await t.app.http().post('/api/v2/auth/login').send({ email: created.email, password: PASSWORD });
    const balance = await t.app.http().get('/api/v2/user/balance').set('authorization', `Bearer ${login.body.access_token}`);
    expect(balance.body).toMatchObject({ plan: 'vip', plan_expires_at: expires, plan_tokens_remaining: 8000 });
  });

  it('accepts a date without a time as --expires', async () => {
    const created = await createUser();
    const user = await admin<UserOut>('set-plan', '--email', created.email ?? '', '--plan', 'basic', '--expires', '2027-01-31');
    expect(user).toMatchObject({ plan: 'basic', plan_expires_at: '2027-01-31T00:00:00.000Z' });
  });

  it('moves a paid user back to free: no expiry, the free allowance, bonus kept', async () => {
    const created = await createUser(['--plan', 'vip', '--bonus-tokens', '20']);
    const user = await admin<UserOut>('set-plan', '--email', created.email ?? '', '--plan', 'free', '--expires', '2027-01-01T00:00:00Z');
    expect(user).toMatchObject({ plan: 'free', plan_expires_at: null, token_balance: 70, token_limit: 50 });
  });

  it('finds the user by e-mail in any case', async () => {
    const created = await createUser();
    const user = await admin<UserOut>('set-plan', '--email', (created.email ?? '').toUpperCase(), '--plan', 'basic');
    expect(user.id).toBe(created.id);
  });

  it.each([
    ['no --email', ['set-plan', '--plan', 'vip']],
    ['no --plan', ['set-plan', '--email', 'someone@example.test']],
    ['an unknown --email', ['set-plan', '--email', 'nobody-here@example.test', '--plan', 'vip']],
  ])('refuses %s with a UsageError', async (_label, argv) => {
    await expectUsageError(argv);
  });

  it.each([
    ['a bad --plan', ['--plan', 'gold']],
    ['a --plan in capitals', ['--plan', 'VIP']],
    ['a bad --expires', ['--plan', 'vip', '--expires', 'next tuesday']],
  ])('refuses %s with a UsageError and changes nothing', async (_label, args) => {
    const created = await createUser();
    await expectUsageError(['set-plan', '--email', created.email ?? '', ...args]);
    const row = await t.app.container.db.repo(User).findOneByOrFail({ id: created.id });
    expect(row.plan).toBe('free');
  });
});

describe('grant-tokens', () => {
  it('adds bonus tokens, prints the balance and writes a grant ledger row', async () => {
    const created = await createUser();
    const balance = await admin<BalanceOut>('grant-tokens', '--email', created.email ?? '', '--amount', '250');
    expect(balance).toEqual({
      email: created.email,
      plan: 'free',
      token_balance: 300,
      plan_tokens_remaining: 50,
      bonus_tokens: 250,
      held_tokens: 0,
      plan_expires_at: null,
      next_refill_at: expect.any(String),
    });
    expect((await ledgerOf(created.id)).at(-1)).toMatchObject({ reason: 'grant', amount: 250, subscriptionAfter: 50, bonusAfter: 250 });
  });

  it('takes a negative amount from bonus tokens first, then subscription tokens, never below 0, each with a ledger row', async () => {
    const created = await createUser(['--plan', 'basic', '--bonus-tokens', '30']);
    const email = created.email ?? '';
    const before = (await ledgerOf(created.id)).length;

    const first = await admin<BalanceOut>('grant-tokens', '--email', email, '--amount', '-20');
    expect(first).toMatchObject({ token_balance: 1010, bonus_tokens: 10, plan_tokens_remaining: 1000 });
    let ledger = await ledgerOf(created.id);
    expect(ledger).toHaveLength(before + 1);
    expect(ledger.at(-1)).toMatchObject({ reason: 'correction', amount: -20, subscriptionAfter: 1000, bonusAfter: 10 });

    const second = await admin<BalanceOut>('grant-tokens', '--email', email, '--amount', '-110');
    expect(second).toMatchObject({ token_balance: 900, bonus_tokens: 0, plan_tokens_remaining: 900 });
    ledger = await ledgerOf(created.id);
    expect(ledger).toHaveLength(before + 2);
    expect(ledger.at(-1)).toMatchObject({ reason: 'correction', amount: -110, subscriptionAfter: 900, bonusAfter: 0 });

    const third = await admin<BalanceOut>('grant-tokens', '--email', email, '--amount', '-5000');
    expect(third).toMatchObject({ token_balance: 0, bonus_tokens: 0, plan_tokens_remaining: 0 });
    ledger = await ledgerOf(created.id);
    expect(ledger).toHaveLength(before + 3);
    expect(ledger.at(-1)).toMatchObject({ reason: 'correction', amount: -900, subscriptionAfter: 0, bonusAfter: 0 });

    // Already at zero: still never below it.
    const fourth = await admin<BalanceOut>('grant-tokens', '--email', email, '--amount', '-1');
    expect(fourth).toMatchObject({ token_balance: 0, bonus_tokens: 0, plan_tokens_remaining: 0 });
    const row = await t.app.container.db.repo(User).findOneByOrFail({ id: created.id });
    expect(row.subscriptionTokens).toBe(0);
    expect(row.bonusTokens).toBe(0);
    // The ledger adds up to the balance.
    ledger = await ledgerOf(created.id);
    expect(ledger.reduce((sum, e) => sum + e.amount, 0)).toBe(0);
  });

  it('never takes back what pending generations hold', async () => {
    const created = await createUser(['--bonus-tokens', '30']);
    // 80 tokens, 60 of them held by pending generations: only 20 can be taken back.
    await t.app.container.db.transaction((em) => em.getRepository(User).update({ id: created.id }, { heldTokens: 60 }));
    const balance = await admin<BalanceOut>('grant-tokens', '--email', created.email ?? '', '--amount', '-100');
    expect(balance).toMatchObject({ token_balance: 60, held_tokens: 60, bonus_tokens: 10, plan_tokens_remaining: 50 });
    expect((await ledgerOf(created.id)).at(-1)).toMatchObject({ reason: 'correction', amount: -20 });
  });

  it('accepts the negative amount written as --amount=-N too', async () => {
    const created = await createUser(['--bonus-tokens', '5']);
    const balance = await admin<BalanceOut>('grant-tokens', '--email', created.email ?? '', '--amount=-8');
    expect(balance).toMatchObject({ token_balance: 47, bonus_tokens: 0, plan_tokens_remaining: 47 });
  });

  it('shows the grant in the balance the user sees', async () => {
    const registered = await registerUser(t.app);
    await admin<BalanceOut>('grant-tokens', '--email', registered.email, '--amount', '40');
    const balance = await t.app.http().get('/api/v2/user/balance').set('authorization', `Bearer ${registered.accessToken}`);
    expect(balance.body).toMatchObject({ token_balance: 90, bonus_tokens: 40, plan_tokens_remaining: 50 });
  });

  it.each([
    ['--amount 0', ['--amount', '0']],
    ['a fractional --amount', ['--amount', '2.5']],
    ['a word as --amount', ['--amount', 'ten']],
    ['no --amount', []],
    ['an --amount beyond the balance range', ['--amount', '99999999999']],
    ['a negative --amount beyond the balance range', ['--amount', '-99999999999']],
  ])('refuses %s with a UsageError and changes nothing', async (_label, args) => {
    const created = await createUser();
    const before = (await ledgerOf(created.id)).length;
    await expectUsageError(['grant-tokens', '--email', created.email ?? '', ...args]);
    expect(await ledgerOf(created.id)).toHaveLength(before);
    const row = await t.app.container.db.repo(User).findOneByOrFail({ id: created.id });
    expect(row.subscriptionTokens + row.bonusTokens).toBe(50);
  });

  it('refuses an unknown e-mail with a UsageError', async () => {
    await expectUsageError(['grant-tokens', '--email', 'nobody-at-all@example.test', '--amount', '5'], /no user/);
  });
});

describe('list-users', () => {
  it('lists every user in id order with the total', async () => {
    const a = await createUser();
    const b = await createUser(['--plan', 'vip']);
    const total = await t.app.container.db.repo(User).count();
    const out = await admin<{ users: UserOut[]; total: number }>('list-users', '--limit', '1000');
    expect(out.total).toBe(total);
    expect(out.users).toHaveLength(total);
    const ids = out.users.map((u) => u.id);
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
    expect(out.users.find((u) => u.id === a.id)).toEqual(a);
    expect(out.users.find((u) => u.id === b.id)).toMatchObject({ plan: 'vip', token_balance: 8000 });
  });

  it('pages with --limit and --offset', async () => {
    await createUser();
    await createUser();
    const all = await admin<{ users: UserOut[]; total: number }>('list-users');
    const page = await admin<{ users: UserOut[]; total: number }>('list-users', '--limit', '1', '--offset', '1');
    expect(page.total).toBe(all.total);
    expect(page.users).toHaveLength(1);
    expect(page.users[0]?.id).toBe(all.users[1]?.id);
  });

  it('refuses a non-numeric --limit with a UsageError', async () => {
    await expectUsageError(['list-users', '--limit', 'many']);
  });
});

describe('revoke-key', () => {
  it('revokes a key by id: it stops working at once', async () => {
    const created = await createUser(['--plan', 'vip']);
    const login = await t.app.http().post('/api/v2/auth/login').send({ email: created.email, password: PASSWORD });
    const key = await t.app.http().post('/api/v2/keys').set('authorization', `Bearer ${login.body.access_token}`).send({ name: 'ci' });
    expect(key.status).toBe(201);
    expect((await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${key.body.key}`)).status).toBe(200);

    const out = await admin<{ revoked: Record<string, unknown> }>('revoke-key', '--id', String(key.body.id));
    expect(out).toEqual({
      revoked: {
        id: key.body.id,
        name: 'ci',
        prefix: key.body.key.slice(0, 8),
        last_four: key.body.key.slice(-4),
        user_id: created.id,
        created_at: key.body.created_at,
      },
    });
    expect(JSON.stringify(out)).not.toContain(key.body.key);
    const after = await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${key.body.key}`);
    expect(after.status).toBe(401);
    const list = await t.app.http().get('/api/v2/keys').set('authorization', `Bearer ${login.body.access_token}`);
    expect(list.body.total).toBe(0);
  });

  it.each([
    ['an unknown id', ['--id', '2147483000']],
    ['a non-numeric id', ['--id', 'abc']],
    ['no id', []],
  ])('refuses %s with a UsageError', async (_label, args) => {
    await expectUsageError(['revoke-key', ...args]);
  });
});

describe('audit-ledger', () => {
  // A store of its own: other tests here set balances by hand on purpose.
  const own = useTestApp();
  const audit = async <T>(...argv: string[]): Promise<T> => (await runAdminCommand(own.app.container, argv)) as T;
  const newUser = (extra: string[] = []) => audit<UserOut>('create-user', '--email', uniqueEmail('audit'), '--password', PASSWORD, ...extra);
  type Report = { ok: boolean; accounts: number; generations: number; violations: Array<{ rule: string; userId: number; generationId?: number }> };

  it('finds nothing wrong after ordinary work: sign-ups, grants, corrections, generations charged and failed', async () => {
    const user = await newUser(['--plan', 'vip', '--bonus-tokens', '20']);
    await audit('grant-tokens', '--email', user.email as string, '--amount', '-30');
    const report = await audit<Report>('audit-ledger');
    expect(report).toMatchObject({ ok: true, violations: [] });
    expect(report.accounts).toBeGreaterThan(0);
  });

  it('names every broken rule, with the account and the generation', async () => {
    const { db } = own.app.container;
    const drifted = await newUser();
    // A balance changed without a ledger row.
    await db.repo(User).update({ id: drifted.id }, { bonusTokens: 5 });
    const overheld = await newUser();
    await db.repo(User).update({ id: overheld.id }, { heldTokens: 3 });
    const negative = await newUser();
    await db.repo(User).update({ id: negative.id }, { subscriptionTokens: -1 });
    const charged = await newUser(['--plan', 'vip']);
    const login = await own.app.http().post('/api/v2/auth/login').send({ email: charged.email, password: PASSWORD });
    const generations = await db.repo(Generation).count();
    const done = await own.app.http().post('/api/v2/generate').set('authorization', `Bearer ${login.body.access_token}`).send({ model: (await firstTextModel(own.app)), prompt: 'audit me' });
    expect(done.body.status).toBe('completed');
    expect(await db.repo(Generation).count()).toBe(generations + 1);
    const row = await db.repo(LedgerEntry).findOneByOrFail({ userId: charged.id, reason: 'generation' });
    // The same charge written twice.
    await db.repo(LedgerEntry).save({ ...row, id: undefined });

    const report = await audit<Report>('audit-ledger');
    expect(report.ok).toBe(false);
    const found = report.violations.map((v) => `${v.rule}:${v.userId}${v.generationId ? `:${v.generationId}` : ''}`);
    expect(found).toEqual(
      expect.arrayContaining([
        `ledger_sum:${drifted.id}`,
        `last_row:${drifted.id}`,
        `held_tokens:${overheld.id}`,
        `negative_bucket:${negative.id}`,
        `ledger_sum:${charged.id}`,
        `debit_count:${charged.id}:${row.generationId}`,
      ]),
    );
    // Put right, so the rest of the file audits clean.
    await db.repo(User).update({ id: drifted.id }, { bonusTokens: 0 });
    await db.repo(User).update({ id: overheld.id }, { heldTokens: 0 });
    await db.repo(User).update({ id: negative.id }, { subscriptionTokens: 50 });
    await db.repo(LedgerEntry).delete({ id: (await db.repo(LedgerEntry).findOneOrFail({ where: { userId: charged.id, reason: 'generation' }, order: { id: 'DESC' } })).id });
    expect(await audit<Report>('audit-ledger')).toMatchObject({ ok: true });
  });
});

async function firstTextModel(app: TestApp): Promise<string> {
  const models = (await app.http().get('/api/v2/models?category=text&min_plan=free')).body.models as Array<{ slug: string }>;
  return models[0]?.slug as string;
}

describe('bad usage', () => {
  it('refuses an unknown command with a UsageError', async () => {
    await expectUsageError(['make-coffee'], /unknown command make-coffee/);
  });

  it('refuses no command at all with a UsageError', async () => {
    await expectUsageError([], /no command/);
  });

  it.each([
    ['an unknown option', ['list-users', '--colour', 'blue'], /colour/],
    ['an option without its value', ['grant-tokens', '--email'], /email/],
    ['a stray positional argument', ['list-users', 'everyone'], /everyone/],
  ])('refuses %s with a UsageError', async (_label, argv, message) => {
    await expectUsageError(argv, message);
  });
});

describe('the issue’s "done when": an admin-made vip user logs in, refreshes, creates a key and calls /user/me with it', () => {
  it('works end to end', async () => {
    const email = uniqueEmail('done-when');
    const created = await admin<UserOut>('create-user', '--email', email, '--password', PASSWORD, '--name', 'Operator', '--plan', 'vip');
    expect(created.plan).toBe('vip');

    const login = await t.app.http().post('/api/v2/auth/login').send({ email, password: PASSWORD });
    expect(login.status).toBe(200);
    expect(login.body).toMatchObject({ token_type: 'bearer', expires_in: 900, user: { id: created.id, plan: 'vip', token_balance: 8000 } });
    const refreshToken = refreshCookieFrom(login.headers['set-cookie']);
    expect(refreshToken).toBeDefined();

    const refreshed = await t.app.http().post('/api/v2/auth/refresh').set('cookie', `refresh_token=${refreshToken}`);
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.expires_in).toBe(900);

    const key = await t.app.http().post('/api/v2/keys').set('authorization', `Bearer ${refreshed.body.access_token}`).send({ name: 'done when' });
    expect(key.status).toBe(201);
    expect(key.body.key).toMatch(/^gsk_[0-9A-Za-z]{44}$/);

    const me = await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${key.body.key}`);
    expect(me.status).toBe(200);
    expect(me.body).toEqual(created);
  });
});

interface ProcessResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

const repoRoot = path.join(__dirname, '..');

function runCli(dataDir: string, args: string[]): Promise<ProcessResult> {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: dataDir, LOG_LEVEL: 'silent' };
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-r', '@swc-node/register', 'cli/admin.ts', ...args], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function oneJsonLine(stdout: string): unknown {
  expect(stdout.endsWith('\n')).toBe(true);
  const lines = stdout.slice(0, -1).split('\n');
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0] ?? '');
}

const processDescribe = process.env.GENSVC_TEST_STORES === 'mysql-redis' ? describe.skip : describe;

processDescribe('the admin process (cli/admin.ts) on the embedded store', () => {
  let dataDir = '';
  beforeAll(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gensvc-admin-cli-'));
  });
  afterAll(() => {
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('prints exactly one JSON line with the created user, and later commands see it', async () => {
    const email = uniqueEmail('process');
    const created = await runCli(dataDir, ['create-user', '--email', email, '--password', PASSWORD, '--plan', 'vip', '--bonus-tokens', '100']);
    expect(created.code).toBe(0);
    expect(created.stderr).toBe('');
    const user = oneJsonLine(created.stdout) as UserOut;
    expect(user).toMatchObject({ email, plan: 'vip', token_balance: 8100, token_limit: 8000, auth_methods: { email: true } });
    expect(Number.isInteger(user.id)).toBe(true);
    expect(fs.existsSync(path.join(dataDir, 'gensvc.sqlite'))).toBe(true);

    const granted = await runCli(dataDir, ['grant-tokens', '--email', email, '--amount', '-150']);
    expect(granted.code).toBe(0);
    expect(oneJsonLine(granted.stdout)).toMatchObject({ email, token_balance: 7950, bonus_tokens: 0, plan_tokens_remaining: 7950 });
  }, 60_000);

  it('audit-ledger exits 0 on a sound store and 1, listing the violation, when money moved without a ledger row', async () => {
    expect((await runCli(dataDir, ['create-user', '--email', uniqueEmail('audit'), '--password', PASSWORD])).code).toBe(0);
    const clean = await runCli(dataDir, ['audit-ledger']);
    expect(clean.code).toBe(0);
    expect(oneJsonLine(clean.stdout)).toMatchObject({ ok: true, violations: [] });
    const sqlite = new (require('better-sqlite3') as new (file: string) => { exec(sql: string): void; close(): void })(path.join(dataDir, 'gensvc.sqlite'));
    sqlite.exec('UPDATE users SET bonus_tokens = bonus_tokens + 7');
    sqlite.close();
    const broken = await runCli(dataDir, ['audit-ledger']);
    expect(broken.code).toBe(1);
    expect(oneJsonLine(broken.stdout)).toMatchObject({ ok: false, violations: expect.arrayContaining([expect.objectContaining({ rule: 'ledger_sum' })]) });
  }, 60_000);

  it('exits 1 with {"error": ...} on an unknown command, and prints the usage on stderr', async () => {
    const res = await runCli(dataDir, ['make-coffee']);
    expect(res.code).toBe(1);
    expect(oneJsonLine(res.stdout)).toEqual({ error: 'unknown command make-coffee' });
    expect(res.stderr).toContain('usage:');
  }, 60_000);

  it('exits 1 with {"error": ...} on a missing --email', async () => {
    const res = await runCli(dataDir, ['create-user', '--password', PASSWORD]);
    expect(res.code).toBe(1);
    expect(oneJsonLine(res.stdout)).toEqual({ error: '--email is required' });
  }, 60_000);
});
