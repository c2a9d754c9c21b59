/**
 * The operator's command line (decisions.md "Operating"): each command returns one JSON-ready
 * object. Runs against the same store as the server.
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { hashPassword } from '../shared/auth/passwords';
import { normalizeEmail } from '../shared/auth/password-accounts';
import { presentBalance, presentUser } from '../api/presenters/account';
import { iso } from '../api/presenters/dates';
import { tokenBalance } from '../shared/billing';
import { auditLedger } from '../shared/billing/audit';
import type { Container } from '../shared/container';
import { LedgerEntry, RedemptionBatch, User } from '../shared/db/entities';
import { AppError } from '../shared/errors';
import { PLAN_NAMES, PlanName } from '../shared/plans';
import { CodeGrant, MAX_CODES_PER_BATCH } from '../shared/payments/redemption-codes';
import { reconcile, refundStars, StarsCommandError } from './stars-commands';

export class UsageError extends Error {}

export const ADMIN_USAGE = `usage: npm run --silent admin -- <command> [options]
  create-user  --email E --password P [--name N] [--plan PLAN] [--bonus-tokens N]
  set-plan     --email E --plan PLAN [--expires ISO-8601]
  grant-tokens --email E --amount N        (negative N takes tokens back)
  list-users   [--limit N] [--offset N]
  revoke-key   --id KEY_ID
  ledger       --email E [--limit N]        (the user's balance changes, newest first)
  audit-ledger                              (checks every account's money; exits 1 listing each violation)
  create-codes (--tokens N | --plan PLAN --days N) [--uses N] [--count N] [--expires ISO-8601] [--note TEXT]
                                            (redemption codes, printed once: only their hashes are kept)
  list-code-batches                         (each batch with its uses left)
  refund-stars --charge CHARGE_ID [--telegram-user ID]
                                            (refunds a Telegram Stars charge and reverses its payment once)
  reconcile-stars                           (Telegram's Star transactions against the payments; exits 1 listing each mismatch)
plans: ${PLAN_NAMES.join(', ')}`;

type Options = Record<string, string | undefined>;

function required(options: Options, name: string): string {
  const value = options[name];
  if (value === undefined || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

/** Token amounts and ids are INT columns: a larger number is a typo, not a request. */
const MAX_INTEGER = 2_147_483_647;

function integer(value: string, name: string): number {
  if (!/^-?[0-9]+$/.test(value)) throw new UsageError(`--${name} must be an integer`);
  const n = Number(value);
  if (Math.abs(n) > MAX_INTEGER) throw new UsageError(`--${name} must be between -${MAX_INTEGER} and ${MAX_INTEGER}`);
  return n;
}

/**
 * `--amount -50` is the documented form of a correction, but node's parseArgs refuses an option
 * value that starts with a dash; a negative number right after an option is joined to it.
 */
function joinNegativeValues(args: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i] ?? '';
    const next = args[i + 1];
    if (/^--[a-z-]+$/.test(arg) && next !== undefined && /^-[0-9]+$/.test(next)) {
      out.push(`${arg}=${next}`);
      i += 1;
    } else {
      out.push(arg);
    }
  }
  return out;
}

const EmailArg = z.email().max(320);

function plan(value: string): PlanName {
  if (!(PLAN_NAMES as readonly string[]).includes(value)) throw new UsageError(`--plan must be one of ${PLAN_NAMES.join(', ')}`);
  return value as PlanName;
}

function positive(value: string, name: string, max = MAX_INTEGER): number {
  const n = integer(value, name);
  if (n < 1 || n > max) throw new UsageError(`--${name} must be between 1 and ${max}`);
  return n;
}

function futureDate(value: string, now: Date): Date {
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw new UsageError('--expires must be an ISO-8601 date');
  if (date.getTime() <= now.getTime()) throw new UsageError('--expires must be in the future');
  return date;
}

