/**
 * What every log line of a piece of work carries without being passed by hand: the request id of
 * the HTTP request that caused it, and the generation it is about. The API sets it per request,
 * the queue carries it in a job's data to the worker (queue/trace.ts), and the logger's mixin
 * (log.ts) adds it to each line. Nothing here imports anything: the logger sits on top of it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface LogContext {
  requestId?: string;
  generationId?: number;
  /** The job name, in a worker. */
  job?: string;
}

const storage = new AsyncLocalStorage<LogContext>();

/** The context of the work under way, if any (never mutate what it returns but through bindGeneration). */
export function currentLogContext(): LogContext | undefined {
  return storage.getStore();
}

/** Runs `work` (and everything it starts) under `context`, replacing the current one. */
export function runWithLogContext<T>(context: LogContext, work: () => T): T {
  return storage.run(context, work);
}

/**
 * Runs `work` outside any context: for long-lived things (connections, timers) created lazily
 * while a request happens to be under way, whose later log lines are nobody's request.
 */
export function outsideLogContext<T>(work: () => T): T {
  return storage.exit(work);
}

/**
 * Names the generation the current request or job is about: the lines logged after this carry
 * its id. The first one named stays (a request makes one generation).
 */
export function bindGeneration(generationId: number): void {
  const context = storage.getStore();
  if (context && context.generationId === undefined) context.generationId = generationId;
}

/** The fields a log line gets from the context: a new object each time (pino merges into it). */
export function logFields(): Record<string, unknown> {
  const context = storage.getStore();
  if (!context) return {};
  const fields: Record<string, unknown> = {};
  if (context.requestId !== undefined) fields.requestId = context.requestId;
  if (context.generationId !== undefined) fields.generationId = context.generationId;
  if (context.job !== undefined) fields.job = context.job;
  return fields;
}

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** An incoming `X-Request-Id` kept as it is when sane (at most 128 of `A-Z a-z 0-9 . _ : -`), else null. */
export function saneRequestId(value: string | undefined): string | null {
  return value !== undefined && SANE_REQUEST_ID.test(value) ? value : null;
}
