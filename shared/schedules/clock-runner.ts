/**
 * The clock role: keeps a node-schedule job per active schedule, picks up changes made by any
 * web process by polling `updated_at` every few seconds, and on each firing only records the
 * firing and enqueues (Schedules.fire). At start it catches up missed firings of the last hour.
 */
import schedule from 'node-schedule';
import { MoreThanOrEqual } from 'typeorm';
import type { Database } from '../db/database';
import { Schedule } from '../db/entities';
import type { Stoppable } from '../lifecycle';
import type { Logger } from '../log';
import type { Queue } from '../queue/types';
import type { Schedules } from './index';
import { jobIds } from '../queue/job-ids';

/** Plan upkeep the clock enqueues: refills and expiries every minute, retention daily. */
const MAINTENANCE: Array<{ task: 'refill' | 'expire' | 'retention'; rule: string }> = [
  { task: 'refill', rule: '* * * * *' },
  { task: 'expire', rule: '* * * * *' },
  { task: 'retention', rule: '17 3 * * *' },
];

export const CHANGE_POLL_MS = 3_000;

export class ClockRunner implements Stoppable {
  readonly name = 'clock';
  private readonly jobs = new Map<number, schedule.Job>();
  private readonly fingerprints = new Map<number, string>();
  private lastSeen = new Date(0);
  private poller: NodeJS.Timeout | undefined;

  private readonly upkeep: schedule.Job[] = [];

  constructor(
    private readonly schedules: Schedules,
    private readonly db: Database,
    private readonly log: Logger,
    private readonly queue?: Queue,
  ) {}

  private place(row: Schedule): void {
    const fingerprint = `${row.isActive}|${row.cron}|${row.timezone}`;
    if (this.fingerprints.get(row.id) === fingerprint) return;
    this.jobs.get(row.id)?.cancel();
    this.jobs.delete(row.id);
    this.fingerprints.set(row.id, fingerprint);
    if (!row.isActive) return;
    const job = schedule.scheduleJob({ rule: row.cron, tz: row.timezone }, (fireDate: Date) => {
      this.schedules.fire(row.id, fireDate).catch((error: unknown) => this.log.error({ err: error, scheduleId: row.id }, 'firing failed'));
    });
    if (job) this.jobs.set(row.id, job);
    else this.log.warn({ scheduleId: row.id, cron: row.cron }, 'schedule could not be placed');
  }

  /** Loads changes since the last look (all rows the first time) and drops deleted schedules. */
  async refresh(): Promise<void> {
    const changed = await this.db.repo(Schedule).find({ where: { updatedAt: MoreThanOrEqual(this.lastSeen) } });
    for (const row of changed) {
      this.place(row);
      if (row.updatedAt > this.lastSeen) this.lastSeen = row.updatedAt;
    }
    const ids = new Set((await this.db.repo(Schedule).find({ select: { id: true } })).map((r) => r.id));
    for (const id of [...this.jobs.keys()]) {
      if (!ids.has(id)) {
        this.jobs.get(id)?.cancel();
        this.jobs.delete(id);
        this.fingerprints.delete(id);
      }
    }
  }

  async start(): Promise<void> {
    await this.refresh();
    const caught = await this.schedules.catchUp();
    if (caught) this.log.info({ caught }, 'caught up missed schedule firings');
    this.poller = setInterval(() => {
      this.refresh().catch((error: unknown) => this.log.error({ err: error }, 'schedule refresh failed'));
    }, CHANGE_POLL_MS);
    this.poller.unref();
    const queue = this.queue;
    if (queue) {
      for (const { task, rule } of MAINTENANCE) {
        const job = schedule.scheduleJob({ rule, tz: 'UTC' }, (fireDate: Date) => {
          // One job per firing: a second clock enqueueing the same minute is de-duplicated.
          const jobId = jobIds.maintenance(task, fireDate.toISOString().slice(0, 16));
          queue.enqueue('maintenance.run', { task }, { jobId }).catch((error: unknown) => this.log.error({ err: error, task }, 'maintenance enqueue failed'));
        });
        if (job) this.upkeep.push(job);
      }
    }
    this.log.info({ schedules: this.jobs.size }, 'clock running');
  }

  async stop(): Promise<void> {
    if (this.poller) clearInterval(this.poller);
    for (const job of this.jobs.values()) job.cancel();
    this.jobs.clear();
    for (const job of this.upkeep) job.cancel();
    this.upkeep.length = 0;
  }

  /** Active schedules currently placed (tests). */
  placed(): number[] {
    return [...this.jobs.keys()];
  }
}
