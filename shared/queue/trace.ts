/**
 * What a job carries from the work that queued it: the request id and generation id of the log
 * context (observability/context.ts), and when it became due, under `$trace` in its data. The
 * worker runs the job under that context again, so its log lines (and those of the jobs it
 * queues in turn, such as a webhook delivery) carry the id of the request that caused them.
 * Jobs queued without it (by an older version, or by the recovery sweep) simply run without.
 */
import { currentLogContext, LogContext } from '../observability/context';

export interface JobTrace {
  requestId?: string;
  generationId?: number;
  /** Epoch milliseconds when the job was due: queued, plus its delay. */
  dueAt: number;
}

export type Traced<P> = P & { $trace?: JobTrace };

/** The payload with the current context and due time added. */
export function withTrace<P extends object>(payload: P, delayMs = 0, now = Date.now()): Traced<P> {
  const context = currentLogContext();
  const trace: JobTrace = { dueAt: now + Math.max(0, delayMs) };
  if (context?.requestId !== undefined) trace.requestId = context.requestId;
  if (context?.generationId !== undefined) trace.generationId = context.generationId;
  return { ...payload, $trace: trace };
}

/** The payload as the job's `perform` expects it, and the trace it travelled with. */
export function splitTrace<P extends object>(data: Traced<P>): { payload: P; trace: JobTrace | undefined } {
  if (!('$trace' in data)) return { payload: data, trace: undefined };
  const { $trace: trace, ...payload } = data;
  return { payload: payload as P, trace };
}

/** The log context a job runs under. */
export function jobLogContext(job: string, data: object): LogContext {
  const trace = (data as Traced<object>).$trace;
  const ownGeneration = (data as { generationId?: unknown }).generationId;
  const context: LogContext = { job };
  if (trace?.requestId !== undefined) context.requestId = trace.requestId;
  const generationId = typeof ownGeneration === 'number' ? ownGeneration : trace?.generationId;
  if (generationId !== undefined) context.generationId = generationId;
  return context;
}
