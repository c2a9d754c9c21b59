/**
 * Runs a generation's provider call and moves the row to its end state exactly once. Used by the
 * request (synchronous models) and by the `generation.run` job (asynchronous ones).
 */
import type { Catalog } from '../catalog';
import type { CatalogModel } from '../catalog/types';
import type { Clock } from '../clock';
import { Generation } from '../db/entities';
import type { Logger } from '../log';
import type { ProviderRegistry } from '../providers/registry';
import { FinishReason, ProviderError, Usage } from '../providers/types';
import type { Storage } from '../storage';
import type { ProviderSlots, ReleaseSlot } from '../providers/concurrency';
import type { InputProblem } from '../providers/types';
import type { JobContext } from '../queue/types';
import { textRequest } from './execute';
import { BUSY_RETRY_MS, BUSY_TOO_LONG, busyAsRateLimited, JOB_SLOT_WAIT_MS, MAX_BUSY_WAIT_MS, ProviderBusyError, ProviderCalls } from './provider-calls';
import { readInput } from './stored-input';
import type { CompletionSet, FailureSet, GenerationStore } from './store';
import { textMetadata, ToolCallAssembly } from './tool-calls';
import type { DeferredRun, EndFacts, Ended, FailureKind, GenerationEndListener, InputFetcher, Outcome, StreamPart } from './types';
import { jobIds } from '../queue/job-ids';
import { Metrics } from '../observability/metrics';

const UNKNOWN: EndFacts = { hasWebhooks: null };

export const CANCELLED = 'Cancelled';

/**
 * A job's runner holds its row for a lease it renews while it works, so a crashed worker's row is
 * free again within seconds for the recovery sweep (every few seconds) to queue again. A runner
 * that cannot renew (its database is away) stops its call before the lease can lapse, and one
 * whose claim was taken over stops at its next renewal: a generation never runs twice at once.
 */
export interface LeaseTimings {
  leaseMs: number;
  renewMs: number;
}
export const LEASES: LeaseTimings = { leaseMs: 15_000, renewMs: 5_000 };

export class GenerationRunner {
  private readonly endListeners: GenerationEndListener[] = [];
  private readonly calls: ProviderCalls;

  constructor(
    private readonly store: GenerationStore,
    private readonly catalog: Catalog,
    providers: ProviderRegistry,
    private readonly storage: Storage,
    inputs: InputFetcher,
    private readonly clock: Clock,
    private readonly log: Logger,
    slots: ProviderSlots,
    private readonly leases: LeaseTimings = LEASES,
    private readonly metrics: Metrics = new Metrics({ defaultMetrics: false }),
  ) {
    this.calls = new ProviderCalls(providers, slots, storage, inputs, log, metrics);
  }

  onEnd(listener: GenerationEndListener): void {
    this.endListeners.push(listener);
  }

  /**
   * Provider calls under way in this process, by generation: a generation that ends meanwhile
   * (cancelled) stops its call, so the upstream stops working (and billing) and its slot frees.
   */
  private readonly running = new Map<number, AbortController>();

  /**
   * The signal of one provider run of a generation: aborted by its deadline, by `outer` (a job's
   * timeout, a client gone), or by the generation ending meanwhile. One controller and a timer:
   * AbortSignal.timeout plus AbortSignal.any cost several objects and listeners per run.
   */
  private runSignal(generationId: number, timeoutMs: number, outer?: AbortSignal): { signal: AbortSignal; done: () => void } {
    const controller = new AbortController();
    this.running.set(generationId, controller);
    const timer = setTimeout(() => controller.abort(new DOMException('The operation timed out', 'TimeoutError')), timeoutMs);
    // Like AbortSignal.timeout's, the deadline alone does not keep a process alive.
    timer.unref();
    const onOuter = (): void => controller.abort(outer?.reason);
    if (outer?.aborted) onOuter();
    else outer?.addEventListener('abort', onOuter, { once: true });
    return {
      signal: controller.signal,
      done: () => {
        clearTimeout(timer);
        outer?.removeEventListener('abort', onOuter);
        if (this.running.get(generationId) === controller) this.running.delete(generationId);
      },
    };
  }

