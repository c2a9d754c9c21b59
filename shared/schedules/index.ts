/**
 * Scheduled generations (spec 2.8, 4.11; decisions.md "Other records"). The clock only records a
 * firing (unique per schedule and minute) and enqueues `schedule.run`; the run is an ordinary
 * generation of the owner: priced, limited, held and charged, listed in history with the
 * schedule's id. Refused runs are recorded; five failures in a row pause the schedule.
 */
import { parseExpression } from 'cron-parser';
import { z } from 'zod';
import type { Clock } from '../clock';
import type { Database } from '../db/database';
import { Generation, Schedule, ScheduleFiring, User } from '../db/entities';
import { AppError } from '../errors';
import type { Generations } from '../generation/service';
import { splitRequestBody } from '../generation/input';
import type { Logger } from '../log';
import type { PlanTable } from '../plans';
import type { Queue } from '../queue/types';
import type { Users } from '../accounts/users';
import { isDuplicateKey } from '../db/errors';
import { jobIds } from '../queue/job-ids';

export const MAX_SCHEDULES_PER_USER = 50;
export const MAX_CONSECUTIVE_FAILURES = 5;
/** Firings missed while the clock was down are caught up only this far back (one run each). */
export const CATCH_UP_WINDOW_MS = 3600 * 1000;

export function isValidTimezone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** Five fields (minute hour day-of-month month day-of-week), parseable. */
export function checkCron(cron: string, timezone: string): void {
  if (cron.trim().split(/\s+/).length !== 5) throw AppError.validation('cron', 'must have five fields: minute hour day month weekday');
  try {
    parseExpression(cron, { tz: timezone });
  } catch (error) {
    throw AppError.validation('cron', `is not a valid cron expression (${(error as Error).message})`);
  }
}

export function nextRun(cron: string, timezone: string, after: Date): Date {
  return parseExpression(cron, { tz: timezone, currentDate: after }).next().toDate();
}

/** The latest firing time at or before `at` (and after `notBefore`), if any. */
export function lastFiringBetween(cron: string, timezone: string, notBefore: Date, at: Date): Date | null {
  const expression = parseExpression(cron, { tz: timezone, currentDate: new Date(at.getTime() + 1000) });
  try {
    const previous = expression.prev().toDate();
    return previous.getTime() > notBefore.getTime() ? previous : null;
  } catch {
    return null;
  }
}

export function minuteOf(date: Date): Date {
  return new Date(Math.floor(date.getTime() / 60_000) * 60_000);
}

export const ScheduleInput = z.object({
  name: z.string().trim().min(1, 'must not be empty').max(200),
  cron: z.string().trim().min(1).max(100),
  model: z.string().min(1).max(100),
  prompt: z.string().max(8000).default(''),
  params: z.record(z.string(), z.unknown()).default({}),
  is_active: z.boolean().default(true),
  timezone: z.string().max(64).default('UTC'),
});
export type ScheduleFields = z.infer<typeof ScheduleInput>;


/** Sends a schedule's result to its owner's chat (the bot), when there is one. */
export type ChatRecipient = (generation: Generation, user: User) => Promise<void>;

export class Schedules {
  private chatRecipient: ChatRecipient | undefined;

  /** Registered where a bot token is configured. */
  deliverToChat(recipient: ChatRecipient): void {
    this.chatRecipient = recipient;
  }

