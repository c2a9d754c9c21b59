/**
 * The world the route fuzzer drives: the real app on fresh stores with the fixture catalog and
 * fake providers (cheap, deterministic generations), every optional login configured (messenger,
 * identity provider against a fake one, Replicate's webhook secret, Stripe against the fake
 * Stripe API) so that no route answers "not configured", a media sink on 127.0.0.1, and the callers:
 *
 * - `free`: a free-plan session (meets the plan's limits and the 402 quickly);
 * - `elite`: an elite session with a large bonus (unlimited: reaches the deep paths);
 * - `vipKey`: a vip user's API key;
 * - `other`: a user who only owns things (its ids are "another user's ids");
 * - `disposable` / `disposableKey`: a fresh vip account per request, for routes that end the
 *   caller's session or account (logout, password changes, session revocation, account deletion).
 *
 * No worker runs: asynchronous generations stay pending, so nothing moves a balance between two
 * requests and "a refused request changed nothing" can be checked exactly.
 */
import crypto from 'node:crypto';
import path from 'node:path';
import { deleteAccount } from '../../../shared/accounts/delete-account';
import { AccessTokens, resolveJwtSecret } from '../../../shared/auth/access-tokens';
import { widgetHash, WidgetData } from '../../../shared/auth/messenger-login';
import { hashPassword } from '../../../shared/auth/passwords';
import { randomBase62 } from '../../../shared/auth/secrets';
import type { PlanName } from '../../../shared/plans';
import { startTestApp, TestApp } from '../app';
import { FakeOidcProvider, newSigningKey, startFakeOidc } from '../fake-oidc';
import { downProvider, FakeProvider } from '../fake-provider';
import { FakeStripe } from '../fake-stripe';
import { uniqueEmail } from '../users';
import { MediaSink } from './media-sink';
import { emptyOwned, IdKind, Owned, seedResources } from './seed';

export const FUZZ_BOT_TOKEN = '7000000002:AAH-fuzz-bot-token_for-gensvc';
export const FUZZ_REPLICATE_SECRET = `whsec_${Buffer.from('fuzz-replicate-signing-secret-32b').toString('base64')}`;
export const FUZZ_STRIPE_WEBHOOK_SECRET = 'whsec_fuzzstripesigningsecret0123456789';
export const FUZZ_PASSWORD = 'correct horse battery staple';
/**
 * The call the fake model makes whenever a request offers it tools (and does not answer one), so
 * responses and chat completions come back with a call, and a later turn's output can name it.
 */
export const FUZZ_TOOL_CALL = { id: 'call_fuzz', type: 'function' as const, function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } };

export const MAIN_CALLERS = ['free', 'elite', 'vipKey'] as const;
export const DISPOSABLE_CALLERS = ['disposable', 'disposableKey'] as const;
export type CallerName = (typeof MAIN_CALLERS)[number] | (typeof DISPOSABLE_CALLERS)[number];
export type AccountName = 'free' | 'elite' | 'vip' | 'other';

/** Authorization values that must be refused (401, or 403 for the key of a plan without API access). */
export const SPECIAL_TOKENS = ['expired', 'foreignSecret', 'revokedSession', 'deletedUser', 'unknownKey', 'freePlanKey', 'refreshToken', 'algNone', 'otherAudience'] as const;
export type SpecialToken = (typeof SPECIAL_TOKENS)[number];

export interface Account {
  userId: number;
  email: string;
  password: string;
  sessionId: number;
  accessToken: string;
  refreshToken: string;
  apiKey: string | null;
  apiKeyId: number | null;
  owned: Owned;
}

function base64url(value: object): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** GET /metrics answers this token (drivers.ts sends it, and near misses). */
export const FUZZ_METRICS_TOKEN = 'fuzz-metrics-token-0123456789';

export class FuzzWorld {
  readonly accounts = new Map<AccountName, Account>();
  readonly special = new Map<SpecialToken, string>();
  private passwordHash = '';
  /** The disposable account of the request being built (made fresh for each request that needs one). */
  disposable: Account | null = null;

  private constructor(
    readonly app: TestApp,
    readonly sink: MediaSink,
    readonly oidc: FakeOidcProvider,
    readonly fake: FakeProvider,
    readonly stripe: FakeStripe,
  ) {}

