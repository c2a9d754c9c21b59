/**
 * Waiting for a generation to end, for a caller that must answer with the result although the
 * model runs as a queued job (OpenAI's image endpoint answers synchronously, whatever the model).
 * The wait holds no worker slot and no provider slot: the job runs wherever the queue runs it,
 * and this only watches the row. An end in this process wakes the wait at once (the runner's end
 * event); an end in another process (a worker beside this web process) is seen by reading the
 * row, first after 100 ms, then backing off to one read a second.
 */
import type { Generation } from '../db/entities';

export const FIRST_LOOK_MS = 100;
export const MAX_LOOK_MS = 1_000;

export class EndWaiter {
  /** Waits in progress by generation id: each is woken when that generation ends here. */
  private readonly wakers = new Map<number, Set<() => void>>();

  constructor(private readonly read: (id: number) => Promise<Generation | null>) {}

  /** The runner's end event: wakes the waits on this generation. */
  ended(generation: Pick<Generation, 'id'>): void {
    for (const wake of this.wakers.get(generation.id) ?? []) wake();
  }

  /**
   * The row once it is no longer pending, or as it stands when `timeoutMs` ran out or `signal`
   * aborted (null if it is gone).
   */
  async waitFor(id: number, timeoutMs: number, signal?: AbortSignal): Promise<Generation | null> {
    const until = performance.now() + timeoutMs;
    let delay = FIRST_LOOK_MS;
    for (;;) {
      const row = await this.read(id);
      const left = until - performance.now();
      if (!row || row.status !== 'pending' || left <= 0 || signal?.aborted) return row;
      await this.sleep(id, Math.min(delay, left), signal);
      delay = Math.min(delay * 2, MAX_LOOK_MS);
    }
  }

  /** Resolves after `ms`, when the generation ends here, or when `signal` aborts. */
  private sleep(id: number, ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const wakers = this.wakers.get(id) ?? new Set<() => void>();
      this.wakers.set(id, wakers);
      const wake = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', wake);
        wakers.delete(wake);
        if (wakers.size === 0 && this.wakers.get(id) === wakers) this.wakers.delete(id);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      wakers.add(wake);
      signal?.addEventListener('abort', wake, { once: true });
    });
  }
}