  /** Stops the provider call of a generation that ended while it ran (cancelled), here. */
  private stopRun(generationId: number): void {
    this.running.get(generationId)?.abort(new Error('The generation ended while its provider call ran'));
  }

  private notify(generation: Generation, facts: EndFacts = UNKNOWN): void {
    for (const listener of this.endListeners) {
      try {
        listener(generation, facts);
      } catch (error) {
        this.log.error({ err: error, generationId: generation.id }, 'generation end listener failed');
      }
    }
  }

  /** The check at acceptance of the provider a new run of the model tries first. */
  checkInput(model: CatalogModel, params: Readonly<Record<string, unknown>>, read: (url: string) => Promise<Buffer>): Promise<InputProblem | null> {
    return this.calls.checkInput(model, params, read);
  }

  /** The model a row was made with (aliases and renamed slugs resolve). */
  modelOf(generation: Generation): CatalogModel | undefined {
    return this.catalog.find(generation.modelSlug);
  }

  /**
   * pending → completed, capturing the hold; the owner's balance after the charge comes with it.
   * Null when the row had already ended.
   */
  async complete(generation: Generation, outcome: Outcome): Promise<Ended | null> {
    const stored = outcome.file ? await this.storage.put('results', outcome.file.bytes, outcome.file.contentType, outcome.file.extension) : null;
    const thumbnail = outcome.thumbnail
      ? await this.storage.put('results', outcome.thumbnail.bytes, outcome.thumbnail.contentType, outcome.thumbnail.extension)
      : null;
    const now = this.clock();
    const ended: CompletionSet = {
      status: 'completed',
      provider: outcome.provider,
      resultText: outcome.resultText,
      resultKey: stored?.key ?? null,
      thumbnailKey: thumbnail?.key ?? null,
      resultMetadata: JSON.stringify(outcome.metadata),
      usage: outcome.usage ? JSON.stringify(outcome.usage) : null,
      seed: outcome.seed ?? generation.seed,
      progress: 100,
      tokensSpent: generation.price,
      processingMs: Math.max(0, now.getTime() - generation.createdAt.getTime()),
      completedAt: now,
      leaseUntil: null,
      updatedAt: now,
    };
    const captured = await this.store.complete(generation, ended, now);
    if (!captured) {
      // Cancelled (or finished elsewhere) meanwhile: the files of this run are not anyone's.
      if (stored) await this.storage.delete(stored.key);
      if (thumbnail) await this.storage.delete(thumbnail.key);
      return null;
    }
    ended.tokensSpent = captured.charged;
    // The row as it now stands, without reading it back.
    const won = Object.assign(new Generation(), generation, ended);
    this.notify(won, { hasWebhooks: captured.hasWebhooks });
    return { generation: won, balance: captured.balance };
  }

  /** pending → failed, releasing the hold. Null when the row had already ended. */
  async fail(generationId: number, failure: string | { message: string; kind: FailureKind }): Promise<Generation | null> {
    const { message, kind } = typeof failure === 'string' ? { message: failure, kind: 'internal' as const } : failure;
    const row = await this.store.find(generationId);
    if (!row || row.status !== 'pending') return null;
    const now = this.clock();
    const set: FailureSet = {
      status: 'failed',
      error: message.slice(0, 1000),
      resultMetadata: JSON.stringify({ failure: kind }),
      tokensSpent: 0,
      leaseUntil: null,
      processingMs: Math.max(0, now.getTime() - row.createdAt.getTime()),
      completedAt: now,
      updatedAt: now,
    };
    if (!(await this.store.fail(row, set))) return null;
    // The row as read before the conditional update won, with what failing wrote: the fields a
    // run may move meanwhile (progress, lease) are not what listeners read.
    const ended = Object.assign(row, set);
    this.stopRun(generationId);
    this.notify(ended);
    return ended;
  }