  static async start(): Promise<FuzzWorld> {
    const sink = await new MediaSink().start();
    const oidc = await startFakeOidc();
    const stripe = await new FakeStripe().start();
    const fake = new FakeProvider('fake');
    const fixtures = path.join(__dirname, '..', '..', 'fixtures');
    const app = await startTestApp(
      {
        CATALOG_PATH: path.join(fixtures, 'catalog.json'),
        ASSISTANTS_PATH: path.join(fixtures, 'assistants.json'),
        CONTENT_POLICY_BLOCKLIST: 'forbidden,bad word',
        TELEGRAM_BOT_TOKEN: FUZZ_BOT_TOKEN,
        OIDC_ISSUER: oidc.issuer,
        OIDC_CLIENT_ID: oidc.clientId,
        OIDC_CLIENT_SECRET: oidc.clientSecret,
        REPLICATE_WEBHOOK_SECRET: FUZZ_REPLICATE_SECRET,
        URL_FETCH_ALLOW: sink.hostPort,
        STRIPE_SECRET_KEY: stripe.secretKey,
        STRIPE_WEBHOOK_SECRET: FUZZ_STRIPE_WEBHOOK_SECRET,
        STRIPE_API_BASE: stripe.baseUrl,
        METRICS_TOKEN: FUZZ_METRICS_TOKEN,
      },
      { providers: [fake.adapter(), downProvider('down')], worker: false },
    );
    fake.toolCalls = [FUZZ_TOOL_CALL];
    stripe.useClock(app.clock.now);
    const world = new FuzzWorld(app, sink, oidc, fake, stripe);
    await world.setUp();
    return world;
  }

  async close(): Promise<void> {
    await this.app.close();
    await this.oidc.close();
    await this.sink.close();
    await this.stripe.close();
  }

  get nowSeconds(): number {
    return Math.floor(this.app.clock.now().getTime() / 1000);
  }

  account(name: AccountName): Account {
    const account = this.accounts.get(name);
    if (!account) throw new Error(`no account ${name}`);
    return account;
  }

  /** A user made through the same services the API uses, with a session (and a key when asked). */
  async createAccount(plan: PlanName, options: { bonus?: number; key?: boolean } = {}): Promise<Account> {
    const { container } = this.app;
    const email = uniqueEmail('fuzz');
    const user = await container.db.transaction((em) =>
      container.users.create(em, { name: 'Fuzz', email, plan, bonusTokens: options.bonus, identity: { kind: 'email', subject: email, passwordHash: this.passwordHash } }),
    );
    const session = await this.newSession(user.id);
    const account: Account = { userId: user.id, email, password: FUZZ_PASSWORD, ...session, apiKey: null, apiKeyId: null, owned: emptyOwned() };
    if (options.key) Object.assign(account, await this.newKey(user.id));
    return account;
  }

  private async newSession(userId: number): Promise<{ sessionId: number; accessToken: string; refreshToken: string }> {
    const { container } = this.app;
    const started = await container.db.transaction((em) => container.sessions.start(em, userId, { userAgent: 'fuzz', ip: '127.0.0.1' }));
    return { sessionId: started.sessionId, refreshToken: started.refreshToken, accessToken: await container.accessTokens.issue({ userId, sessionId: started.sessionId }) };
  }

  private async newKey(userId: number): Promise<{ apiKey: string; apiKeyId: number }> {
    const { key, secret } = await this.app.container.apiKeys.create(userId, 'fuzz caller');
    return { apiKey: secret, apiKeyId: key.id };
  }

  private async setUp(): Promise<void> {
    this.passwordHash = await hashPassword(FUZZ_PASSWORD);
    const sink = this.sink.baseUrl;
    const specs: Array<[AccountName, PlanName, number, 'all' | 'few', string]> = [
      ['free', 'free', 0, 'few', 'critic'],
      ['elite', 'elite', 1_000_000, 'all', 'poet'],
      ['vip', 'vip', 0, 'all', 'painter'],
      ['other', 'vip', 0, 'all', 'critic'],
    ];
    for (const [name, plan, bonus, generations, assistant] of specs) {
      const account = await this.createAccount(plan, { bonus, key: plan === 'vip' });
      account.owned = await seedResources(this.app, `Bearer ${account.accessToken}`, account.userId, {
        sink,
        generations,
        spareKey: plan !== 'free',
        assistant,
        sessionId: account.sessionId,
      });
      if (generations === 'all') account.owned.response.push(await this.callingResponse(account));
      // The key a caller authenticates with is not among its own ids (`owned.key` holds the spare
      // one), so the fuzzer rarely deletes it; `heal` replaces it when it does.
      this.accounts.set(name, account);
    }
    await this.makeSpecialTokens();
  }

