/**
 * Plans over time (issue "Assistants, scheduled generations, webhooks and the clock"): monthly
 * refills, expiry of paid plans and file retention. The clock enqueues these jobs; each is
 * idempotent (conditional updates), so two clocks or a redelivered job change nothing twice.
 */
import { LessThanOrEqual, Not } from 'typeorm';
import { addMonths, Clock } from '../clock';
import type { Database } from '../db/database';
import { Generation, User } from '../db/entities';
import type { Logger } from '../log';
import type { PlanTable } from '../plans';
import type { Storage } from '../storage';
import type { Users } from '../accounts/users';
import type { Billing } from '../billing';

const BATCH = 200;

export class Maintenance {
  constructor(
    private readonly db: Database,
    private readonly billing: Pick<Billing, 'change'>,
    private readonly users: Users,
    private readonly plans: PlanTable,
    private readonly storage: Storage,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /**
   * At `next_refill_at` the subscription bucket is reset to the plan's allowance (bonus tokens
   * carry over), once per period, with a ledger row. A user away for months gets one refill.
   */
  async refill(): Promise<number> {
    const now = this.clock();
    const due = await this.db.repo(User).find({ where: { nextRefillAt: LessThanOrEqual(now) }, select: { id: true }, take: BATCH });
    let refilled = 0;
    for (const { id } of due) {
      const done = await this.db.transaction(async (em) => {
        const user = await this.db.lockOne(em, User, id);
        if (!user || user.nextRefillAt.getTime() > now.getTime()) return false;
        let next = user.nextRefillAt;
        let periodStart = user.nextRefillAt;
        while (next.getTime() <= now.getTime()) {
          periodStart = next;
          next = addMonths(next, 1);
        }
        const claimed = await em
          .createQueryBuilder()
          .update(User)
          .set({ nextRefillAt: next, periodStartedAt: periodStart, tokensUsedThisPeriod: 0, updatedAt: now })
          .where('id = :id', { id })
          .andWhere('next_refill_at = :was', { was: this.db.dateParam(user.nextRefillAt) })
          .execute();
        if (claimed.affected !== 1) return false;
        const allowance = this.plans.get(this.users.effectivePlan(user)).tokenLimit;
        const delta = allowance - user.subscriptionTokens;
        if (delta !== 0) {
          await this.billing.change(em, id, { subscriptionDelta: delta, bonusDelta: 0, reason: 'refill', note: `period from ${periodStart.toISOString()}` }, now);
        }
        return true;
      });
      if (done) refilled++;
    }
    if (refilled) this.log.info({ refilled }, 'monthly refills');
    return refilled;
  }

  /** A paid plan past `plan_expires_at` falls back to `free` (a new period with its allowance). */
  async expirePlans(): Promise<number> {
    const now = this.clock();
    const expired = await this.db.repo(User).find({
      where: { plan: Not('free'), planExpiresAt: LessThanOrEqual(now) },
      select: { id: true },
      take: BATCH,
    });
    for (const { id } of expired) await this.users.setPlan(id, 'free');
    if (expired.length) this.log.info({ expired: expired.length }, 'plans expired');
    return expired.length;
  }

  /** Deletes result files older than the owner's plan keeps them; the history rows stay. */
  async applyRetention(): Promise<number> {
    const now = this.clock();
    let removed = 0;
    for (const plan of this.plans.all()) {
      if (plan.retentionDays === null) continue;
      const cutoff = new Date(now.getTime() - plan.retentionDays * 86_400_000);
      const rows = await this.db
        .repo(Generation)
        .createQueryBuilder('g')
        .innerJoin(User, 'u', 'u.id = g.user_id')
        .select(['g.id', 'g.resultKey', 'g.thumbnailKey'])
        .where('u.plan = :plan', { plan: plan.name })
        .andWhere('g.created_at < :cutoff', { cutoff: this.db.dateParam(cutoff) })
        .andWhere('(g.result_key IS NOT NULL OR g.thumbnail_key IS NOT NULL)')
        .take(BATCH)
        .getMany();
      for (const row of rows) {
        await this.db.transaction((em) => em.getRepository(Generation).update({ id: row.id }, { resultKey: null, thumbnailKey: null }));
        for (const key of [row.resultKey, row.thumbnailKey]) if (key) await this.storage.delete(key);
        removed++;
      }
    }
    if (removed) this.log.info({ removed }, 'expired result files removed');
    return removed;
  }
}


export type MaintenanceTask = 'refill' | 'expire' | 'retention';

export function runMaintenance(maintenance: Maintenance, task: MaintenanceTask): Promise<number> {
  switch (task) {
    case 'refill':
      return maintenance.refill();
    case 'expire':
      return maintenance.expirePlans();
    case 'retention':
      return maintenance.applyRetention();
  }
}
