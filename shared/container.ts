/**
 * Builds everything a process needs from the config: stores first, then the services on top.
 * Entry points call `buildContainer`, start their role, and `close` on SIGTERM.
 */
import type { DataSource } from 'typeorm';
import { AccessTokens, resolveJwtSecret } from './auth/access-tokens';
import { AccountChanges } from './auth/account-changes';
import { ApiKeys } from './auth/api-keys';
import { IdentityProviderLogin } from './auth/identity-provider';
import { MessengerLogin } from './auth/messenger-login';
import { PasswordAccounts } from './auth/password-accounts';
import { Sessions } from './auth/sessions';
import { Users } from './accounts/users';
import { AccountLinks } from './accounts/link';
import { Assistants, loadAssistants } from './assistants';
import { Catalog, loadCatalogFile } from './catalog';
import { History } from './generation/history';
import { MediaInputs } from './generation/media-inputs';
import { GenerationRunner, LeaseTimings } from './generation/runner';
import { Generations } from './generation/service';
import { GenerationStore } from './generation/store';
import { createLocalProvider } from './providers/local';
import { createLlamaProvider } from './providers/llama';
import { createOpenAIProvider } from './providers/openai';
import { createElevenLabsProvider } from './providers/elevenlabs';
import { createDeepgramProvider } from './providers/deepgram';
import { createReplicateProvider, PredictionSignals } from './providers/replicate';
import { ProviderRegistry } from './providers/registry';
import { LocalProviderSlots, ProviderSlots, RedisProviderSlots } from './providers/concurrency';
import type { ProviderAdapter } from './providers/types';
import { BeeQueueBackend } from './queue/bee';
import { InProcessQueue } from './queue/in-process';
import type { Queue } from './queue/types';
import { LocalDiskStorage, Storage } from './storage';
import { UrlFetcher } from './net/url-fetch';
import { Webhooks } from './webhooks';
import { Schedules } from './schedules';
import { Maintenance } from './maintenance';
import path from 'node:path';
import { Clock, systemClock } from './clock';
import type { Config } from './config';
import { Database } from './db/database';
import { Billing } from './billing';
import { Migrations, openDatabase } from './db/data-source';
import { AuthLimiter, FailedAttemptLimiter, GenerationLimiter } from './limits';
import { createLogger, Logger } from './log';
import { LogMailer, Mailer, SmtpMailer } from './mail';
import { loadPlans, PlanTable } from './plans';
import { createRedis, Redis } from './redis';
import { BotDeliveries } from './telegram/deliveries';
import { watchBotGenerations } from './telegram/delivery';
import { watchInlineGenerations } from './telegram/inline-messages';
import { ChatStates, createKeyValueStore, KeyValueStore } from './telegram/state';
import { Payments } from './payments/payments';
import { loadProducts, ProductTable } from './payments/products';
import { RedemptionCodes } from './payments/redemption-codes';
import { StripeCheckout } from './payments/stripe/checkout';
import { createStripeClient } from './payments/stripe/client';
import { StripeWebhook } from './payments/stripe/webhook';
import { currentLogContext, runWithLogContext } from './observability/context';
import { Metrics } from './observability/metrics';
import { Readiness } from './observability/readiness';
import { registerStoreGauges } from './observability/store-gauges';

export interface Container {
  config: Config;
  log: Logger;
  clock: Clock;
  db: Database;
  redis: Redis | undefined;
  plans: PlanTable;
  mailer: Mailer;
  accessTokens: AccessTokens;
  users: Users;
  sessions: Sessions;
  passwords: PasswordAccounts;
  messenger: MessengerLogin;
  identityProvider: IdentityProviderLogin;
  apiKeys: ApiKeys;
  generationLimiter: GenerationLimiter;
  authLimiter: AuthLimiter;
  catalog: Catalog;
  providers: ProviderRegistry;
  storage: Storage;
  queue: Queue;
  /** Every movement of a balance (holds, captures, releases, grants, refills, corrections). */
  billing: Billing;
  /** The generation row's plain-SQL statements (insert, claim, completion, failure; money through billing). */
  generationStore: GenerationStore;
  runner: GenerationRunner;
  generations: Generations;
  history: History;
  assistants: Assistants;
  webhooks: Webhooks;
  schedules: Schedules;
  maintenance: Maintenance;
  links: AccountLinks;
  /** Wakes a polling provider adapter when its prediction's webhook arrives (any process). */
  predictionSignals: PredictionSignals;
  /** "This account's credentials changed", heard by every process (the API-key cache listens). */
  accountChanges: AccountChanges;
  /** The bot's state (chats, dialogs, preferences): Redis when configured, else a table. */
  botState: KeyValueStore;
  chats: ChatStates;
  /** Where results of generations the bot started go. */
  botDeliveries: BotDeliveries;
  /** What is for sale: token packs and plan months, priced in Stars and a currency (product/products.json). */
  products: ProductTable;
  /** Credits and reversals of payments, each exactly once (shared/payments). */
  payments: Payments;
  redemptionCodes: RedemptionCodes;
  /** Buying through Stripe Checkout (STRIPE_SECRET_KEY) and Stripe's webhook (STRIPE_WEBHOOK_SECRET). */
  stripeCheckout: StripeCheckout;
  stripeWebhook: StripeWebhook;
  /** This process's metrics (GET /metrics, or METRICS_PORT in processes without the API). */
  metrics: Metrics;
  /** Whether this process takes work: GET /ready (replaceable, so a test can play the lifecycle). */
  readiness: Readiness;
  close(): Promise<void>;
}