  /**
   * Runs a generation inside the request within the model's timeout, retrying a transient failure
   * once. Returns the row as it ended (or as it stands, if something else ended it first).
   */
  async runSync(generation: Generation, model: CatalogModel, signal?: AbortSignal): Promise<Ended> {
    const run = this.runSignal(generation.id, model.timeoutSeconds * 1000, signal);
    try {
      return await this.runSyncAttempts(generation, model, run.signal);
    } finally {
      run.done();
    }
  }

  private async runSyncAttempts(generation: Generation, model: CatalogModel, combined: AbortSignal): Promise<Ended> {
    for (let attempt = 1; ; attempt++) {
      try {
        // The request waits for a slot within the model's timeout: it holds no worker slot meanwhile.
        const outcome = await this.calls.execute(generation, model, { signal: combined }, model.timeoutSeconds * 1000, attempt > 1 ? 'retry' : undefined);
        return (await this.complete(generation, outcome)) ?? { generation: await this.reload(generation.id), balance: null };
      } catch (caught) {
        const error = busyAsRateLimited(caught);
        const transient = error instanceof ProviderError ? error.transient : !(error instanceof Error && error.name === 'AbortError');
        if (attempt === 1 && transient && !combined.aborted) {
          // Honour the provider's Retry-After when it fits in the model's time budget.
          const wait = error instanceof ProviderError ? (error.retryAfterMs ?? 0) : 0;
          if (wait > 0 && wait < model.timeoutSeconds * 1000) {
            await new Promise<void>((resolve) => {
              const timer = setTimeout(resolve, wait);
              combined.addEventListener('abort', () => {
                clearTimeout(timer);
                resolve();
              }, { once: true });
            });
          }
          if (!combined.aborted) continue;
        }
        // Read before failing: failing aborts the run's own signal.
        const bug = !(error instanceof ProviderError) && !combined.aborted;
        const failed = await this.fail(generation.id, failureOf(error, combined));
        if (bug) this.log.error({ err: error, generationId: generation.id }, 'generation failed');
        return { generation: failed ?? (await this.reload(generation.id)), balance: null };
      }
    }
  }

