/**
 * Accounts: creation (with the plan's allowance as the first ledger row), profile and settings,
 * plan changes, token grants and deletion. Every balance change writes a ledger row.
 */
import type { EntityManager } from 'typeorm';
import { addDays, addMonths, Clock } from '../clock';
import type { Database } from '../db/database';
import { ApiKey, Identity, IdentityKind, LedgerEntry, LedgerReason, Payment, StripeEvent, User } from '../db/entities';
import { AppError } from '../errors';
import { PlanName, PlanTable } from '../plans';
import { Billing, splitTakeBack } from '../billing';
import type { AccountChanges } from '../auth/account-changes';

export interface NewUser {
  name: string;
  email?: string | null;
  messengerUsername?: string | null;
  avatarUrl?: string | null;
  plan?: PlanName;
  planExpiresAt?: Date | null;
  bonusTokens?: number;
  identity: { kind: IdentityKind; subject: string; passwordHash?: string | null };
}

export interface SettingsPatch {
  language?: string;
  imageFormat?: string;
  notificationsEnabled?: boolean;
  defaultImageSize?: string;
}

/** A paid plan set without an expiry lasts this long (decisions.md "Plans"). */
export const DEFAULT_PLAN_DAYS = 30;

export class Users {
  constructor(
    private readonly db: Database,
    private readonly billing: Pick<Billing, 'change' | 'balanceOf'>,
    private readonly plans: PlanTable,
    private readonly clock: Clock,
    private readonly changes?: AccountChanges,
  ) {}

  /**
   * Once `em`'s transaction commits, every process hears that the account changed (caches of
   * who owns an API key drop it): a plan moved, its expiry, the profile or settings, deletion.
   */
  changed(em: EntityManager, userId: number): void {
    const changes = this.changes;
    if (changes) this.db.afterCommit(em, () => void changes.announce(userId));
  }

  /** The plan in force: a paid plan past its expiry counts as `free` until the clock job moves it. */
  effectivePlan(user: Pick<User, 'plan' | 'planExpiresAt'>): PlanName {
    if (user.plan !== 'free' && user.planExpiresAt && user.planExpiresAt.getTime() <= this.clock().getTime()) {
      return 'free';
    }
    return user.plan;
  }

  /** Creates the user, its first identity and the allowance ledger row, inside `em`'s transaction. */
  async create(em: EntityManager, input: NewUser): Promise<User> {
    const now = this.clock();
    const plan = input.plan ?? 'free';
    const allowance = this.plans.get(plan).tokenLimit;
    const users = em.getRepository(User);
    const user = await users.save(
      users.create({
        name: input.name,
        email: input.email ?? null,
        avatarUrl: input.avatarUrl ?? null,
        messengerUsername: input.messengerUsername ?? null,
        plan,
        planExpiresAt: plan === 'free' ? null : (input.planExpiresAt ?? addDays(now, DEFAULT_PLAN_DAYS)),
        subscriptionTokens: 0,
        bonusTokens: 0,
        heldTokens: 0,
        tokensUsedThisPeriod: 0,
        periodStartedAt: now,
        nextRefillAt: addMonths(now, 1),
        language: 'en',
        imageFormat: 'webp',
        notificationsEnabled: true,
        defaultImageSize: '1024x1024',
        createdAt: now,
        updatedAt: now,
      }),
    );
    await em.getRepository(Identity).save(
      em.getRepository(Identity).create({
        userId: user.id,
        kind: input.identity.kind,
        subject: input.identity.subject,
        passwordHash: input.identity.passwordHash ?? null,
        createdAt: now,
      }),
    );
    if (allowance > 0) {
      await this.billing.change(em, user.id, { subscriptionDelta: allowance, bonusDelta: 0, reason: 'signup_allowance' }, now);
    }
    if (input.bonusTokens && input.bonusTokens > 0) {
      await this.billing.change(em, user.id, { subscriptionDelta: 0, bonusDelta: input.bonusTokens, reason: 'grant' }, now);
    }
    return em.getRepository(User).findOneByOrFail({ id: user.id });
  }

  async findById(id: number): Promise<User | null> {
    return this.db.repo(User).findOneBy({ id });
  }

  /** Subscription plus bonus tokens, read with one indexed statement (responses carry it often). */
  async balanceOf(id: number): Promise<number | null> {
    return this.billing.balanceOf(id);
  }

  async getById(id: number): Promise<User> {
    const user = await this.findById(id);
    if (!user) throw new AppError('not_found');
    return user;
  }

  async findByEmail(email: string): Promise<User | null> {
    return this.db.repo(User).findOneBy({ email: email.trim().toLowerCase() });
  }

  async identities(userId: number): Promise<Identity[]> {
    return this.db.repo(Identity).findBy({ userId });
  }