export interface ContainerOptions {
  /** Bring the schema up to date with these first (embedded mode, tests); absent: `release` does. */
  migrate?: Migrations;
  log?: Logger;
  clock?: Clock;
  mailer?: Mailer;
  fetch?: typeof fetch;
  /** An already open DataSource (tests share one per file). */
  dataSource?: DataSource;
  /** Provider adapters beside the configured ones (tests register their fakes here). */
  providers?: ProviderAdapter[];
  /** Whether this process runs jobs: decides how a Redis queue is opened. */
  processesJobs?: boolean;
  /** How long a job's lease lasts and how often it is renewed (tests shorten them). */
  leases?: LeaseTimings;
  /** The process's metrics, when the lifecycle made them (absent: new ones). */
  metrics?: Metrics;
  /** The process's readiness, when the lifecycle tracks it (absent: ready at once). */
  readiness?: Readiness;
}

/** The provider adapters this deployment has: the built-in local one first, then each configured upstream. */
function configuredProviders(config: Config, fetchImpl: typeof fetch, injectedFetch: typeof fetch | undefined, predictionSignals: PredictionSignals, log: Logger): ProviderAdapter[] {
  const adapters = [createLocalProvider({ whisperModelPath: config.whisperModelPath })];
  const openai = config.providers.openai;
  // Its own pooled client unless a fetch was injected: this adapter is the hot path of chat.
  if (openai) adapters.push(createOpenAIProvider({ ...openai, fetch: injectedFetch }));
  if (config.providers.elevenlabs) adapters.push(createElevenLabsProvider({ ...config.providers.elevenlabs, fetch: fetchImpl }));
  if (config.providers.deepgram) adapters.push(createDeepgramProvider({ ...config.providers.deepgram, fetch: fetchImpl }));
  const replicateWebhook = config.replicateWebhook ? { url: `${config.publicBaseUrl}/api/v2/providers/replicate/webhook`, signals: predictionSignals } : undefined;
  if (config.providers.replicate) adapters.push(createReplicateProvider({ ...config.providers.replicate, fetch: fetchImpl, webhook: replicateWebhook }));
  if (config.llmModelPath) adapters.push(createLlamaProvider({ modelPath: config.llmModelPath, log }));
  return adapters;
}