  /**
   * Streams a text generation: yields deltas (text, tool-call pieces) as the provider sends them,
   * then completes (charging once) or fails. If `signal` aborts (the client went away) the
   * provider call stops and the generation fails uncharged: nobody received it whole.
   */
  async *streamText(generation: Generation, model: CatalogModel, signal: AbortSignal): AsyncGenerator<StreamPart, Ended> {
    const run = this.runSignal(generation.id, model.timeoutSeconds * 1000, signal);
    const combined = run.signal;
    const candidate = this.calls.candidates(model)[0];
    let content = '';
    const toolCalls = new ToolCallAssembly();
    let finishReason: FinishReason | null = null;
    let stopSequence: string | undefined;
    let usage: Usage | null = null;
    let release: ReleaseSlot | null = null;
    let ended: Ended | null = null;
    /** When the provider's stream began, until its end was recorded for the metrics. */
    let streamStartedAt: number | null = null;
    try {
      const input = await readInput(generation, this.storage);
      if (!candidate?.adapter.text) throw new ProviderError('unavailable', `no provider is configured for ${model.slug}`);
      release = await this.calls.slotOf(candidate.adapter.name, model.timeoutSeconds * 1000, combined).catch((error: unknown) => {
        throw busyAsRateLimited(error);
      });
      streamStartedAt = performance.now();
      const chunks = candidate.adapter.text.stream(textRequest({ ...model, upstreamModel: candidate.upstreamModel }, input), { signal: combined });
      for await (const chunk of chunks) {
        if (combined.aborted) break;
        if ('delta' in chunk) {
          if (chunk.delta) {
            content += chunk.delta;
            yield chunk.delta;
          }
        } else if ('toolCall' in chunk) {
          yield toolCalls.add(chunk.toolCall);
        } else if ('finish' in chunk) {
          finishReason = chunk.finish;
          stopSequence = chunk.stopSequence;
        } else {
          usage = chunk.usage;
        }
      }
      if (signal.aborted) throw new ProviderError('timeout', 'Client disconnected before the end of the stream');
      if (combined.aborted) throw new ProviderError('timeout', 'The model did not answer in time');
      this.calls.called(candidate.adapter.name, model.category, streamStartedAt, null, combined);
      streamStartedAt = null;
      const calls = toolCalls.calls(candidate.adapter.name);
      ended = await this.complete(generation, {
        provider: candidate.adapter.name,
        resultText: content,
        file: null,
        thumbnail: null,
        metadata: textMetadata({ finishReason: finishReason ?? (calls.length > 0 ? 'tool_calls' : 'stop'), toolCalls: calls, stopSequence }),
        usage: usage ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
        seed: null,
      });
    } catch (error) {
      if (streamStartedAt !== null && candidate) this.calls.called(candidate.adapter.name, model.category, streamStartedAt, error, combined);
      // Read before failing: failing aborts the run's own signal.
      const bug = !(error instanceof ProviderError) && !combined.aborted;
      await this.fail(generation.id, failureOf(error, combined));
      if (bug) this.log.error({ err: error, generationId: generation.id }, 'stream failed');
    } finally {
      run.done();
      await release?.();
    }
    return ended ?? { generation: await this.reload(generation.id), balance: null };
  }

  /**
   * The `generation.run` job: idempotent, and only one runner holds a row at a time (a lease).
   * Returns a deferred run when the provider is at its concurrency cap: the caller queues it again.
   */
  async runJob(generationId: number, context: JobContext): Promise<DeferredRun | null> {
    const now = this.clock();
    // Claimed first, then checked: the row comes back with the claim in one round trip.
    const generation = await this.store.claim(generationId, new Date(now.getTime() + this.leases.leaseMs), now);
    if (!generation) return null;
    // The claim's number: only this claim may renew or let go of the lease.
    const attempt = generation.attempts;
    const model = this.modelOf(generation);
    if (!model) {
      await this.fail(generationId, { message: 'This model is no longer offered', kind: 'unavailable' });
      return null;
    }
    const run = this.runSignal(generationId, model.timeoutSeconds * 1000, context.signal);
    const signal = run.signal;
    const heartbeat = this.keepLease(generationId, attempt);
    let lastProgress = 0;
    try {
      const outcome = await this.calls.execute(generation, model, {
        signal,
        upstreamRef: { previous: generation.upstreamRef, save: (ref) => this.store.saveUpstreamRef(generationId, ref) },
        onProgress: (percent) => {
          const rounded = Math.max(0, Math.min(99, Math.round(percent)));
          if (rounded < lastProgress + 5) return;
          lastProgress = rounded;
          void this.store.saveProgress(generationId, rounded).catch(() => undefined);
        },
      }, JOB_SLOT_WAIT_MS, context.attempt > 1 ? 'job_retry' : undefined);
      await this.complete(generation, outcome);
      return null;
    } catch (error) {
      const waitedMs = this.clock().getTime() - generation.createdAt.getTime();
      if (error instanceof ProviderBusyError && waitedMs > MAX_BUSY_WAIT_MS) {
        await this.fail(generationId, { message: BUSY_TOO_LONG, kind: 'unavailable' });
        return null;
      }
      if (error instanceof ProviderBusyError && !(await this.isEnded(generationId))) {
        await this.store.letGoOfLease(generationId, attempt);
        this.log.info({ generationId, provider: error.provider }, 'provider at its concurrency cap; the job waits in the queue');
        // attempts grew with this claim, so the id is new and the queue does not drop it as a duplicate.
        return { delayMs: BUSY_RETRY_MS, jobId: jobIds.deferredRun(generationId, attempt) };
      }
      if (heartbeat.lost()) {
        // Another runner has the row now (or will, once the lease lapses): it is theirs to end.
        this.log.warn({ generationId, attempt }, 'lease lost: this run stops and leaves the generation to its new runner');
        return null;
      }
      const transient = error instanceof ProviderError ? error.transient : true;
      if (transient && !context.finalAttempt && !(await this.isEnded(generationId))) {
        await this.store.letGoOfLease(generationId, attempt);
        throw error;
      }
      await this.fail(generationId, failureOf(error, signal));
      if (!(error instanceof ProviderError)) this.log.error({ err: error, generationId }, 'generation job failed');
      return null;
    } finally {
      heartbeat.stop();
      run.done();
    }
  }

