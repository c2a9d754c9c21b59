/**
 * How a failed request is logged, by what kind of failure it is:
 *
 * - A refusal (an AppError, whatever its status: bad input, no credentials, a feature that is not
 *   configured here) is the client's business, and any client, signed in or not, can cause as
 *   many as it likes: the first of each code is logged at info, without a stack, so the operator
 *   sees it happens (e.g. that an identity-provider login is being tried while OIDC is not
 *   configured); the rest at debug. The codes are the catalogue's, so the set stays small.
 * - A store that is down (mapped to 503) is the operator's business, but one outage fails every
 *   request at once: warn with the error's message (its stack says nothing new), at most once per
 *   STORE_DOWN_EVERY_MS, the next line counting how many were skipped meanwhile.
 * - Anything else is a bug: error, with the stack and the error id the client was given.
 *
 * One instance per app, and an app per process: "once" means once per process.
 */
import type { Logger } from '../../shared/log';
import type { AppError } from '../../shared/errors';

const STORE_DOWN_EVERY_MS = 1_000;

export interface FailedRequest {
  requestId: string;
  method: string;
  path: string;
}

export class RequestFailureLog {
  private readonly refusalCodesSeen = new Set<string>();
  private lastStoreDownAt = Number.NEGATIVE_INFINITY;
  private storeDownSkipped = 0;

  constructor(
    private readonly log: Logger,
    /** Milliseconds; a parameter so the throttle can be tested without waiting. */
    private readonly now: () => number = Date.now,
  ) {}

  refusal(refusal: AppError, request: FailedRequest): void {
    const fields = { ...request, status: refusal.status, code: refusal.code, detail: refusal.detail };
    if (this.refusalCodesSeen.has(refusal.code)) {
      this.log.debug(fields, 'request refused');
      return;
    }
    this.refusalCodesSeen.add(refusal.code);
    this.log.info(fields, `request refused: ${refusal.code} (logged once at info; later ones at debug)`);
  }

  storeDown(error: unknown, request: FailedRequest): void {
    const message = error instanceof Error ? error.message : String(error);
    const now = this.now();
    if (now - this.lastStoreDownAt < STORE_DOWN_EVERY_MS) {
      this.storeDownSkipped += 1;
      this.log.debug({ ...request, err: message }, 'a store is down: answered 503');
      return;
    }
    const skipped = this.storeDownSkipped;
    this.lastStoreDownAt = now;
    this.storeDownSkipped = 0;
    this.log.warn({ ...request, err: message, ...(skipped > 0 ? { skipped } : {}) }, 'a store is down: answered 503');
  }

  bug(error: unknown, request: FailedRequest): void {
    this.log.error({ ...request, err: error, errorId: request.requestId }, 'request failed');
  }
}