/** What each code of a batch gives: `--tokens N`, or `--plan PLAN --days N`. */
function codeGrant(options: Options): CodeGrant {
  if ((options.tokens === undefined) === (options.plan === undefined)) throw new UsageError('give either --tokens N or --plan PLAN --days N');
  if (options.tokens !== undefined) {
    if (options.days !== undefined) throw new UsageError('--days goes with --plan');
    return { kind: 'tokens', tokens: positive(options.tokens, 'tokens') };
  }
  const paid = plan(options.plan ?? '');
  if (paid === 'free') throw new UsageError('--plan must be a paid plan');
  return { kind: 'plan', plan: paid, days: positive(required(options, 'days'), 'days', 3660) };
}

function presentBatch(batch: RedemptionBatch, used: number) {
  return {
    id: batch.id,
    tokens: batch.tokens,
    plan: batch.plan,
    plan_days: batch.planDays,
    uses_per_code: batch.usesPerCode,
    count: batch.codeCount,
    uses_left: batch.usesPerCode * batch.codeCount - used,
    expires_at: iso(batch.expiresAt),
    note: batch.note,
    created_at: iso(batch.createdAt),
  };
}

async function userByEmail(container: Container, email: string): Promise<User> {
  const user = await container.users.findByEmail(email);
  if (!user) throw new UsageError(`no user with email ${normalizeEmail(email)}`);
  return user;
}

async function userView(container: Container, user: User) {
  const { users, plans } = container;
  return presentUser(user, plans.get(users.effectivePlan(user)), await users.identities(user.id));
}

