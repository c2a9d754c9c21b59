/**
 * Whether this process should be sent work: not before its roles have started, and no longer once
 * it is shutting down (SIGTERM), while it drains what it has. GET /ready answers 503 then, even
 * though every store answers; GET /health (liveness) does not care.
 */
export type ReadinessState = 'starting' | 'ready' | 'draining';

export class Readiness {
  private current: ReadinessState;

  /** `started`: ready at once (a process the lifecycle does not run, such as a test's app). */
  constructor(started = true) {
    this.current = started ? 'ready' : 'starting';
  }

  get state(): ReadinessState {
    return this.current;
  }

  markStarted(): void {
    if (this.current === 'starting') this.current = 'ready';
  }

  markDraining(): void {
    this.current = 'draining';
  }
}
