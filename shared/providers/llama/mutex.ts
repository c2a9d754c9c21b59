/**
 * One holder at a time, in arrival order. A CPU model computes one generation with every core, so
 * a second one at the same time would only halve both; callers wait here instead, and one whose
 * signal aborts while waiting leaves the line without ever running.
 */
import { abortError } from '../abort';

export type Release = () => void;

export class Mutex {
  private tail: Promise<void> = Promise.resolve();
  private waiting = 0;

  /** How many callers hold or wait for the lock. */
  get queued(): number {
    return this.waiting;
  }

  acquire(signal: AbortSignal): Promise<Release> {
    if (signal.aborted) return Promise.reject(abortError(signal));
    this.waiting += 1;
    let release!: Release;
    const turn = new Promise<void>((resolve) => {
      let released = false;
      release = () => {
        if (released) return;
        released = true;
        this.waiting -= 1;
        resolve();
      };
    });
    const previous = this.tail;
    this.tail = previous.then(() => turn);
    return new Promise<Release>((resolve, reject) => {
      const onAbort = (): void => {
        // Our turn still comes (the chain stays intact) but is handed on at once.
        void previous.then(release);
        reject(abortError(signal));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      void previous.then(() => {
        signal.removeEventListener('abort', onAbort);
        if (signal.aborted) return;
        resolve(release);
      });
    });
  }
}