  constructor(
    private readonly db: Database,
    private readonly generations: Generations,
    private readonly users: Users,
    private readonly plans: PlanTable,
    private readonly queue: Queue,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  private check(fields: ScheduleFields): void {
    if (!isValidTimezone(fields.timezone)) throw AppError.validation('timezone', 'must be an IANA time zone such as Europe/Berlin');
    checkCron(fields.cron, fields.timezone);
    this.generations.model(fields.model);
  }

  async create(userId: number, fields: ScheduleFields): Promise<Schedule> {
    this.check(fields);
    const now = this.clock();
    return this.db.transaction(async (em) => {
      if ((await em.getRepository(Schedule).countBy({ userId })) >= MAX_SCHEDULES_PER_USER) {
        throw new AppError('limit_reached', { detail: `At most ${MAX_SCHEDULES_PER_USER} schedules per account` });
      }
      const row = em.getRepository(Schedule).create({
        userId,
        name: fields.name,
        cron: fields.cron,
        timezone: fields.timezone,
        model: fields.model,
        prompt: fields.prompt,
        params: JSON.stringify(fields.params),
        isActive: fields.is_active,
        nextRunAt: fields.is_active ? nextRun(fields.cron, fields.timezone, now) : null,
        lastRunAt: null,
        lastGenerationId: null,
        lastError: null,
        consecutiveFailures: 0,
        createdAt: now,
        updatedAt: now,
      });
      const inserted = await em.getRepository(Schedule).insert(row);
      row.id = Number(inserted.identifiers[0]?.id);
      return row;
    });
  }

  list(userId: number): Promise<Schedule[]> {
    return this.db.repo(Schedule).find({ where: { userId }, order: { id: 'ASC' } });
  }

  async get(userId: number, id: number): Promise<Schedule> {
    const row = await this.db.repo(Schedule).findOneBy({ id, userId });
    if (!row) throw new AppError('not_found');
    return row;
  }

  /** PUT merges the given fields (decisions.md). Re-activating clears the failure count. */
  async update(userId: number, id: number, patch: Partial<ScheduleFields>): Promise<Schedule> {
    const current = await this.get(userId, id);
    const merged: ScheduleFields = {
      name: patch.name ?? current.name,
      cron: patch.cron ?? current.cron,
      model: patch.model ?? current.model,
      prompt: patch.prompt ?? current.prompt,
      params: patch.params ?? (JSON.parse(current.params) as Record<string, unknown>),
      is_active: patch.is_active ?? current.isActive,
      timezone: patch.timezone ?? current.timezone,
    };
    this.check(merged);
    const now = this.clock();
    await this.db.transaction((em) =>
      em.getRepository(Schedule).update(
        { id, userId },
        {
          name: merged.name,
          cron: merged.cron,
          model: merged.model,
          prompt: merged.prompt,
          params: JSON.stringify(merged.params),
          isActive: merged.is_active,
          timezone: merged.timezone,
          nextRunAt: merged.is_active ? nextRun(merged.cron, merged.timezone, now) : null,
          ...(patch.is_active === true ? { consecutiveFailures: 0, lastError: null } : {}),
          updatedAt: now,
        },
      ),
    );
    return this.get(userId, id);
  }

  async delete(userId: number, id: number): Promise<void> {
    const deleted = await this.db.transaction(async (em) => (await em.getRepository(Schedule).delete({ id, userId })).affected);
    if (deleted !== 1) throw new AppError('not_found');
  }

  activeSchedules(): Promise<Schedule[]> {
    return this.db.repo(Schedule).find({ where: { isActive: true } });
  }

  /**
   * Records the firing of `scheduleId` at `at` (rounded to the minute) and enqueues its run.
   * False when this minute already fired (another clock process, or a restart).
   */
  async fire(scheduleId: number, at: Date): Promise<boolean> {
    const fireAt = minuteOf(at);
    try {
      await this.db.transaction((em) => em.getRepository(ScheduleFiring).insert({ scheduleId, fireAt, createdAt: this.clock() }));
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
    const stamp = fireAt.toISOString().slice(0, 16);
    await this.queue.enqueue('schedule.run', { scheduleId, fireAt: fireAt.toISOString() }, { jobId: jobIds.scheduleFiring(scheduleId, stamp) });
    return true;
  }

  /** At boot: one catch-up firing per schedule that missed firings within the last hour. */
  async catchUp(): Promise<number> {
    const now = this.clock();
    let fired = 0;
    for (const schedule of await this.activeSchedules()) {
      const notBefore = new Date(Math.max(now.getTime() - CATCH_UP_WINDOW_MS, schedule.createdAt.getTime()));
      const missed = lastFiringBetween(schedule.cron, schedule.timezone, notBefore, now);
      if (missed && (await this.fire(schedule.id, missed))) fired++;
    }
    return fired;
  }

  /** The `schedule.run` job: one generation of the owner, once per firing (idempotency key). */
  async run(scheduleId: number, fireAt: string): Promise<void> {
    const schedule = await this.db.repo(Schedule).findOneBy({ id: scheduleId });
    if (!schedule || !schedule.isActive) return;
    const user = await this.users.findById(schedule.userId);
    if (!user) return;
    const now = this.clock();
    const plan = this.plans.get(this.users.effectivePlan(user));
    const body = { ...(JSON.parse(schedule.params) as Record<string, unknown>), model: schedule.model, ...(schedule.prompt ? { prompt: schedule.prompt } : {}) };
    let error: string | null = null;
    let generationId: number | null = null;
    try {
      const accepted = await this.generations.start({ user, plan }, splitRequestBody(body), {
        source: 'schedule',
        scheduleId,
        idempotencyKey: `schedule-${scheduleId}-${fireAt}`,
        beforeRun: async (generation) => {
          await this.chatRecipient?.(generation, user).catch((e: unknown) => this.log.warn({ err: e, scheduleId }, 'chat delivery not recorded'));
        },
      });
      generationId = accepted.generation.id;
      if (accepted.generation.status === 'failed') error = accepted.generation.error ?? 'The generation failed';
    } catch (e) {
      if (!(e instanceof AppError)) throw e;
      error = e.detail;
    }
    const failures = error ? schedule.consecutiveFailures + 1 : 0;
    const pause = failures >= MAX_CONSECUTIVE_FAILURES;
    await this.db.transaction((em) =>
      em.getRepository(Schedule).update(
        { id: scheduleId },
        {
          lastRunAt: now,
          lastGenerationId: generationId ?? schedule.lastGenerationId,
          lastError: error,
          consecutiveFailures: failures,
          nextRunAt: pause ? null : nextRun(schedule.cron, schedule.timezone, now),
          ...(pause ? { isActive: false } : {}),
          updatedAt: now,
        },
      ),
    );
    if (pause) this.log.warn({ scheduleId }, 'schedule paused after failing 5 times in a row');
  }
}