export async function runAdminCommand(container: Container, argv: string[]): Promise<object> {
  const [command, ...rest] = argv;
  let parsed: { values: Record<string, string | boolean | undefined> };
  try {
    parsed = parseArgs({
      args: joinNegativeValues(rest),
      options: {
        email: { type: 'string' },
        password: { type: 'string' },
        name: { type: 'string' },
        plan: { type: 'string' },
        'bonus-tokens': { type: 'string' },
        expires: { type: 'string' },
        amount: { type: 'string' },
        id: { type: 'string' },
        limit: { type: 'string' },
        offset: { type: 'string' },
        tokens: { type: 'string' },
        days: { type: 'string' },
        uses: { type: 'string' },
        count: { type: 'string' },
        note: { type: 'string' },
        charge: { type: 'string' },
        'telegram-user': { type: 'string' },
      },
      allowPositionals: false,
      strict: true,
    });
  } catch (error) {
    // Unknown options, missing values, stray positionals: bad usage like any other.
    if ((error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS_')) throw new UsageError((error as Error).message);
    throw error;
  }
  const options = parsed.values as Options;
  const { users, db } = container;

  switch (command) {
    case 'create-user': {
      const email = normalizeEmail(required(options, 'email'));
      if (!EmailArg.safeParse(email).success) throw new UsageError('--email must be a valid email address');
      const password = required(options, 'password');
      if (password.length < 8) throw new UsageError('--password must be at least 8 characters');
      if (password.length > 1024) throw new UsageError('--password must be at most 1024 characters');
      const bonus = options['bonus-tokens'] === undefined ? 0 : integer(options['bonus-tokens'], 'bonus-tokens');
      if (bonus < 0) throw new UsageError('--bonus-tokens must not be negative');
      if (await users.findByEmail(email)) throw new UsageError(`a user with email ${email} exists`);
      const passwordHash = await hashPassword(password);
      const user = await db.transaction((em) =>
        users.create(em, {
          name: options.name ?? email.split('@')[0] ?? email,
          email,
          plan: options.plan === undefined ? 'free' : plan(options.plan),
          bonusTokens: bonus,
          identity: { kind: 'email', subject: email, passwordHash },
        }),
      );
      return userView(container, user);
    }
    case 'set-plan': {
      const user = await userByEmail(container, required(options, 'email'));
      let expires: Date | undefined;
      if (options.expires !== undefined) {
        expires = new Date(options.expires);
        if (Number.isNaN(expires.getTime())) throw new UsageError('--expires must be an ISO-8601 date');
      }
      const updated = await users.setPlan(user.id, plan(required(options, 'plan')), expires);
      return userView(container, updated);
    }
    case 'grant-tokens': {
      const user = await userByEmail(container, required(options, 'email'));
      const amount = integer(required(options, 'amount'), 'amount');
      if (amount === 0) throw new UsageError('--amount must not be 0');
      const updated = await users.grantTokens(user.id, amount, 'admin command line');
      return { email: updated.email, ...presentBalance(updated, container.plans.get(users.effectivePlan(updated))) };
    }
    case 'list-users': {
      const limit = options.limit === undefined ? 100 : integer(options.limit, 'limit');
      const offset = options.offset === undefined ? 0 : integer(options.offset, 'offset');
      const [rows, total] = await db.repo(User).findAndCount({ order: { id: 'ASC' }, take: Math.min(Math.max(limit, 1), 1000), skip: Math.max(offset, 0) });
      return { users: await Promise.all(rows.map((u) => userView(container, u))), total };
    }
    case 'ledger': {
      const user = await userByEmail(container, required(options, 'email'));
      const limit = options.limit === undefined ? 50 : integer(options.limit, 'limit');
      const rows = await db.repo(LedgerEntry).find({ where: { userId: user.id }, order: { id: 'DESC' }, take: Math.min(Math.max(limit, 1), 1000) });
      return {
        email: user.email,
        balance: tokenBalance(user),
        items: rows.map((e) => ({
          id: e.id,
          amount: e.amount,
          reason: e.reason,
          generation_id: e.generationId,
          balance_after: e.subscriptionAfter + e.bonusAfter,
          note: e.note,
          created_at: iso(e.createdAt),
        })),
      };
    }
    case 'audit-ledger':
      return auditLedger(container.db);
    case 'create-codes': {
      const created = await container.redemptionCodes.createBatch({
        grant: codeGrant(options),
        count: positive(options.count ?? '1', 'count', MAX_CODES_PER_BATCH),
        usesPerCode: positive(options.uses ?? '1', 'uses'),
        expiresAt: options.expires === undefined ? null : futureDate(options.expires, container.clock()),
        note: options.note ?? null,
      });
      return { batch: presentBatch(created.batch, 0), codes: created.codes };
    }
    case 'list-code-batches': {
      const batches = await db.repo(RedemptionBatch).find({ order: { id: 'ASC' } });
      const used = await db.read<{ batch_id: number | string; used: number | string }>({
        sql: 'SELECT c.batch_id, SUM(b.uses_per_code - c.uses_left) AS used FROM redemption_codes c JOIN redemption_batches b ON b.id = c.batch_id GROUP BY c.batch_id',
      });
      const usedBy = new Map(used.map((u) => [Number(u.batch_id), Number(u.used)]));
      return { batches: batches.map((b) => presentBatch(b, usedBy.get(b.id) ?? 0)) };
    }
    case 'refund-stars': {
      const charge = required(options, 'charge');
      if (charge.length > 200) throw new UsageError('--charge must be at most 200 characters');
      const telegramUser = options['telegram-user'];
      // Telegram user ids go beyond 32 bits.
      if (telegramUser !== undefined && !/^[1-9][0-9]{0,15}$/.test(telegramUser)) throw new UsageError('--telegram-user must be a Telegram user id');
      try {
        return await refundStars(container, charge, telegramUser === undefined ? undefined : Number(telegramUser));
      } catch (error) {
        if (error instanceof StarsCommandError) throw new UsageError(error.message);
        throw error;
      }
    }
    case 'reconcile-stars':
      try {
        return await reconcile(container);
      } catch (error) {
        if (error instanceof StarsCommandError) throw new UsageError(error.message);
        throw error;
      }
    case 'revoke-key': {
      const id = integer(required(options, 'id'), 'id');
      try {
        const key = await container.apiKeys.revokeById(id);
        return { revoked: { id: key.id, name: key.name, prefix: key.prefix, last_four: key.lastFour, user_id: key.userId, created_at: iso(key.createdAt) } };
      } catch (error) {
        if (error instanceof AppError && error.code === 'not_found') throw new UsageError(`no API key with id ${id}`);
        throw error;
      }
    }
    default:
      throw new UsageError(command ? `unknown command ${command}` : 'no command given');
  }
}
