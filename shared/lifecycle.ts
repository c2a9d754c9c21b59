/**
 * Process lifecycle for every entry point: load the config (a clear message and exit 1 when it
 * is wrong), start, and on SIGTERM/SIGINT close what was started in reverse order within 25 s.
 * It owns the process's metrics and readiness: GET /ready answers 503 until the roles have
 * started and again from SIGTERM on, and in a process without the API (worker, clock, bot) it
 * serves the metrics on METRICS_PORT when that is set.
 *
 * With `workers` (the `web` role's WEB_CONCURRENCY), a process asked for more than one becomes
 * the primary of that many forked workers (node:cluster: they share the listening port, the
 * primary hands out connections) and starts nothing itself: see cluster.ts.
 */
import cluster from 'node:cluster';
import { Config, ConfigError, loadConfig } from './config';
import { runPrimary } from './cluster';
import { createLogger, Logger } from './log';
import { Metrics } from './observability/metrics';
import { startMetricsServer } from './observability/metrics-server';
import { Readiness } from './observability/readiness';

export const SHUTDOWN_BUDGET_MS = 25_000;

export interface Stoppable {
  name: string;
  stop(): Promise<void>;
}

/** What the lifecycle hands the role: to pass to buildContainer. */
export interface ProcessInstruments {
  metrics: Metrics;
  readiness: Readiness;
}

/** Roles that serve the API, and with it GET /metrics on PORT. */
const API_ROLES = new Set(['web', 'all']);

export async function runProcess(
  role: string,
  env: Record<string, string | undefined>,
  start: (config: Config, log: Logger, instruments: ProcessInstruments) => Promise<Stoppable[]>,
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
  const instruments: ProcessInstruments = { metrics: new Metrics(), readiness: new Readiness(false) };
  let started: Stoppable[];
  try {
    started = await start(config, log, instruments);
    const { port, token } = config.metrics;
    if (port !== undefined && token !== undefined && !API_ROLES.has(role)) {
      const server = await startMetricsServer(instruments.metrics, { port, token });
      log.info({ port: server.port }, 'metrics listening');
      // First in the list: stopped last, so the drain can still be watched.
      started = [{ name: 'metrics', stop: () => server.close() }, ...started];
    }
    instruments.readiness.markStarted();
  } catch (error) {
    log.fatal({ err: error }, `${role} failed to start`);
    process.stderr.write(`gensvc ${role}: ${(error as Error).message}\n`);
    process.exit(1);
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    instruments.readiness.markDraining();
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
