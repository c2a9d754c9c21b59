/**
 * The one configuration object. Deployment settings and secrets come from the environment and are
 * validated here, once, at boot; `process.env` is read nowhere else (entry points pass it in).
 */
import crypto from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

const booleanFlag = optionalString.transform((v, ctx) => {
  if (v === undefined) return false;
  if (/^(1|true|yes|on)$/i.test(v)) return true;
  if (/^(0|false|no|off)$/i.test(v)) return false;
  ctx.addIssue({ code: 'custom', message: 'must be true or false' });
  return z.NEVER;
});

const positiveInt = (fallback: number) =>
  optionalString.transform((v, ctx) => {
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) {
      ctx.addIssue({ code: 'custom', message: 'must be a non-negative integer' });
      return z.NEVER;
    }
    return n;
  });

const httpUrl = optionalString.refine(
  (v) => v === undefined || /^https?:\/\/[^\s]+$/i.test(v),
  'must be an http(s) URL',
);

const commaList = optionalString.transform((v) =>
  v === undefined ? [] : v.split(',').map((s) => s.trim()).filter((s) => s.length > 0),
);

const optionalPort = optionalString.transform((v, ctx) => {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65_535) {
    ctx.addIssue({ code: 'custom', message: 'must be a port number (0-65535)' });
    return z.NEVER;
  }
  return n;
});
const port = optionalPort.transform((v) => v ?? 8080);

/** Upstreams an operator can enable with `<NAME>_API_KEY` and/or `<NAME>_BASE_URL`, and their default base URLs. */
export const UPSTREAM_PROVIDERS = {
  openai: 'https://api.openai.com/v1',
  replicate: 'https://api.replicate.com/v1',
  elevenlabs: 'https://api.elevenlabs.io',
  deepgram: 'https://api.deepgram.com',
} as const;

const upstreamVariables = Object.fromEntries(
  Object.keys(UPSTREAM_PROVIDERS).flatMap((name) => [
    [`${name.toUpperCase()}_API_KEY`, optionalString],
    [`${name.toUpperCase()}_BASE_URL`, httpUrl],
  ]),
);

