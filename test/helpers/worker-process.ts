/**
 * A worker (or, with ROLE=web, a web) process for crash and chaos tests: the real role with the
 * fake provider. FAKE_FIRST=hang makes its first call hang (so a test can kill the process
 * mid-job); FAKE_DELAY_MS makes every call take that long.
 */
import { startHttpServer } from '../../api/server';
import { loadConfig } from '../../shared/config';
import { buildContainer } from '../../shared/container';
import { startWorker } from '../../shared/jobs/worker';
import { startMetricsServer } from '../../shared/observability/metrics-server';
import { FakeProvider } from './fake-provider';

async function main(): Promise<void> {
  const fake = new FakeProvider('fake');
  if (process.env.FAKE_FIRST === 'hang') fake.next({ kind: 'hang' });
  const delayMs = Number(process.env.FAKE_DELAY_MS ?? 0);
  if (delayMs > 0) fake.next(...Array.from({ length: 10_000 }, () => ({ kind: 'succeed' as const, delayMs })));
  const config = loadConfig(process.env);
  const role = process.env.ROLE ?? 'worker';
  const container = await buildContainer(config, { providers: [fake.adapter()], processesJobs: role === 'worker' });
  if (role === 'web') {
    await startHttpServer(container, config.port);
    process.stdout.write('web-ready\n');
    return;
  }
  await startWorker(container);
  // The bench reads each worker's queue wait from its metrics (METRICS_PORT + METRICS_TOKEN).
  if (config.metrics.port !== undefined && config.metrics.token) await startMetricsServer(container.metrics, { port: config.metrics.port, token: config.metrics.token });
  process.stdout.write('worker-ready\n');
  // Report each provider call so the test knows the job is running.
  const timer = setInterval(() => {
    if (fake.calls.length > 0) {
      process.stdout.write(`calls:${fake.calls.length}\n`);
      clearInterval(timer);
    }
  }, 20);
}

main().catch((error: unknown) => {
  process.stderr.write(`${String((error as Error).stack ?? error)}\n`);
  process.exit(1);
});
