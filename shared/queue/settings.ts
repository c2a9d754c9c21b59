import type { JobName, JobSettings } from './types';

/** Retry, timeout and concurrency of each job; producers and workers read the same table. */
export const jobSettings: Record<JobName, JobSettings> = {
  // Its concurrency is the job table's, from GENERATION_JOB_CONCURRENCY (config).
  'generation.run': { retries: 3, backoffMs: 2_000, timeoutMs: 600_000, concurrency: 16 },
  'bot.chat': { retries: 2, backoffMs: 2_000, timeoutMs: 600_000, concurrency: 8 },
  'bot.deliver': { retries: 4, backoffMs: 5_000, timeoutMs: 180_000, concurrency: 4 },
  'bot.inline': { retries: 4, backoffMs: 5_000, timeoutMs: 60_000, concurrency: 4 },
  // One attempt per job: the delivery reschedules itself with its own backoff for 24 h.
  'webhook.deliver': { retries: 0, backoffMs: 1_000, timeoutMs: 20_000, concurrency: 4 },
  // A run is idempotent (the firing is its idempotency key), so a retry never runs it twice.
  'schedule.run': { retries: 3, backoffMs: 5_000, timeoutMs: 600_000, concurrency: 2 },
  'maintenance.run': { retries: 2, backoffMs: 10_000, timeoutMs: 600_000, concurrency: 1 },
};