const EnvSchema = z.object({
  ...upstreamVariables,
  PORT: port,
  WEB_CONCURRENCY: positiveInt(0),
  GENERATION_JOB_CONCURRENCY: positiveInt(16),
  DATA_DIR: optionalString,
  DATABASE_URL: optionalString,
  JAWSDB_URL: optionalString,
  JAWSDB_MARIA_URL: optionalString,
  CLEARDB_DATABASE_URL: optionalString,
  DATABASE_BOOT_WAIT_SECONDS: positiveInt(60),
  REDIS_KEY_PREFIX: optionalString,
  REDIS_URL: optionalString.refine(
    (v) => v === undefined || /^rediss?:\/\//i.test(v),
    'must start with redis:// or rediss://',
  ),
  PUBLIC_BASE_URL: httpUrl,
  JWT_SECRET: optionalString.refine((v) => v === undefined || v.length >= 32, 'must be at least 32 characters'),
  CORS_ORIGINS: commaList,
  TRUST_PROXY: booleanFlag,
  SMTP_URL: optionalString.refine((v) => v === undefined || /^smtps?:\/\//i.test(v), 'must start with smtp:// or smtps://'),
  MAIL_FROM: optionalString,
  TELEGRAM_BOT_TOKEN: optionalString,
  TELEGRAM_API_ROOT: httpUrl,
  BOT_WEBHOOK_URL: httpUrl,
  BOT_WEBHOOK_SECRET: optionalString.refine(
    (v) => v === undefined || /^[A-Za-z0-9_-]{1,256}$/.test(v),
    'must be 1-256 characters of A-Z, a-z, 0-9, _ and - (what Telegram accepts as a secret_token)',
  ),
  TELEGRAM_PAYMENTS_SUPPORT: optionalString.refine((v) => v === undefined || v.length <= 200, 'must be at most 200 characters'),
  OIDC_ISSUER: httpUrl,
  OIDC_CLIENT_ID: optionalString,
  OIDC_CLIENT_SECRET: optionalString,
  OIDC_JWKS_URL: httpUrl,
  OIDC_TOKEN_URL: httpUrl,
  OIDC_AUTHORIZATION_URL: httpUrl,
  OIDC_NAME: optionalString.refine((v) => v === undefined || v.length <= 60, 'must be at most 60 characters'),
  CONTENT_POLICY_BLOCKLIST: commaList,
  WHISPER_MODEL_PATH: optionalString,
  LLM_MODEL_PATH: optionalString,
  URL_FETCH_ALLOW: commaList,
  REPLICATE_WEBHOOK_SECRET: optionalString.refine(
    (v) => v === undefined || /^whsec_[A-Za-z0-9+/]+={0,2}$/.test(v),
    'must be the whsec_<base64> signing secret of the provider',
  ),
  STRIPE_SECRET_KEY: optionalString.refine((v) => v === undefined || /^(sk|rk)_[A-Za-z0-9_]+$/.test(v), 'must be a Stripe secret (sk_…) or restricted (rk_…) key'),
  STRIPE_WEBHOOK_SECRET: optionalString.refine((v) => v === undefined || /^whsec_[A-Za-z0-9]+$/.test(v), "must be the endpoint's whsec_… signing secret"),
  STRIPE_API_BASE: httpUrl,
  STRIPE_SUCCESS_URL: httpUrl,
  STRIPE_CANCEL_URL: httpUrl,
  PLANS_PATH: optionalString,
  CATALOG_PATH: optionalString,
  ASSISTANTS_PATH: optionalString,
  PRODUCTS_PATH: optionalString,
  WEB_DIR: optionalString,
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .optional()
    .default('info'),
  AUTH_LOGIN_LIMIT_PER_MINUTE: positiveInt(10),
  AUTH_REGISTER_LIMIT_PER_MINUTE: positiveInt(10),
  AUTH_FORGOT_LIMIT_PER_HOUR: positiveInt(3),
  REDEEM_FAILED_ATTEMPTS_PER_HOUR: positiveInt(10),
  METRICS_TOKEN: optionalString.refine((v) => v === undefined || v.length >= 16, 'must be at least 16 characters'),
  METRICS_PORT: optionalPort,
});

export type DatabaseConfig =
  | { kind: 'sqlite'; file: string }
  | { kind: 'mysql'; url: string };

export interface Config {
  port: number;
  /**
   * HTTP worker processes the `web` role forks (WEB_CONCURRENCY, Heroku's convention; unset or 0:
   * one per CPU, less one for the database when it runs on this machine). Only on MySQL + Redis:
   * embedded stores live in one process.
   */
  webConcurrency: number;
  /**
   * Generation jobs one worker process runs at once (GENERATION_JOB_CONCURRENCY, default 16).
   * They mostly wait on an upstream; each provider's own cap (`<NAME>_MAX_CONCURRENCY`) is what
   * protects it, and a job over that cap waits for a slot or is put off.
   */
  generationJobConcurrency: number;
  dataDir: string;
  database: DatabaseConfig;
  /** How long a process waits at boot for a database it cannot reach yet (retrying with backoff) before it gives up. */
  databaseBootWaitMs: number;
  redisUrl: string | undefined;
  /** Namespace of every Redis key (limits, queues), so deployments or test runs can share a server. */
  redisPrefix: string;
  publicBaseUrl: string;
  /** Undefined means "embedded": a secret is generated once and kept in DATA_DIR. */
  jwtSecret: string | undefined;
  corsOrigins: string[];
  trustProxy: boolean;
  smtpUrl: string | undefined;
  mailFrom: string;
  telegram: {
    botToken: string | undefined;
    apiRoot: string;
    webhookUrl: string | undefined;
    /** Telegram's `secret_token` for the webhook: BOT_WEBHOOK_SECRET, else derived from the token. */
    webhookSecret: string | undefined;
    /** Whom /paysupport tells people to write to (a @username, an address): Telegram requires bots that sell to answer it. */
    paymentsSupport: string | undefined;
  };
  oidc: {
    issuer: string | undefined;
    clientId: string | undefined;
    clientSecret: string | undefined;
    jwksUrl: string | undefined;
    tokenUrl: string | undefined;
    /** Where the dashboard sends people to sign in (the code flow); from discovery unless set. */
    authorizationUrl: string | undefined;
    /** The provider's name on the dashboard's button ("Sign in with <name>"). */
    name: string | undefined;
  };
  contentPolicyBlocklist: string[];
  /** A whisper.cpp ggml model the operator brings; offers local whisper transcription. */
  whisperModelPath: string | undefined;
  /** A GGUF language model the operator brings; offers `local-llm` (llama.cpp on the CPU). */
  llmModelPath: string | undefined;
  urlFetchAllow: string[];
  productFiles: { plans: string; catalog: string; assistants: string; products: string };
  /** The built web dashboard (`npm run build` writes it to dist/web); served at `/` when it holds an index.html. */
  webDir: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  authLimits: { loginPerMinute: number; registerPerMinute: number; forgotPerHour: number };
  /** Refused redemption-code attempts an account may make per hour before it must wait; 0 = no limit. */
  redeemFailuresPerHour: number;
  /** Enabled upstreams by name (`openai`, …): either variable enables one; a key is optional. */
  providers: Record<string, UpstreamConfig>;
  /** Signing secret of Replicate's webhooks; set, predictions ask to be posted to `/api/v2/providers/replicate/webhook`. */
  replicateWebhook: { secret: string } | undefined;
  /**
   * Stripe Checkout (STRIPE_SECRET_KEY) and its webhook (STRIPE_WEBHOOK_SECRET), each enabled by
   * its own secret. `apiBase` replaces https://api.stripe.com (a local fake in tests, a proxy);
   * the URLs are where Checkout sends the buyer back to.
   */
  stripe: {
    secretKey: string | undefined;
    webhookSecret: string | undefined;
    apiBase: string | undefined;
    successUrl: string;
    cancelUrl: string;
  };
  /** Calls in flight per provider name (global with Redis, per process otherwise); absent = uncapped. */
  providerConcurrency: Record<string, number>;
  /**
   * Prometheus metrics: `token` (METRICS_TOKEN) opens GET /metrics to `Authorization: Bearer
   * <token>` (unset: /metrics is 404); `port` (METRICS_PORT) serves them in processes without the
   * API (worker, clock, bot), and needs the token.
   */
  metrics: { token: string | undefined; port: number | undefined };
}

/** Cap of each enabled upstream unless `<NAME>_MAX_CONCURRENCY` says otherwise. */
export const DEFAULT_UPSTREAM_CONCURRENCY = 16;

/**
 * `<NAME>_MAX_CONCURRENCY` for any provider name (`LOCAL_MAX_CONCURRENCY` caps the built-in
 * models); enabled upstreams get the default cap.
 */
function concurrencyFrom(env: Record<string, string | undefined>, upstreams: string[], problems: string[]): Record<string, number> {
  const caps: Record<string, number> = Object.fromEntries(upstreams.map((name) => [name, DEFAULT_UPSTREAM_CONCURRENCY]));
  for (const [variable, value] of Object.entries(env)) {
    const match = /^([A-Z][A-Z0-9]*)_MAX_CONCURRENCY$/.exec(variable);
    if (!match || value === undefined || value.trim() === '') continue;
    const cap = Number(value.trim());
    if (!Number.isInteger(cap) || cap < 1) problems.push(`${variable}: must be a positive integer`);
    else caps[(match[1] as string).toLowerCase()] = cap;
  }
  return caps;
}

export interface UpstreamConfig {
  apiKey?: string;
  baseUrl: string;
}

function upstreamsFrom(env: RawEnv): Record<string, UpstreamConfig> {
  const providers: Record<string, UpstreamConfig> = {};
  for (const [name, defaultBaseUrl] of Object.entries(UPSTREAM_PROVIDERS)) {
    const apiKey = env(`${name.toUpperCase()}_API_KEY`);
    const baseUrl = env(`${name.toUpperCase()}_BASE_URL`);
    if (apiKey === undefined && baseUrl === undefined) continue;
    providers[name] = { ...(apiKey !== undefined ? { apiKey } : {}), baseUrl: (baseUrl ?? defaultBaseUrl).replace(/\/+$/, '') };
  }
  return providers;
}

/**
 * The webhook secret when BOT_WEBHOOK_SECRET is unset: an HMAC of a fixed label under the bot
 * token, so every web process derives the same one, and it says nothing about the token.
 * base64url is within Telegram's alphabet (A-Z, a-z, 0-9, _ and -).
 */
function derivedWebhookSecret(botToken: string): string {
  return crypto.createHmac('sha256', botToken).update('gensvc telegram webhook secret v1').digest('base64url');
}

/** Repository root: two levels above this file, whether running from source or from dist/. */
export function projectRoot(): string {
  const here = __dirname;
  const fromDist = here.split(path.sep).includes('dist');
  return path.resolve(here, fromDist ? '../../..' : '../..');
}

/** A variable as the schema reads it: trimmed, empty meaning unset. */
type RawEnv = (name: string) => string | undefined;

function databaseFrom(env: RawEnv, dataDir: string, problems: string[]): DatabaseConfig {
  const candidates: Array<[string, string | undefined]> = [
    ['DATABASE_URL', env('DATABASE_URL')],
    ['JAWSDB_MARIA_URL', env('JAWSDB_MARIA_URL')],
    ['JAWSDB_URL', env('JAWSDB_URL')],
    ['CLEARDB_DATABASE_URL', env('CLEARDB_DATABASE_URL')],
  ];
  const found = candidates.find(([, v]) => v !== undefined);
  if (!found) return { kind: 'sqlite', file: path.join(dataDir, 'gensvc.sqlite') };
  const [name, url] = found as [string, string];
  if (/^postgres(ql)?:\/\//i.test(url)) {
    problems.push(
      `${name}: PostgreSQL is not supported; gensvc runs on MySQL/MariaDB (mysql://...) or, with no DATABASE_URL, on embedded SQLite`,
    );
  } else if (!/^(mysql|mariadb):\/\//i.test(url)) {
    problems.push(`${name}: must be a mysql:// URL`);
  }
  return { kind: 'mysql', url: url.replace(/^mariadb:/i, 'mysql:') };
}

/**
 * The web role's HTTP workers when WEB_CONCURRENCY is unset: one per CPU, but one fewer when the
 * database is on this machine (a loopback host), which then needs a core of its own. Measured on
 * a 2-core host with MariaDB beside the web role (README, Benchmark): two web processes gave
 * 0.83–0.93× of Portkey's req/s where one gave 0.91–1.12×, in the same runs.
 */
function defaultWebConcurrency(database: DatabaseConfig, cpus: number): number {
  if (database.kind !== 'mysql') return cpus;
  let host: string;
  try {
    host = new URL(database.url).hostname;
  } catch {
    return cpus;
  }
  const local = host === '' || host === 'localhost' || host === '[::1]' || host === '::1' || /^127\./.test(host);
  return local ? Math.max(1, cpus - 1) : cpus;
}

export function loadConfig(env: Record<string, string | undefined>): Config {
  const parsed = EnvSchema.safeParse(env);
  const problems: string[] = parsed.success
    ? []
    : parsed.error.issues.map((issue) => `${issue.path.join('.') || '(env)'}: ${issue.message}`);
  // The checks across variables run on the raw values too, so one error names every bad variable.
  const raw: RawEnv = (name) => {
    const v = env[name]?.trim();
    return v === undefined || v === '' ? undefined : v;
  };
  const root = projectRoot();
  const dataDir = path.resolve(raw('DATA_DIR') ?? path.join(root, 'data'));
  const database = databaseFrom(raw, dataDir, problems);
  if (database.kind === 'mysql' && raw('JWT_SECRET') === undefined) {
    problems.push('JWT_SECRET: required when a database URL is set (every process must sign with the same secret)');
  }
  if ((raw('OIDC_CLIENT_ID') === undefined) !== (raw('OIDC_ISSUER') === undefined)) {
    problems.push('OIDC_ISSUER and OIDC_CLIENT_ID: set both to enable identity-provider login, or neither');
  }
  if (raw('METRICS_PORT') !== undefined && raw('METRICS_TOKEN') === undefined) {
    problems.push('METRICS_PORT: needs METRICS_TOKEN (the metrics are served to Authorization: Bearer <METRICS_TOKEN> only)');
  }
  const upstreams = upstreamsFrom(raw);
  const providerConcurrency = concurrencyFrom(env, Object.keys(upstreams), problems);
  if (!parsed.success || problems.length > 0) throw new ConfigError(problems);
  const e = parsed.data;

  const publicBaseUrl = (e.PUBLIC_BASE_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, '');
  const productDir = path.join(root, 'product');
  return {
    port: e.PORT,
    webConcurrency: e.WEB_CONCURRENCY > 0 ? e.WEB_CONCURRENCY : defaultWebConcurrency(database, os.availableParallelism()),
    generationJobConcurrency: Math.max(1, e.GENERATION_JOB_CONCURRENCY),
    dataDir,
    database,
    databaseBootWaitMs: e.DATABASE_BOOT_WAIT_SECONDS * 1000,
    redisUrl: e.REDIS_URL,
    redisPrefix: e.REDIS_KEY_PREFIX ?? 'gensvc',
    publicBaseUrl,
    jwtSecret: e.JWT_SECRET,
    corsOrigins: e.CORS_ORIGINS,
    trustProxy: e.TRUST_PROXY,
    smtpUrl: e.SMTP_URL,
    mailFrom: e.MAIL_FROM ?? 'gensvc <no-reply@localhost>',
    telegram: {
      botToken: e.TELEGRAM_BOT_TOKEN,
      apiRoot: (e.TELEGRAM_API_ROOT ?? 'https://api.telegram.org').replace(/\/+$/, ''),
      webhookUrl: e.BOT_WEBHOOK_URL,
      webhookSecret: e.BOT_WEBHOOK_SECRET ?? (e.TELEGRAM_BOT_TOKEN ? derivedWebhookSecret(e.TELEGRAM_BOT_TOKEN) : undefined),
      paymentsSupport: e.TELEGRAM_PAYMENTS_SUPPORT,
    },
    oidc: {
      issuer: e.OIDC_ISSUER?.replace(/\/+$/, ''),
      clientId: e.OIDC_CLIENT_ID,
      clientSecret: e.OIDC_CLIENT_SECRET,
      jwksUrl: e.OIDC_JWKS_URL,
      tokenUrl: e.OIDC_TOKEN_URL,
      authorizationUrl: e.OIDC_AUTHORIZATION_URL,
      name: e.OIDC_NAME,
    },
    contentPolicyBlocklist: e.CONTENT_POLICY_BLOCKLIST.map((w) => w.toLowerCase()),
    whisperModelPath: e.WHISPER_MODEL_PATH ? path.resolve(e.WHISPER_MODEL_PATH) : undefined,
    llmModelPath: e.LLM_MODEL_PATH ? path.resolve(e.LLM_MODEL_PATH) : undefined,
    urlFetchAllow: e.URL_FETCH_ALLOW,
    productFiles: {
      plans: path.resolve(e.PLANS_PATH ?? path.join(productDir, 'plans.json')),
      catalog: path.resolve(e.CATALOG_PATH ?? path.join(productDir, 'catalog.json')),
      assistants: path.resolve(e.ASSISTANTS_PATH ?? path.join(productDir, 'assistants.json')),
      products: path.resolve(e.PRODUCTS_PATH ?? path.join(productDir, 'products.json')),
    },
    webDir: path.resolve(e.WEB_DIR ?? path.join(root, 'dist', 'web')),
    logLevel: e.LOG_LEVEL,
    authLimits: {
      loginPerMinute: e.AUTH_LOGIN_LIMIT_PER_MINUTE,
      registerPerMinute: e.AUTH_REGISTER_LIMIT_PER_MINUTE,
      forgotPerHour: e.AUTH_FORGOT_LIMIT_PER_HOUR,
    },
    redeemFailuresPerHour: e.REDEEM_FAILED_ATTEMPTS_PER_HOUR,
    providers: upstreams,
    replicateWebhook: e.REPLICATE_WEBHOOK_SECRET ? { secret: e.REPLICATE_WEBHOOK_SECRET } : undefined,
    stripe: {
      secretKey: e.STRIPE_SECRET_KEY,
      webhookSecret: e.STRIPE_WEBHOOK_SECRET,
      apiBase: e.STRIPE_API_BASE?.replace(/\/+$/, ''),
      // {CHECKOUT_SESSION_ID} is Stripe's template: it puts the session's id there.
      successUrl: e.STRIPE_SUCCESS_URL ?? `${publicBaseUrl}/overview?checkout=success&session_id={CHECKOUT_SESSION_ID}`,
      cancelUrl: e.STRIPE_CANCEL_URL ?? `${publicBaseUrl}/overview?checkout=cancelled`,
    },
    providerConcurrency,
    metrics: { token: e.METRICS_TOKEN, port: e.METRICS_PORT },
  };
}
