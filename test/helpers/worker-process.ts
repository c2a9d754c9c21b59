/**
 * A worker process for crash tests: the real worker role with the fake provider, whose first
 * call hangs when FAKE_FIRST=hang (so the test can kill the process mid-job).
 */
import { loadConfig } from '../../shared/config';
import { buildContainer } from '../../shared/container';
import { startWorker } from '../../shared/jobs/worker';
import { FakeProvider } from './fake-provider';

async function main(): Promise<void> {
  const fake = new FakeProvider('fake');
  if (process.env.FAKE_FIRST === 'hang') fake.next({ kind: 'hang' });
  const config = loadConfig(process.env);
  const container = await buildContainer(config, { providers: [fake.adapter()], processesJobs: true });
  await startWorker(container);
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
