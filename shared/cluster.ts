/**
 * The primary of a role that runs as several worker processes (the `web` role's
 * WEB_CONCURRENCY): forks them (node:cluster; each worker runs the role's entry point as a
 * single process would, and they share its listening port), and starts nothing itself.
 *
 * - A worker that dies after it was listening is forked again (a crash costs one process's
 *   requests in flight, not the dyno). One that dies before it ever listened means the role
 *   cannot start (the database unreachable, the port taken): the primary stops the others and
 *   exits 1, as the single process would have.
 * - SIGTERM/SIGINT: passed on to every worker, which closes what it started as any process does
 *   (lifecycle.ts); the primary exits 0 once all have exited, or 1 past the same 25 s budget.
 */
import cluster, { Worker } from 'node:cluster';
import type { Logger } from './log';

/** What each worker gets beside the primary's own budget: the primary outlives its workers' shutdown. */
const PRIMARY_SHUTDOWN_BUDGET_MS = 27_000;
/** A crashed worker is forked again after this pause (a tight crash loop would starve the others). */
const REFORK_DELAY_MS = 1_000;

export function runPrimary(role: string, count: number, log: Logger): void {
  let stopping = false;
  /** 0 for a requested shutdown, 1 when a worker could not start. */
  let exitCode = 0;
  const listened = new WeakSet<Worker>();
  const fork = (): void => {
    const worker = cluster.fork();
    worker.once('listening', () => listened.add(worker));
  };

  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) {
        log.info('every worker stopped');
        process.exit(exitCode);
      }
      return;
    }
    if (!listened.has(worker)) {
      log.fatal({ worker: worker.id, code, signal }, `a ${role} worker exited before it listened; stopping`);
      stopAll('startup failure', 1);
      return;
    }
    log.error({ worker: worker.id, code, signal }, `a ${role} worker died; forking another`);
    setTimeout(() => {
      if (!stopping) fork();
    }, REFORK_DELAY_MS);
  });

  const stopAll = (reason: string, code: number): void => {
    if (stopping) return;
    stopping = true;
    exitCode = code;
    log.info({ reason }, 'stopping the workers');
    const deadline = setTimeout(() => {
      log.error('the workers took longer than their shutdown budget; exiting');
      process.exit(1);
    }, PRIMARY_SHUTDOWN_BUDGET_MS);
    deadline.unref();
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    if (workers.length === 0) process.exit(exitCode);
    for (const worker of workers) worker.process.kill('SIGTERM');
  };

  process.on('SIGTERM', () => stopAll('SIGTERM', 0));
  process.on('SIGINT', () => stopAll('SIGINT', 0));
  log.info({ workers: count }, `${role}: forking ${count} workers`);
  for (let i = 0; i < count; i++) fork();
}
