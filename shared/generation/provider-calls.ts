/**
 * Calling providers for a generation: the model's provider and then its fallbacks, each within
 * that provider's concurrency cap. The runner decides what the outcome does to the row.
 */
import type { CatalogModel } from '../catalog/types';
import type { Generation } from '../db/entities';
import type { Logger } from '../log';
import type { Metrics, ProviderRetryReason } from '../observability/metrics';
import type { ProviderSlots, ReleaseSlot } from '../providers/concurrency';
import type { ProviderRegistry } from '../providers/registry';
import { CallOptions, InputProblem, ProviderAdapter, ProviderError } from '../providers/types';
import type { Storage } from '../storage';
import { executeCategory } from './execute';
import { readInput } from './stored-input';
import type { InputFetcher, Outcome } from './types';

/**
 * A job waits this long for a slot of a provider at its concurrency cap, then goes back to the
 * queue for later instead of holding a worker slot other providers' jobs could use.
 */
export const JOB_SLOT_WAIT_MS = 2_000;
export const BUSY_RETRY_MS = 5_000;
/** A generation that waited this long for a busy provider fails (uncharged) rather than wait on. */
export const MAX_BUSY_WAIT_MS = 3_600_000;
export const BUSY_TOO_LONG = 'The provider stayed busy for too long; nothing was charged';

/** The provider is at its concurrency cap: not a failure, the work waits for a free slot. */
export class ProviderBusyError extends Error {
  constructor(readonly provider: string) {
    super(`The ${provider} provider is at its concurrency limit`);
    this.name = 'ProviderBusyError';
  }
}

/** A request (not a queued job) that finds its provider busy within its timeout is told to come back. */
export function busyAsRateLimited(error: unknown): unknown {
  return error instanceof ProviderBusyError ? new ProviderError('rate_limited', 'The provider is busy; try again shortly') : error;
}

export class ProviderCalls {
  constructor(
    private readonly providers: ProviderRegistry,
    private readonly slots: ProviderSlots,
    private readonly storage: Storage,
    private readonly inputs: InputFetcher,
    private readonly log: Logger,
    private readonly metrics: Metrics,
  ) {}

  /** Times one provider call for the metrics, with the kind of its failure. */
  async timed<T>(provider: string, category: string, signal: AbortSignal, call: () => Promise<T>): Promise<T> {
    const startedAt = performance.now();
    try {
      const result = await call();
      this.called(provider, category, startedAt, null, signal);
      return result;
    } catch (error) {
      this.called(provider, category, startedAt, error, signal);
      throw error;
    }
  }

  /** Records a provider call begun at `startedAt` (performance.now()) that ended now; `error` null when it succeeded. */
  called(provider: string, category: string, startedAt: number, error: unknown, signal: AbortSignal): void {
    const kind = error === null ? null : error instanceof ProviderError ? error.kind : signal.aborted ? 'timeout' : 'internal';
    this.metrics.providerCall(provider, category, (performance.now() - startedAt) / 1000, kind);
  }

  /** A slot of the provider, or ProviderBusyError when none freed up within `waitMs`. */
  async slotOf(provider: string, waitMs: number, signal: AbortSignal): Promise<ReleaseSlot> {
    const release = await this.slots.acquire(provider, waitMs, signal);
    if (!release) throw new ProviderBusyError(provider);
    return release;
  }

  /**
   * Providers to try in order: the model's own, then its configured fallbacks; one that cannot
   * serve its upstream model here (a local tool whose engine is missing) is skipped.
   */
  candidates(model: CatalogModel): Array<{ adapter: ProviderAdapter; upstreamModel: string }> {
    const all = [{ provider: model.provider, upstreamModel: model.upstreamModel }, ...model.fallbacks];
    return all
      .filter((c) => this.providers.canServe(c.provider, model.category, c.upstreamModel))
      .map((c) => ({ adapter: this.providers.get(c.provider), upstreamModel: c.upstreamModel }));
  }

  /** The check at acceptance of the provider a new run tries first (see ProviderAdapter.checkInput). */
  async checkInput(model: CatalogModel, params: Readonly<Record<string, unknown>>, read: (url: string) => Promise<Buffer>): Promise<InputProblem | null> {
    const first = this.candidates(model)[0];
    if (!first?.adapter.checkInput) return null;
    return first.adapter.checkInput({ upstreamModel: first.upstreamModel, params, read });
  }

  /**
   * Calls the provider (falling back to the next one when one is unavailable), within that
   * provider's concurrency cap: waits at most `slotWaitMs` for a slot. `retry`: this run repeats a
   * failed one (counted for the metrics, as a fallback is).
   */
  async execute(generation: Generation, model: CatalogModel, options: CallOptions, slotWaitMs: number, retry?: ProviderRetryReason): Promise<Outcome> {
    const input = await readInput(generation, this.storage);
    const candidates = this.candidates(model);
    if (candidates.length === 0) throw new ProviderError('unavailable', `no provider is configured for ${model.slug}`);
    let lastError: unknown;
    for (const [index, candidate] of candidates.entries()) {
      const release = await this.slotOf(candidate.adapter.name, slotWaitMs, options.signal);
      try {
        const retryReason = index > 0 ? 'fallback' : retry;
        if (retryReason) this.metrics.providerRetry(candidate.adapter.name, retryReason);
        // A fallback runs the same tool under another upstream id: the tool keeps its own name.
        const config = model.category === 'tool' ? { ...model.config, tool: model.config.tool ?? model.upstreamModel } : model.config;
        return await this.timed(candidate.adapter.name, model.category, options.signal, () =>
          executeCategory(candidate.adapter, { ...model, upstreamModel: candidate.upstreamModel, config }, input, options, this.inputs),
        );
      } catch (error) {
        lastError = error;
        const fallThrough = error instanceof ProviderError && error.kind === 'unavailable' && !options.signal.aborted;
        if (!fallThrough) throw error;
        this.log.warn({ provider: candidate.adapter.name, model: model.slug, err: (error as Error).message }, 'provider unavailable; trying the next');
      } finally {
        await release();
      }
    }
    throw lastError;
  }
}