  /** A stored response that called the fake's tool: `$RESPONSE_OWN_CALL`, which a chained function_call_output answers. */
  private async callingResponse(account: Account): Promise<number> {
    const tool = { type: 'function', name: FUZZ_TOOL_CALL.function.name, parameters: { type: 'object', properties: { city: { type: 'string' } } } };
    const res = await this.app.http().post('/v1/responses').set('authorization', `Bearer ${account.accessToken}`).send({ model: 'fake-tools', input: 'seed call', tools: [tool] });
    if (res.status !== 200 || res.body.output?.[0]?.type !== 'function_call') throw new Error(`seeding a calling response: ${res.status} ${JSON.stringify(res.body)}`);
    const id = Number(String(res.body.id).replace(/^resp_/, ''));
    account.owned.generation.push(id);
    return id;
  }

  private async makeSpecialTokens(): Promise<void> {
    const { container } = this.app;
    const elite = this.account('elite');
    const secret = resolveJwtSecret(container.config.jwtSecret, container.config.dataDir);
    const past = new Date(this.app.clock.now().getTime() - 3 * 3600_000);
    this.special.set('expired', await new AccessTokens(secret, () => past).issue({ userId: elite.userId, sessionId: elite.sessionId }));
    this.special.set('foreignSecret', await new AccessTokens(crypto.randomBytes(32).toString('hex'), this.app.clock.now).issue({ userId: elite.userId, sessionId: elite.sessionId }));
    const revoked = await this.newSession(elite.userId);
    await container.sessions.revoke(elite.userId, revoked.sessionId, 'fuzz');
    this.special.set('revokedSession', revoked.accessToken);
    const gone = await this.createAccount('vip', { key: true });
    await deleteAccount(container, gone.userId);
    this.special.set('deletedUser', gone.accessToken);
    this.special.set('unknownKey', `gsk_${randomBase62(44)}`);
    const downgraded = await this.createAccount('vip', { key: true });
    await container.users.setPlan(downgraded.userId, 'free');
    this.special.set('freePlanKey', downgraded.apiKey ?? '');
    this.special.set('refreshToken', elite.refreshToken);
    const now = this.nowSeconds;
    this.special.set('algNone', `${base64url({ alg: 'none', typ: 'JWT' })}.${base64url({ sub: String(elite.userId), sid: elite.sessionId, iss: 'gensvc', iat: now, exp: now + 600 })}.`);
    // A token of the identity provider, not ours.
    this.special.set('otherAudience', await this.oidc.signIdToken({ now, sub: 'someone' }));
  }

  /** The Authorization value of a caller (a disposable one is made on first use per request). */
  async credentialOf(caller: CallerName): Promise<{ account: Account; token: string }> {
    switch (caller) {
      case 'free':
      case 'elite': {
        const account = this.account(caller);
        return { account, token: account.accessToken };
      }
      case 'vipKey': {
        const account = this.account('vip');
        return { account, token: account.apiKey ?? '' };
      }
      case 'disposable':
      case 'disposableKey': {
        const account = await this.freshDisposable();
        return { account, token: caller === 'disposable' ? account.accessToken : (account.apiKey ?? '') };
      }
    }
  }

  /** The disposable account of this request: a vip with two sessions and a spare key. */
  async freshDisposable(): Promise<Account> {
    if (this.disposable) return this.disposable;
    const account = await this.createAccount('vip', { key: true });
    const second = await this.newSession(account.userId);
    const spare = await this.newKey(account.userId);
    account.owned.session.push(account.sessionId, second.sessionId);
    account.owned.key.push(spare.apiKeyId);
    this.disposable = account;
    return account;
  }

