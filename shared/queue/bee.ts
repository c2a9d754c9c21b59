/**
 * The Redis queue: one bee-queue queue per job name under `<prefix>:bq`. Job ids de-duplicate
 * (bee-queue will not add an id it still holds); stalled jobs of a dead worker are picked up
 * again by stall detection.
 */
import type BeeQueue from 'bee-queue';
import { RecoveringBeeQueue } from './recovering-bee';
import type { Logger } from '../log';
import { outsideLogContext, runWithLogContext } from '../observability/context';
import { jobSettings } from './settings';
import { jobLogContext, withTrace } from './trace';
import type { EnqueueOptions, JobName, JobPayloads, JobTable, Queue, QueueDepth } from './types';

type Payload = JobPayloads[JobName];

export const STALL_INTERVAL_MS = 5_000;

export class BeeQueueBackend implements Queue {
  readonly kind = 'redis' as const;
  private readonly queues = new Map<JobName, BeeQueue<Payload>>();
  private readonly controllers = new Set<AbortController>();
  private processing = false;

  constructor(
    private readonly redisUrl: string,
    private readonly prefix: string,
    private readonly log: Logger,
    private readonly isWorker: boolean,
  ) {}

  private queue(name: JobName): BeeQueue<Payload> {
    let queue = this.queues.get(name);
    if (!queue) {
      // Its connections outlive the request that may open it: their log lines are no request's.
      queue = outsideLogContext(() => new RecoveringBeeQueue<Payload>(name, {
        prefix: `${this.prefix}:bq`,
        redis: { url: this.redisUrl },
        isWorker: this.isWorker,
        getEvents: false,
        sendEvents: false,
        activateDelayedJobs: this.isWorker,
        removeOnSuccess: true,
        removeOnFailure: true,
        stallInterval: STALL_INTERVAL_MS,
      }));
      queue.on('error', (error: Error) => this.log.warn({ queue: name, err: error.message }, 'queue error'));
      this.queues.set(name, queue);
    }
    return queue;
  }

  async enqueue<N extends JobName>(name: N, payload: JobPayloads[N], options: EnqueueOptions = {}): Promise<void> {
    const settings = jobSettings[name];
    const job = this.queue(name)
      .createJob(withTrace(payload, options.delayMs))
      .retries(settings.retries)
      .backoff('exponential', settings.backoffMs)
      .timeout(settings.timeoutMs);
    if (options.jobId) job.setId(options.jobId);
    if (options.delayMs && options.delayMs > 0) job.delayUntil(Date.now() + options.delayMs);
    await job.save();
  }

  startProcessing(table: JobTable): void {
    if (!this.isWorker) throw new Error('this queue was opened as a producer only');
    this.processing = true;
    for (const name of Object.keys(table) as JobName[]) {
      const definition = table[name] as JobTable[JobName];
      const queue = this.queue(name);
      void queue.checkStalledJobs(STALL_INTERVAL_MS);
      queue.process(definition.concurrency, (job) => runWithLogContext(jobLogContext(name, job.data), async () => {
        const controller = new AbortController();
        this.controllers.add(controller);
        const timer = setTimeout(() => controller.abort(new Error(`job ${name} timed out`)), definition.timeoutMs);
        // bee-queue counts retries down in options.retries; the attempt number follows from it.
        const remaining = Number((job.options as { retries?: number }).retries ?? 0);
        const attempt = definition.retries - remaining + 1;
        try {
          await (definition.perform as (p: Payload, c: { signal: AbortSignal; attempt: number; finalAttempt: boolean }) => Promise<void>)(
            job.data,
            { signal: controller.signal, attempt, finalAttempt: remaining <= 0 },
          );
        } catch (error) {
          if (remaining <= 0) {
            await (definition.onExhausted as ((p: Payload, e: Error) => Promise<void>) | undefined)?.(job.data, error as Error).catch(
              (e: unknown) => this.log.error({ job: name, err: (e as Error).message }, 'onExhausted failed'),
            );
          } else {
            this.log.warn({ job: name, attempt, err: (error as Error).message }, 'job failed; retrying');
          }
          throw error;
        } finally {
          clearTimeout(timer);
          this.controllers.delete(controller);
        }
      }));
    }
  }

  async depth(): Promise<QueueDepth[]> {
    return Promise.all(
      [...this.queues].map(async ([queue, bee]) => {
        const health = await bee.checkHealth();
        return { queue, waiting: health.waiting, delayed: health.delayed };
      }),
    );
  }

  async close(): Promise<void> {
    const queues = [...this.queues.values()];
    await Promise.all(queues.map((q) => q.close(this.processing ? 20_000 : 2_000).catch(() => undefined)));
    for (const controller of this.controllers) controller.abort(new Error('worker shutting down'));
  }
}
