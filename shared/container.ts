/**
 * Builds everything a process needs from the config: stores first, then the services on top.
 * Entry points call `buildContainer`, start their role, and `close` on SIGTERM.
 */
import type { DataSource } from 'typeorm';
import { AccessTokens, resolveJwtSecret } from './auth/access-tokens';
import { ApiKeys } from './auth/api-keys';
import { IdentityProviderLogin } from './auth/identity-provider';
import { MessengerLogin } from './auth/messenger-login';
import { PasswordAccounts } from './auth/password-accounts';
import { Sessions } from './auth/sessions';
import { Users } from './accounts/users';
import { Clock, systemClock } from './clock';
import type { Config } from './config';
import { Database } from './db/database';
import { openDatabase } from './db/data-source';
import { AuthLimiter, GenerationLimiter } from './limits';
import { createLogger, Logger } from './log';
import { LogMailer, Mailer, SmtpMailer } from './mail';
import { loadPlans, PlanTable } from './plans';
import { createRedis, Redis } from './redis';

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
  close(): Promise<void>;
}

export interface ContainerOptions {
  /** Bring the schema up to date (embedded mode and the `release` role). */
  migrate: boolean;
  log?: Logger;
  clock?: Clock;
  mailer?: Mailer;
  fetch?: typeof fetch;
  /** An already open DataSource (tests share one per file). */
  dataSource?: DataSource;
}

export async function buildContainer(config: Config, options: ContainerOptions): Promise<Container> {
  const log = options.log ?? createLogger(config.logLevel);
  const clock = options.clock ?? systemClock;
  const plans = loadPlans(config.productFiles.plans);
  const dataSource = options.dataSource ?? (await openDatabase(config.database, { migrate: options.migrate }));
  const db = new Database(dataSource);
  const redis = config.redisUrl ? createRedis(config.redisUrl) : undefined;
  redis?.on('error', (error: Error) => log.warn({ err: error.message }, 'redis error'));
  const mailer = options.mailer ?? (config.smtpUrl ? new SmtpMailer(config.smtpUrl, config.mailFrom) : new LogMailer(log));
  const fetchImpl = options.fetch ?? fetch;

  const accessTokens = new AccessTokens(resolveJwtSecret(config.jwtSecret, config.dataDir), clock);
  const users = new Users(db, plans, clock);
  const sessions = new Sessions(db, clock);
  const passwords = new PasswordAccounts(db, users, sessions, mailer, clock, config.publicBaseUrl, log);
  const messenger = new MessengerLogin(db, users, sessions, clock, config.telegram.botToken);
  const identityProvider = new IdentityProviderLogin(config.oidc, db, users, sessions, clock, fetchImpl, log);
  const apiKeys = new ApiKeys(db, clock);
  const generationLimiter = new GenerationLimiter(redis, config.redisPrefix);
  const authLimiter = new AuthLimiter(redis, config.redisPrefix, config.authLimits);

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
    async close() {
      mailer.close();
      if (redis) await redis.quit().catch(() => redis.disconnect());
      if (!options.dataSource) await db.close();
    },
  };
}
