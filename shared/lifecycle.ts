/**
 * Process lifecycle for every entry point: load the config (a clear message and exit 1 when it
 * is wrong), start, and on SIGTERM/SIGINT close what was started in reverse order within 25 s.
 *
 * With `workers` (the `web` role's WEB_CONCURRENCY), a process asked for more than one becomes
 * the primary of that many forked workers (node:cluster: they share the listening port, the
 * primary hands out connections) and starts nothing itself: see cluster.ts.
 */
import cluster from 'node:cluster';
import { Config, ConfigError, loadConfig } from './config';
import { runPrimary } from './cluster';
import { createLogger, Logger } from './log';

export const SHUTDOWN_BUDGET_MS = 25_000;

export interface Stoppable {
  name: string;
  stop(): Promise<void>;
}

export async function runProcess(
  role: string,
  env: Record<string, string | undefined>,
  start: (config: Config, log: Logger) => Promise<Stoppable[]>,
  options: { workers?: (config: Config) => number } = {},
): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`gensvc ${role}: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  const workers = options.workers?.(config) ?? 1;
  if (cluster.isPrimary && workers > 1) {
    runPrimary(role, workers, createLogger(config.logLevel).child({ role, primary: true }));
    return;
  }
  const log = createLogger(config.logLevel).child(cluster.isWorker ? { role, worker: cluster.worker?.id } : { role });
  let started: Stoppable[];
  try {
    started = await start(config, log);
  } catch (error) {
    log.fatal({ err: error }, `${role} failed to start`);
    process.stderr.write(`gensvc ${role}: ${(error as Error).message}\n`);
    process.exit(1);
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    const deadline = setTimeout(() => {
      log.error('shutdown took longer than 25 s; exiting');
      process.exit(1);
    }, SHUTDOWN_BUDGET_MS);
    deadline.unref();
    for (const part of [...started].reverse()) {
      try {
        await part.stop();
        log.info({ part: part.name }, 'stopped');
      } catch (error) {
        log.error({ err: error, part: part.name }, 'failed to stop cleanly');
      }
    }
    clearTimeout(deadline);
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}
