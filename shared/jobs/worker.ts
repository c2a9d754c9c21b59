/**
 * The worker role: processes the job table and keeps pending generations moving. The database is
 * the truth: at start and every minute, pending asynchronous rows without a live lease are
 * enqueued again (the job id de-duplicates), and synchronous rows whose request died are failed.
 */
import type { Container } from '../container';
import type { Stoppable } from '../lifecycle';
import { buildJobTable } from './table';
import { jobIds } from '../queue/job-ids';

export const SWEEP_INTERVAL_MS = 60_000;

export async function sweepPending(container: Container): Promise<{ requeued: number; abandoned: number }> {
  const { runner, queue, log } = container;
  const { requeue, abandoned } = await runner.recoverable();
  for (const id of requeue) await queue.enqueue('generation.run', { generationId: id }, { jobId: jobIds.generationRun(id) });
  for (const id of abandoned) await runner.fail(id, 'Interrupted: the service restarted while generating');
  for (const id of await container.webhooks.due()) {
    const row = await container.webhooks.attemptsOf(id);
    await queue.enqueue('webhook.deliver', { deliveryId: id }, { jobId: jobIds.webhookDelivery(id, row) });
  }
  if (requeue.length || abandoned.length) log.info({ requeued: requeue.length, abandoned: abandoned.length }, 'recovery sweep');
  return { requeued: requeue.length, abandoned: abandoned.length };
}

export async function startWorker(container: Container): Promise<Stoppable> {
  container.queue.startProcessing(buildJobTable(container));
  await sweepPending(container);
  const timer = setInterval(() => {
    sweepPending(container).catch((error: unknown) => container.log.error({ err: error }, 'recovery sweep failed'));
  }, SWEEP_INTERVAL_MS);
  timer.unref();
  return {
    name: 'worker',
    stop: async () => {
      clearInterval(timer);
      await container.queue.close();
    },
  };
}