export async function buildContainer(config: Config, options: ContainerOptions): Promise<Container> {
  const log = options.log ?? createLogger(config.logLevel);
  const metrics = options.metrics ?? new Metrics();
  const clock = options.clock ?? systemClock;
  const plans = loadPlans(config.productFiles.plans);
  const products = loadProducts(config.productFiles.products);
  const dataSource =
    options.dataSource ??
    (await openDatabase(config.database, {
      migrate: options.migrate,
      wait: {
        ms: config.databaseBootWaitMs,
        onRetry: (error, attempt, delayMs) =>
          log.warn({ err: (error as Error).message, attempt, retryInMs: delayMs }, 'the database cannot be reached yet; retrying'),
      },
    }));
  const db = new Database(dataSource);
  const redis = config.redisUrl ? createRedis(config.redisUrl) : undefined;
  redis?.on('error', (error: Error) => log.warn({ err: error.message }, 'redis error'));
  const mailer = options.mailer ?? (config.smtpUrl ? new SmtpMailer(config.smtpUrl, config.mailFrom) : new LogMailer(log));
  const fetchImpl = options.fetch ?? fetch;

  const accessTokens = new AccessTokens(resolveJwtSecret(config.jwtSecret, config.dataDir), clock);
  const billing = new Billing(db);
  const redisForChanges = config.redisUrl;
  const accountChanges = new AccountChanges({
    connect: redisForChanges ? () => createRedis(redisForChanges) : undefined,
    publisher: redis,
    prefix: config.redisPrefix,
    onError: (error) => log.warn({ err: error.message }, 'account changes: redis error'),
  });
  const users = new Users(db, billing, plans, clock, accountChanges);
  const sessions = new Sessions(db, clock);
  const passwords = new PasswordAccounts(db, users, sessions, mailer, clock, config.publicBaseUrl, log);
  const messenger = new MessengerLogin(db, users, sessions, clock, config.telegram.botToken);
  const identityProvider = new IdentityProviderLogin(config.oidc, db, users, sessions, clock, fetchImpl, log);
  const apiKeys = new ApiKeys(db, clock, accountChanges);
  const generationLimiter = new GenerationLimiter(redis, config.redisPrefix);
  const authLimiter = new AuthLimiter(redis, config.redisPrefix, config.authLimits);

  const redisUrl = config.redisUrl;
  const predictionSignals = new PredictionSignals({
    connect: redisUrl ? () => createRedis(redisUrl) : undefined,
    prefix: config.redisPrefix,
    onError: (error) => log.warn({ err: error.message }, 'prediction signals: redis error'),
  });
  const providers = new ProviderRegistry([...configuredProviders(config, fetchImpl, options.fetch, predictionSignals, log), ...(options.providers ?? [])]);
  const catalog = new Catalog(loadCatalogFile(config.productFiles.catalog), plans, (name, category, upstreamModel) =>
    providers.canServe(name, category, upstreamModel),
  );
  const storage = new LocalDiskStorage(path.join(config.dataDir, 'files'));
  const queue: Queue = config.redisUrl
    ? new BeeQueueBackend(config.redisUrl, config.redisPrefix, log, options.processesJobs ?? false)
    : new InProcessQueue(log);
  const inputs = new MediaInputs(config.publicBaseUrl, storage, config.urlFetchAllow);
  const slots: ProviderSlots = redis
    ? new RedisProviderSlots(redis, config.redisPrefix, config.providerConcurrency)
    : new LocalProviderSlots(config.providerConcurrency);
  const store = new GenerationStore(db, billing);
  const runner = new GenerationRunner(store, catalog, providers, storage, inputs, clock, log, slots, options.leases, metrics);
  const assistants = new Assistants(loadAssistants(config.productFiles.assistants), catalog, db, clock);
  const generations = new Generations({
    db,
    store,
    runner,
    catalog,
    plans,
    limiter: generationLimiter,
    queue,
    storage,
    inputs,
    assistants,
    balances: users,
    clock,
    log,
    blocklist: config.contentPolicyBlocklist,
  });
  const history = new History(db, generations, storage, clock);
  // Results of generations the Telegram bot started are delivered by a job, whichever process ends them.
  if (config.telegram.botToken) {
    watchBotGenerations(runner, queue, log);
    watchInlineGenerations(runner, queue, log);
  }
  const webhooks = new Webhooks(db, new UrlFetcher({ allow: config.urlFetchAllow, maxBytes: 64 * 1024 }), queue, clock, config.publicBaseUrl, log);
  const schedules = new Schedules(db, generations, users, plans, queue, clock, log);
  const maintenance = new Maintenance(db, billing, users, plans, storage, clock, log);
  const botState = createKeyValueStore({ db, clock, redis, redisPrefix: config.redisPrefix });
  const botDeliveries = new BotDeliveries({ db, clock });
  if (config.telegram.botToken) {
    // A Telegram user's schedule results arrive in their chat (private chat id = Telegram user id).
    schedules.deliverToChat(async (generation, user) => {
      const identity = (await users.identities(user.id)).find((i) => i.kind === 'messenger');
      if (!identity) return;
      await botDeliveries.create({ generationId: generation.id, chatId: identity.subject, messageId: null, kind: 'media', language: user.language, prompt: generation.prompt });
    });
  }
  const payments = new Payments(db, billing, users, plans, products, clock);
  const redeemAttempts = new FailedAttemptLimiter(redis, config.redisPrefix, 'redeem-failures', config.redeemFailuresPerHour, 3600);
  const redemptionCodes = new RedemptionCodes(db, payments, redeemAttempts, clock);
  const stripe = config.stripe.secretKey ? createStripeClient(config.stripe.secretKey, config.stripe.apiBase) : undefined;
  const stripeCheckout = new StripeCheckout(stripe, payments, plans, { success: config.stripe.successUrl, cancel: config.stripe.cancelUrl }, log);
  const stripeWebhook = new StripeWebhook(config.stripe.webhookSecret, stripe, db, payments, clock, log);
  runner.onEnd((generation) => metrics.generationEnded(generation));
  runner.onEnd((generation, facts) => {
    if (facts.hasWebhooks === false) return;
    // Under the generation's id: its deliveries (jobs) carry it, with the request id, to the worker.
    runWithLogContext({ ...currentLogContext(), generationId: generation.id }, () =>
      webhooks.onGenerationEnded(generation).catch((error: unknown) => log.error({ err: error, generationId: generation.id }, 'webhook fan-out failed')),
    );
  });
  registerStoreGauges(metrics, { db, redis, queue });

  return {
    config,
    log,
    clock,
    db,
    redis,
    plans,
    mailer,
    accessTokens,
    users,
    sessions,
    passwords,
    messenger,
    identityProvider,
    apiKeys,
    generationLimiter,
    authLimiter,
    catalog,
    providers,
    storage,
    queue,
    billing,
    generationStore: store,
    runner,
    generations,
    history,
    assistants,
    webhooks,
    schedules,
    maintenance,
    links: new AccountLinks(db, clock),
    predictionSignals,
    accountChanges,
    botState,
    chats: new ChatStates(botState),
    botDeliveries,
    products,
    payments,
    redemptionCodes,
    stripeCheckout,
    stripeWebhook,
    metrics,
    readiness: options.readiness ?? new Readiness(),
    async close() {
      await queue.close();
      await providers.close();
      await predictionSignals.close();
      await accountChanges.close();
      mailer.close();
      if (redis) await redis.quit().catch(() => redis.disconnect());
      if (!options.dataSource) await db.close();
    },
  };
}