  async updateProfile(userId: number, patch: { name?: string; avatarUrl?: string | null }): Promise<User> {
    return this.db.transaction(async (em) => {
      const set: Partial<User> = { updatedAt: this.clock() };
      if (patch.name !== undefined) set.name = patch.name;
      if (patch.avatarUrl !== undefined) set.avatarUrl = patch.avatarUrl;
      await em.getRepository(User).update({ id: userId }, set);
      this.changed(em, userId);
      return em.getRepository(User).findOneByOrFail({ id: userId });
    });
  }

  async updateSettings(userId: number, patch: SettingsPatch): Promise<User> {
    return this.db.transaction(async (em) => {
      await em.getRepository(User).update({ id: userId }, { ...patch, updatedAt: this.clock() });
      this.changed(em, userId);
      return em.getRepository(User).findOneByOrFail({ id: userId });
    });
  }

  /**
   * Moves the account to `plan`: a new period begins with the new allowance (a ledger row for the
   * difference), bonus tokens stay. A paid plan without `expiresAt` lasts 30 days.
   */
  async setPlan(userId: number, plan: PlanName, expiresAt?: Date | null): Promise<User> {
    return this.db.transaction(async (em) => {
      const user = await this.db.lockOne(em, User, userId);
      if (!user) throw new AppError('not_found');
      await this.movePlan(em, user, plan, expiresAt ?? null, { reason: 'plan_change', note: `${user.plan} -> ${plan}` }, this.clock());
      return em.getRepository(User).findOneByOrFail({ id: userId });
    });
  }

  /**
   * `setPlan` inside the caller's transaction, on the user row it locked (a payment starts or ends
   * a plan beside its own rows): a new period with the plan's allowance, the difference one ledger
   * row written as `entry` says. With `recordEvenIfNothingMoves`, the row is written when the
   * allowance difference is 0 too (a payment is always on the ledger); `subscriptionAfter` sets
   * the subscription bucket to something other than the allowance (a refund never adds tokens).
   */
  async movePlan(
    em: EntityManager,
    user: User,
    plan: PlanName,
    expiresAt: Date | null,
    entry: { reason: LedgerReason; note: string; recordEvenIfNothingMoves?: boolean; subscriptionAfter?: number },
    now: Date,
  ): Promise<void> {
    const allowance = entry.subscriptionAfter ?? this.plans.get(plan).tokenLimit;
    await em.getRepository(User).update(
      { id: user.id },
      {
        plan,
        planExpiresAt: plan === 'free' ? null : (expiresAt ?? addDays(now, DEFAULT_PLAN_DAYS)),
        periodStartedAt: now,
        nextRefillAt: addMonths(now, 1),
        tokensUsedThisPeriod: 0,
        updatedAt: now,
      },
    );
    this.changed(em, user.id);
    const delta = allowance - user.subscriptionTokens;
    if (delta !== 0 || entry.recordEvenIfNothingMoves) {
      const changed = await this.billing.change(em, user.id, { subscriptionDelta: delta, bonusDelta: 0, reason: entry.reason, note: entry.note }, now);
      if (!changed) throw new Error('plan change could not be applied');
    }
  }

  /**
   * Adds bonus tokens, or for a negative amount takes them back: bonus tokens first, then
   * subscription tokens, never below zero (and never below what pending generations hold).
   */
  async grantTokens(userId: number, amount: number, note?: string): Promise<User> {
    if (!Number.isInteger(amount) || amount === 0) throw AppError.validation('amount', 'must be a non-zero integer');
    return this.db.transaction(async (em) => {
      const user = await this.db.lockOne(em, User, userId);
      if (!user) throw new AppError('not_found');
      const now = this.clock();
      if (amount > 0) {
        await this.billing.change(em, userId, { subscriptionDelta: 0, bonusDelta: amount, reason: 'grant', note }, now);
      } else {
        const { fromBonus, fromSubscription } = splitTakeBack(-amount, user);
        if (fromBonus + fromSubscription > 0) {
          const entry = await this.billing.change(
            em,
            userId,
            { subscriptionDelta: -fromSubscription, bonusDelta: -fromBonus, reason: 'correction', note },
            now,
          );
          if (!entry) throw new Error('correction could not be applied');
        }
      }
      return em.getRepository(User).findOneByOrFail({ id: userId });
    });
  }

  /** Removes the account and everything it owns; its ledger rows stay, without the user id. */
  async delete(userId: number): Promise<void> {
    await this.db.transaction(async (em) => {
      await em.getRepository(LedgerEntry).update({ userId }, { userId: null });
      // Payments stay too (they are the record of money taken), anonymised like the ledger.
      await em.getRepository(Payment).update({ userId }, { userId: null });
      await em.getRepository(StripeEvent).update({ userId }, { userId: null });
      await em.getRepository(ApiKey).delete({ userId });
      await em.getRepository(User).delete({ id: userId });
      this.changed(em, userId);
    });
  }
}
