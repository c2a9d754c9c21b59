/** Aborts, transport failures and reading bodies: the same for every adapter. */
import { ProviderError } from './types';

/** The error a call stops with when its signal aborts: the signal's own reason when it is one. */
export function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  const error = new Error(typeof reason === 'string' ? reason : 'The operation was aborted');
  error.name = 'AbortError';
  return error;
}

export function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw abortError(signal);
}

/**
 * A failure of an upstream call without an HTTP status: aborted or timed out → `timeout`,
 * anything else (refused connection, reset, DNS) → `unavailable`. Never carries the cause's text,
 * which may hold a URL with a key in it.
 */
export function transportFailure(provider: string, error: unknown, signal: AbortSignal): ProviderError {
  if (error instanceof ProviderError) return error;
  const name = error instanceof Error || error instanceof DOMException ? error.name : '';
  if (signal.aborted || name === 'AbortError' || name === 'TimeoutError') {
    return new ProviderError('timeout', `The ${provider} provider did not answer in time`);
  }
  return new ProviderError('unavailable', `The ${provider} provider could not be reached`);
}

/** A response's whole body; a connection lost while reading it is a transport failure. */
export async function readResponseBytes(provider: string, response: Response, signal: AbortSignal): Promise<Buffer> {
  try {
    return Buffer.from(await response.arrayBuffer());
  } catch (error) {
    throw transportFailure(provider, error, signal);
  }
}

/** A response's body as JSON; a body that is not JSON is `unavailable` ("malformed response"). */
export async function readResponseJson(provider: string, response: Response, signal: AbortSignal): Promise<unknown> {
  const bytes = await readResponseBytes(provider, response, signal);
  try {
    return JSON.parse(bytes.toString('utf8')) as unknown;
  } catch {
    throw new ProviderError('unavailable', `The ${provider} provider sent a malformed response`);
  }
}