  /**
   * Renews the lease of claim `attempt` every `renewMs`. When the row has ended meanwhile (a
   * cancel through another process) or another claim took it, or when no renewal has succeeded
   * for long enough that the lease may lapse (the database is away), the provider call stops.
   */
  private keepLease(generationId: number, attempt: number): { stop(): void; lost(): boolean } {
    let renewedAt = performance.now();
    let lost = false;
    const stopRun = (reason: string): void => {
      lost = true;
      this.running.get(generationId)?.abort(new Error(reason));
    };
    const timer = setInterval(() => {
      // Stop while the lease is surely still ours: a renewal short of its expiry by one period.
      if (performance.now() - renewedAt > this.leases.leaseMs - this.leases.renewMs) {
        stopRun('The lease could not be renewed');
        return;
      }
      this.store
        .renewLease(generationId, attempt, new Date(this.clock().getTime() + this.leases.leaseMs))
        .then((renewed) => {
          if (renewed) renewedAt = performance.now();
          else stopRun('The generation ended, or another runner took it, while its provider call ran');
        })
        .catch(() => undefined);
    }, this.leases.renewMs);
    timer.unref();
    return {
      stop: () => clearInterval(timer),
      lost: () => lost,
    };
  }

  private async reload(generationId: number): Promise<Generation> {
    const generation = await this.store.find(generationId);
    if (!generation) throw new Error(`generation ${generationId} is gone`);
    return generation;
  }

  private async isEnded(generationId: number): Promise<boolean> {
    const row = await this.store.find(generationId);
    return !row || row.status !== 'pending';
  }

  /**
   * Pending rows no runner holds: those to queue (again) and synchronous ones to fail. A row
   * whose lease lapsed belonged to a job whose worker died: it is queued again whatever its model.
   * With `unclaimed`, also rows no runner ever claimed: an asynchronous one waits for its job
   * (queued again: the job id de-duplicates); a synchronous one belongs to its request, and past
   * its timeout the request is gone.
   */
  async recoverable(options: { unclaimed: boolean }): Promise<{ requeue: number[]; abandoned: number[] }> {
    const now = this.clock();
    const requeue: number[] = [];
    const abandoned: number[] = [];
    for (const row of await this.store.unheld(now, options)) {
      const model = this.catalog.find(row.modelSlug);
      if (model && (!model.sync || row.leaseUntil !== null)) requeue.push(row.id);
      else if (!model || now.getTime() - row.createdAt.getTime() > model.timeoutSeconds * 1000 + this.leases.leaseMs) abandoned.push(row.id);
    }
    return { requeue, abandoned };
  }
}

/** Why a generation failed and what it says, for its row (`error`, and `result_metadata.failure`). */
export function failureOf(error: unknown, signal?: AbortSignal): { message: string; kind: FailureKind } {
  if (error instanceof ProviderError) return { message: error.message, kind: error.kind };
  if (signal?.aborted) return { message: 'The model did not answer in time', kind: 'timeout' };
  return { message: 'Internal error while generating', kind: 'internal' };
}
