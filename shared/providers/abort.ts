/** Stopping work whose signal aborted: the same for every adapter and engine. */

/** The error a call stops with when its signal aborts: the signal's own reason when it is one. */
export function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  const error = new Error(typeof reason === 'string' ? reason : 'The operation was aborted');
  error.name = 'AbortError';
  return error;
}

/** Throws abortError(signal) when the signal has aborted. */
export function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw abortError(signal);
}
