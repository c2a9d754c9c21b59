/**
 * The job table as the worker runs it: each `perform` gets its payload without the `$trace` the
 * queue carried (queue/trace.ts), and each run is counted: how long it waited once due (first
 * attempts), how many run at once, how long each took and how it ended.
 */
import type { Logger } from '../log';
import type { Metrics } from '../observability/metrics';
import { splitTrace } from '../queue/trace';
import type { JobDefinition, JobName, JobPayloads, JobTable } from '../queue/types';

interface Instruments {
  metrics: Metrics;
  log: Logger;
  now: () => number;
}

function instrumented<P extends object>(queue: JobName, definition: JobDefinition<P>, { metrics, log, now }: Instruments): JobDefinition<P> {
  return {
    ...definition,
    perform: async (data, context) => {
      const { payload, trace } = splitTrace(data);
      const waited = context.attempt === 1 && trace ? (now() - trace.dueAt) / 1000 : null;
      const ended = metrics.jobStarted(queue, waited);
      const startedAt = now();
      try {
        await definition.perform(payload, context);
        ended('completed');
        // The line the job's request id is found by (the queue's context carries it).
        log.debug({ attempt: context.attempt, ms: now() - startedAt }, 'job done');
      } catch (error) {
        ended(context.finalAttempt ? 'failed' : 'retried');
        throw error;
      }
    },
    onExhausted: definition.onExhausted ? (data, error) => (definition.onExhausted as NonNullable<typeof definition.onExhausted>)(splitTrace(data).payload, error) : undefined,
  };
}

export function instrumentJobs(table: JobTable, metrics: Metrics, log: Logger, now: () => number = Date.now): JobTable {
  const wrapped: Partial<Record<JobName, JobDefinition<JobPayloads[JobName]>>> = {};
  for (const name of Object.keys(table) as JobName[]) {
    wrapped[name] = instrumented(name, table[name] as unknown as JobDefinition<JobPayloads[JobName]>, { metrics, log, now });
  }
  return wrapped as unknown as JobTable;
}
