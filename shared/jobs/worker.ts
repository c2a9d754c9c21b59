/**
 * The worker role: processes the job table and keeps pending generations moving. The database is
 * the truth. Every few seconds, rows whose job lease lapsed (their worker died) are queued again,
 * so a killed worker's work resumes within the lease plus one sweep. At start and every minute
 * the full sweep also queues pending asynchronous rows no job has claimed (the job id
 * de-duplicates; an enqueue that failed at acceptance lands here), fails synchronous rows whose
 * request died, and queues webhook deliveries that are due; it also runs whenever the Redis
 * connection is re-established.
 */
import type { Container } from '../container';
import type { Stoppable } from '../lifecycle';
import { instrumentJobs } from './instrument';
import { buildJobTable } from './table';
import { jobIds } from '../queue/job-ids';

export const SWEEP_INTERVAL_MS = 60_000;
export const LAPSED_SWEEP_INTERVAL_MS = 5_000;

/** The full sweep (`lapsedOnly`: only rows whose job lease lapsed). */
export async function sweepPending(container: Container, options: { lapsedOnly?: boolean } = {}): Promise<{ requeued: number; abandoned: number }> {
  const { runner, queue, log } = container;
  const { requeue, abandoned } = await runner.recoverable({ unclaimed: !options.lapsedOnly });
  for (const id of requeue) await queue.enqueue('generation.run', { generationId: id }, { jobId: jobIds.generationRun(id) });
  for (const id of abandoned) await runner.fail(id, { message: 'Interrupted: the service restarted while generating', kind: 'interrupted' });
  if (options.lapsedOnly) return { requeued: requeue.length, abandoned: abandoned.length };
  for (const id of await container.webhooks.due()) {
    const row = await container.webhooks.attemptsOf(id);
    await queue.enqueue('webhook.deliver', { deliveryId: id }, { jobId: jobIds.webhookDelivery(id, row) });
  }
  if (requeue.length || abandoned.length) log.info({ requeued: requeue.length, abandoned: abandoned.length }, 'recovery sweep');
  return { requeued: requeue.length, abandoned: abandoned.length };
}

export async function startWorker(container: Container): Promise<Stoppable> {
  container.queue.startProcessing(instrumentJobs(buildJobTable(container), container.metrics, container.log));
  await sweepPending(container);
  const every = (ms: number, lapsedOnly: boolean): NodeJS.Timeout => {
    const timer = setInterval(() => {
      sweepPending(container, { lapsedOnly }).catch((error: unknown) => container.log.error({ err: error }, 'recovery sweep failed'));
    }, ms);
    timer.unref();
    return timer;
  };
  const timers = [every(SWEEP_INTERVAL_MS, false), every(LAPSED_SWEEP_INTERVAL_MS, true)];
  // Redis came back (perhaps empty, after a restart or a failover): the jobs it lost are pending
  // rows in the database, queued again now rather than at the next minute's sweep.
  const onRedisBack = (): void => {
    sweepPending(container).catch((error: unknown) => container.log.error({ err: error }, 'recovery sweep failed'));
  };
  container.redis?.on('ready', onRedisBack);
  return {
    name: 'worker',
    stop: async () => {
      container.redis?.off('ready', onRedisBack);
      for (const timer of timers) clearInterval(timer);
      await container.queue.close();
    },
  };
}