  /** Ids of `kind` owned by anyone but `account`. */
  othersIds(account: Account | null, kind: IdKind): number[] {
    const ids: number[] = [];
    for (const other of this.accounts.values()) {
      if (other.userId === account?.userId) continue;
      ids.push(...other.owned[kind]);
      if (kind === 'key' && other.apiKeyId !== null) ids.push(other.apiKeyId);
    }
    return ids;
  }

  allResultKeys(): string[] {
    return [...this.accounts.values()].flatMap((a) => a.owned.resultKeys);
  }

  // Values a valid-shaped body needs, made when the request is built.

  async resetToken(account: Account): Promise<string> {
    await this.app.container.passwords.forgotPassword(account.email);
    const text = this.app.mailbox.last(account.email)?.text ?? '';
    const match = /token=([^\s&]+)/.exec(text);
    return match ? decodeURIComponent(match[1]!) : 'no-token-mailed';
  }

  /** A link code of a fresh Telegram-only account (redeeming it links that identity). */
  async linkCode(): Promise<string> {
    const { container } = this.app;
    const subject = String(800_000_000 + crypto.randomInt(100_000_000));
    const user = await container.db.transaction((em) => container.users.create(em, { name: 'Telegram user', identity: { kind: 'messenger', subject } }));
    return container.links.createCode(user.id);
  }

  /** A fresh redemption code of one use worth 5 bonus tokens (redeeming it credits them). */
  async redemptionCode(): Promise<string> {
    const { codes } = await this.app.container.redemptionCodes.createBatch({ grant: { kind: 'tokens', tokens: 5 }, count: 1, usesPerCode: 1, expiresAt: null });
    return codes[0] ?? 'no-code-made';
  }

  async idToken(options: { foreignKey?: boolean } = {}): Promise<string> {
    const email = uniqueEmail('oidc');
    return this.oidc.signIdToken({
      now: this.nowSeconds,
      sub: crypto.randomBytes(6).toString('hex'),
      claims: { email, email_verified: true, name: 'Idp User' },
      key: options.foreignKey ? await newSigningKey('not-published') : undefined,
    });
  }

  widgetHash(fields: WidgetData): string {
    return widgetHash(fields, FUZZ_BOT_TOKEN);
  }

  /**
   * Every balance bucket of every user, the ledger's size and the generations' size: a refused
   * request must leave this string exactly as it was.
   */
  async moneyState(): Promise<string> {
    const db = this.app.container.db;
    const users = await db.read<{ id: number | string; s: number | string; b: number | string; h: number | string }>({
      sql: 'SELECT id, subscription_tokens AS s, bonus_tokens AS b, held_tokens AS h FROM users ORDER BY id',
    });
    const [ledger] = await db.read<{ n: number | string; m: number | string | null }>({ sql: 'SELECT COUNT(*) AS n, MAX(id) AS m FROM token_ledger' });
    const [generations] = await db.read<{ n: number | string; m: number | string | null }>({ sql: 'SELECT COUNT(*) AS n, MAX(id) AS m FROM generations' });
    return JSON.stringify({
      users: users.map((u) => [Number(u.id), Number(u.s), Number(u.b), Number(u.h)]),
      ledger: [Number(ledger?.n), Number(ledger?.m ?? 0)],
      generations: [Number(generations?.n), Number(generations?.m ?? 0)],
    });
  }

  /** Gives a main caller whose credential a request ended (a deleted key, say) a working one again. */
  async heal(): Promise<string[]> {
    const healed: string[] = [];
    for (const name of ['free', 'elite', 'vip'] as const) {
      const account = this.account(name);
      const session = await this.app.http().get('/api/v2/user/balance').set('authorization', `Bearer ${account.accessToken}`);
      if (session.status === 401) {
        Object.assign(account, await this.newSession(account.userId));
        healed.push(`${name} session`);
      }
      if (account.apiKey) {
        const key = await this.app.http().get('/api/v2/user/balance').set('authorization', `Bearer ${account.apiKey}`);
        if (key.status === 401) {
          Object.assign(account, await this.newKey(account.userId));
          healed.push(`${name} key`);
        }
      }
    }
    return healed;
  }
}
