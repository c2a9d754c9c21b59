/**
 * Jobs are a typed table: each name has a payload type, settings (retries, backoff, timeout,
 * concurrency) and a `perform`. Delivery is at least once, so every `perform` is idempotent.
 */

/** Every job and its payload. Add a job by adding a line here and an entry to the job table. */
export interface JobPayloads {
  'generation.run': { generationId: number };
  'webhook.deliver': { deliveryId: number };
  'schedule.run': { scheduleId: number; fireAt: string };
  'maintenance.run': { task: 'refill' | 'expire' | 'retention' };
  /** Runs a chat turn the Telegram bot accepted and streams the reply into its message. */
  'bot.chat': { generationId: number };
  /** Sends an ended generation the bot started (a media result or a failure) to its chat. */
  'bot.deliver': { generationId: number };
  /** Puts an ended inline-mode generation (`@bot prompt`) into its inline message. */
  'bot.inline': { generationId: number };
}

export type JobName = keyof JobPayloads;

export interface JobSettings {
  retries: number;
  /** First retry delay; doubles each time. */
  backoffMs: number;
  timeoutMs: number;
  /** Jobs of this name run at once per worker process. */
  concurrency: number;
}

export interface JobContext {
  /** Aborted when the job times out or the worker shuts down. */
  signal: AbortSignal;
  /** 1 on the first delivery. */
  attempt: number;
  /** True on the last attempt the settings allow. */
  finalAttempt: boolean;
}

export interface JobDefinition<P> extends JobSettings {
  perform(payload: P, context: JobContext): Promise<void>;
  /** Called once when the last attempt failed, with the last error. */
  onExhausted?(payload: P, error: Error): Promise<void>;
}

export type JobTable = { [N in JobName]: JobDefinition<JobPayloads[N]> };

export interface EnqueueOptions {
  /** A job with the same id that is still queued or running is not added again. */
  jobId?: string;
  delayMs?: number;
}

/** Jobs waiting in one queue (with Redis: the whole deployment's). */
export interface QueueDepth {
  queue: JobName;
  /** Due and not started. */
  waiting: number;
  /** Waiting for their delay (a backoff, a busy provider). */
  delayed: number;
}

export interface Queue {
  readonly kind: 'in-process' | 'redis';
  enqueue<N extends JobName>(name: N, payload: JobPayloads[N], options?: EnqueueOptions): Promise<void>;
  /** For the metrics: the queues this process has opened. */
  depth(): Promise<QueueDepth[]>;
  /** Starts processing with this table (only worker roles call it). */
  startProcessing(table: JobTable): void;
  close(): Promise<void>;
}
