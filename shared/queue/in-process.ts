/**
 * The embedded queue: jobs run in this process with the semantics of the Redis one (per-name
 * concurrency, retries with exponential backoff, timeouts, de-duplication by job id). Jobs
 * enqueued before `startProcessing` wait for it. Nothing survives a restart: the worker's
 * recovery sweep re-enqueues pending generations from the database at boot.
 */
import type { Logger } from '../log';
import { runWithLogContext } from '../observability/context';
import { jobSettings } from './settings';
import { jobLogContext, withTrace } from './trace';
import type { EnqueueOptions, JobDefinition, JobName, JobPayloads, JobTable, Queue, QueueDepth } from './types';

interface Entry {
  name: JobName;
  payload: JobPayloads[JobName];
  jobId: string | undefined;
  attempt: number;
}

export class InProcessQueue implements Queue {
  readonly kind = 'in-process' as const;
  private table: JobTable | undefined;
  private readonly waiting: Entry[] = [];
  private readonly running = new Map<JobName, number>();
  private readonly knownIds = new Set<string>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly controllers = new Set<AbortController>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly delayed = new Map<JobName, number>();
  private closed = false;

  constructor(private readonly log: Logger) {}

  async enqueue<N extends JobName>(name: N, payload: JobPayloads[N], options: EnqueueOptions = {}): Promise<void> {
    if (this.closed) throw new Error('queue is closed');
    if (options.jobId !== undefined) {
      if (this.knownIds.has(options.jobId)) return;
      this.knownIds.add(options.jobId);
    }
    const entry: Entry = { name, payload: withTrace(payload, options.delayMs), jobId: options.jobId, attempt: 1 };
    if (options.delayMs && options.delayMs > 0) this.later(entry, options.delayMs);
    else this.waiting.push(entry);
    this.pump();
  }

  startProcessing(table: JobTable): void {
    this.table = table;
    this.pump();
  }

  async depth(): Promise<QueueDepth[]> {
    return (Object.keys(jobSettings) as JobName[]).map((queue) => ({
      queue,
      waiting: this.waiting.filter((entry) => entry.name === queue).length,
      delayed: this.delayed.get(queue) ?? 0,
    }));
  }

  private later(entry: Entry, delayMs: number): void {
    this.delayed.set(entry.name, (this.delayed.get(entry.name) ?? 0) + 1);
    const timer = setTimeout(() => {
      this.delayed.set(entry.name, (this.delayed.get(entry.name) ?? 1) - 1);
      this.timers.delete(timer);
      this.waiting.push(entry);
      this.pump();
    }, delayMs);
    this.timers.add(timer);
  }

  private pump(): void {
    if (!this.table || this.closed) return;
    for (let i = 0; i < this.waiting.length; ) {
      const entry = this.waiting[i] as Entry;
      const busy = this.running.get(entry.name) ?? 0;
      if (busy >= this.table[entry.name].concurrency) {
        i++;
        continue;
      }
      this.waiting.splice(i, 1);
      this.running.set(entry.name, busy + 1);
      // Under the context the job travelled with, not that of whoever happened to pump.
      const run = runWithLogContext(jobLogContext(entry.name, entry.payload), () => this.run(entry)).finally(() => {
        this.inFlight.delete(run);
        this.running.set(entry.name, (this.running.get(entry.name) ?? 1) - 1);
        this.pump();
      });
      this.inFlight.add(run);
    }
  }

  private async run(entry: Entry): Promise<void> {
    const table = this.table as JobTable;
    // The entry's payload was typed by its name at enqueue; here the pairing is erased.
    const definition = table[entry.name] as unknown as JobDefinition<JobPayloads[JobName]>;
    const controller = new AbortController();
    this.controllers.add(controller);
    const timer = setTimeout(() => controller.abort(new Error(`job ${entry.name} timed out`)), definition.timeoutMs);
    try {
      await Promise.race([
        definition.perform(entry.payload, {
          signal: controller.signal,
          attempt: entry.attempt,
          finalAttempt: entry.attempt > definition.retries,
        }),
        new Promise<never>((_, reject) => {
          controller.signal.addEventListener('abort', () => reject(controller.signal.reason as Error), { once: true });
        }),
      ]);
      if (entry.jobId) this.knownIds.delete(entry.jobId);
    } catch (error) {
      if (entry.attempt <= definition.retries && !this.closed) {
        const delay = definition.backoffMs * 2 ** (entry.attempt - 1);
        this.log.warn({ job: entry.name, attempt: entry.attempt, err: (error as Error).message }, 'job failed; retrying');
        this.later({ ...entry, attempt: entry.attempt + 1 }, delay);
      } else {
        if (entry.jobId) this.knownIds.delete(entry.jobId);
        this.log.error({ job: entry.name, attempt: entry.attempt, err: (error as Error).message }, 'job failed');
        await definition.onExhausted?.(entry.payload, error as Error).catch((e: unknown) => {
          this.log.error({ job: entry.name, err: (e as Error).message }, 'onExhausted failed');
        });
      }
    } finally {
      clearTimeout(timer);
      this.controllers.delete(controller);
    }
  }

  /** Waits until nothing is queued or running (tests and benchmarks). */
  async drain(): Promise<void> {
    while (this.waiting.length > 0 || this.inFlight.size > 0 || this.timers.size > 0) {
      await Promise.race([...this.inFlight, new Promise((r) => setTimeout(r, 10))]);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.delayed.clear();
    const deadline = new Promise((r) => setTimeout(r, 10_000).unref());
    await Promise.race([Promise.allSettled([...this.inFlight]), deadline]);
    for (const controller of this.controllers) controller.abort(new Error('worker shutting down'));
  }
}
