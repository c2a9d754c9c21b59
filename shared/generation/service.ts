/**
 * The generation domain's entry points, one per use, for every way in (the API, the bot,
 * schedules): `start` (accept, then run in the call or queue), `stream` (accept, then the text
 * as it comes), `poll`, `cancel`, `price` (what a request would cost), and `conversation` (a
 * text generation as a later turn continues it).
 *
 * Accepting: resolve the model (an installed assistant applied once) → plan gate → validate →
 * price → plan limit → fetch the URL inputs and let the provider check them → hold the price and
 * insert the pending row in one transaction (billing/). A row then ends exactly once (runner.ts).
 */
import type { Assistants } from '../assistants';
import { freeBalance, tokenBalance } from '../billing';
import type { Catalog } from '../catalog';
import { priceOf } from '../catalog/pricing';
import type { CatalogModel } from '../catalog/types';
import type { Clock } from '../clock';
import type { Database } from '../db/database';
import { isDuplicateKey } from '../db/errors';
import { Generation, User } from '../db/entities';
import { AppError } from '../errors';
import type { GenerationLimiter, LimitSnapshot } from '../limits';
import type { Logger } from '../log';
import { bindGeneration } from '../observability/context';
import type { Plan, PlanTable } from '../plans';
import type { Queue } from '../queue/types';
import type { Storage } from '../storage';
import { applyAssistant, GenerateRequest, GenerationInput, normalizeInput, userTexts, withDefaultImageSize } from './input';
import type { MediaInputs } from './media-inputs';
import { normalizeParams } from './params';
import { CANCELLED, GenerationRunner } from './runner';
import { GenerationStore, HeldInsert, pendingGeneration } from './store';
import { readInput, serializeInput } from './stored-input';
import { EndWaiter } from './end-waiter';
import { textEndOf } from './tool-calls';
import type { Conversation, GenerationCaller, RunJob, StartOptions, Started, Streamed, StreamEnd, StreamPart } from './types';
import { jobIds } from '../queue/job-ids';

/** Params that name media the service will fetch. */
const URL_PARAMS = ['image_url', 'audio_url', 'target_image_url', 'mask_url'];

export const IDEMPOTENCY_WINDOW_MS = 24 * 3600 * 1000;
export const CONTENT_POLICY_ERROR = 'Content policy violation';
const PROMPT_HISTORY_LENGTH = 4000;
/** How long a provider's check at acceptance may spend reading an input. */
const INPUT_CHECK_READ_MS = 10_000;

export function parseGenerationId(raw: string | number | undefined): number {
  const text = String(raw ?? '');
  const match = /^(?:gen_)?([1-9][0-9]{0,9})$/.exec(text);
  const id = match ? Number(match[1]) : NaN;
  if (!Number.isSafeInteger(id) || id > 2_147_483_647) throw new AppError('not_found');
  return id;
}

/** A row's result metadata as stored (JSON written by the runner); null when there is none or it does not parse. */
function resultMetadataOf(generation: Generation): Record<string, unknown> | null {
  try {
    const parsed: unknown = JSON.parse(generation.resultMetadata ?? 'null');
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The queue's id for a generation's run: a second enqueue of the same run is dropped. */
export function runJobId(job: RunJob, generationId: number): string {
  return job === 'bot.chat' ? jobIds.botChat(generationId) : jobIds.generationRun(generationId);
}

/** A request with its assistant applied, and the model it names. */
interface Resolved {
  request: GenerateRequest;
  model: CatalogModel;
}

/** A generation as accepting left it: held and pending, failed at once (content policy), or a replay. */
interface Accepted {
  generation: Generation;
  model: CatalogModel;
  replay: boolean;
  limits: LimitSnapshot | null;
  /** The owner's balance read in the hold's transaction (not on a replay, which held nothing). */
  balanceAtHold: number | null;
}

export interface GenerationsDeps {
  db: Database;
  store: GenerationStore;
  runner: GenerationRunner;
  catalog: Catalog;
  plans: PlanTable;
  limiter: GenerationLimiter;
  queue: Queue;
  storage: Storage;
  inputs: MediaInputs;
  assistants: Pick<Assistants, 'requireInstalled'>;
  balances: { balanceOf(userId: number): Promise<number | null> };
  clock: Clock;
  log: Logger;
  /** Words refused in any user text (CONTENT_POLICY_BLOCKLIST). */
  blocklist: string[];
}

export class Generations {
  private readonly blocklist: RegExp | null;
  private readonly endWaiter: EndWaiter;

  constructor(private readonly deps: GenerationsDeps) {
    this.endWaiter = new EndWaiter((id) => deps.store.find(id));
    // An end in this process wakes its waits at once; other processes' ends are read from the row.
    deps.runner.onEnd((generation) => this.endWaiter.ended(generation));
    const words = deps.blocklist.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).filter(Boolean);
    this.blocklist = words.length ? new RegExp(`(^|[^\\p{L}\\p{N}_])(${words.join('|')})(?=$|[^\\p{L}\\p{N}_])`, 'iu') : null;
  }

  /** The offered model for a slug; unknown (or not configured here) is 404. */
  model(slug: string | undefined): CatalogModel {
    if (!slug) throw AppError.validation('model', 'is required');
    const model = this.deps.catalog.find(slug);
    if (!model) throw new AppError('not_found', { detail: `Unknown model: ${slug}` });
    return model;
  }

  /**
   * What a request would cost, with its params as normalized (defaults filled in). By default
   * only the params are checked (calculate-price needs no prompt); `whole` checks the request as
   * `start` would. With a plan, a model the plan does not allow is refused (403). With the
   * account, its default image size fills a missing size, as `start` does for that account.
   */
  price(
    original: GenerateRequest,
    options: { plan?: Plan; whole?: boolean; account?: Pick<User, 'defaultImageSize'> } = {},
  ): { model: CatalogModel; params: Record<string, unknown>; price: number } {
    const model = this.model(original.model);
    if (options.plan && !this.deps.plans.allows(options.plan.name, model.minPlan)) throw new AppError('insufficient_plan');
    const request = withDefaultImageSize(model, original, options.account?.defaultImageSize);
    const params = options.whole ? normalizeInput(model, request).params : normalizeParams(model, request.topLevel, request.params ?? {});
    return { model, params, price: priceOf(model, params) };
  }

  /**
   * Accepts the request and runs it: a synchronous model in this call (within its timeout), any
   * other (or any, with `runIn: 'background'`) as a queued job. A replay of an earlier request
   * (Idempotency-Key) returns that generation as it stands and charges nothing again.
   */
  async start(caller: GenerationCaller, request: GenerateRequest, options: StartOptions): Promise<Started> {
    const userId = caller.user.id;
    const accepted = await this.accept(caller, await this.resolve(userId, request, options), options);
    // The balance is read when it is answered, not taken from the caller's row: that row may
    // come from the API-key cache (auth/api-keys.ts), seconds old. A completed run's capture
    // returns it without a statement.
    const { generation, model } = accepted;
    const background = options.runIn === 'background';
    // A replay run in a request is its first request's to run; a background one may need queueing again.
    if (generation.status !== 'pending' || (accepted.replay && !background)) return { ...accepted, balance: await this.balanceOf(userId) };
    if ((await options.beforeRun?.(generation, model)) === false) return { ...accepted, balance: await this.balanceOf(userId) };
    if (model.sync && !background) {
      const ended = await this.deps.runner.runSync(generation, model, options.signal);
      return { ...accepted, generation: ended.generation, balance: ended.balance ?? (await this.balanceOf(userId)) };
    }
    const job = options.job ?? 'generation.run';
    try {
      await this.deps.queue.enqueue(job, { generationId: generation.id }, { jobId: runJobId(job, generation.id) });
    } catch (error) {
      // Accepted is accepted: the row and its hold are committed, and the database is the truth.
      // The worker's sweep queues pending rows that no job holds, so this answers with the id.
      this.deps.log.warn({ err: (error as Error).message, generationId: generation.id, job }, 'could not queue an accepted generation; the sweep will');
    }
    // Queued: the balance the hold's transaction read, milliseconds ago, saves a statement.
    return { ...accepted, balance: accepted.balanceAtHold ?? (await this.balanceOf(userId)) };
  }

  /**
   * Accepts a text request and streams it: the deltas (text, tool-call pieces) as the provider sends them, then the end
   * (charged once if it completes; if `signal` aborts, the client went away: the provider call
   * stops and nothing is charged). No deltas for a replay or a request refused at once.
   */
  async stream(caller: GenerationCaller, request: GenerateRequest, options: StartOptions, signal: AbortSignal): Promise<Streamed> {
    const resolved = await this.resolve(caller.user.id, request, options);
    if (resolved.model.category !== 'text' || !resolved.model.supportsStreaming) throw AppError.validation('stream', 'this model does not stream');
    const accepted = await this.accept(caller, resolved, options);
    if (accepted.replay || accepted.generation.status !== 'pending') return { ...accepted, balance: await this.balanceOf(caller.user.id), deltas: null };
    // Until the stream ends: the balance as the caller's row had it (the end brings the charged one).
    return { ...accepted, balance: tokenBalance(caller.user), deltas: this.streamRun(accepted.generation, accepted.model, signal) };
  }

  private async *streamRun(generation: Generation, model: CatalogModel, signal: AbortSignal): AsyncGenerator<StreamPart, StreamEnd> {
    const ended = yield* this.deps.runner.streamText(generation, model, signal);
    return { generation: ended.generation, balance: ended.balance ?? (await this.balanceOf(generation.userId)) };
  }

  /** The caller's generation as it stands, with their balance; another user's (or a deleted one) is 404. */
  async poll(userId: number, id: number): Promise<StreamEnd> {
    const generation = await this.get(userId, id);
    return { generation, balance: await this.balanceOf(userId) };
  }

  /**
   * Waits up to `timeoutMs` for the caller's generation to end, for a protocol that answers with
   * the result although the model runs as a queued job (OpenAI's images), and returns it as it
   * then stands. Still pending when the time ran out or `signal` aborted: it goes on and ends in
   * history as any other. Holds no worker slot (see end-waiter.ts); another user's id is 404.
   */
  async awaitEnd(userId: number, id: number, options: { timeoutMs: number; signal?: AbortSignal }): Promise<StreamEnd> {
    await this.get(userId, id);
    const generation = (await this.endWaiter.waitFor(id, options.timeoutMs, options.signal)) ?? (await this.get(userId, id));
    return { generation, balance: await this.balanceOf(userId) };
  }

  /** The request a generation was made with, as normalized at acceptance (its params with defaults filled). */
  requestOf(generation: Pick<Generation, 'input'>): Promise<GenerationInput> {
    return readInput(generation, this.deps.storage);
  }

  /** A pending generation becomes failed ("Cancelled") with its hold released; others stay as they are. */
  async cancel(userId: number, id: number): Promise<StreamEnd> {
    const generation = await this.get(userId, id);
    if (generation.status === 'pending' && (await this.deps.runner.fail(id, { message: CANCELLED, kind: 'cancelled' }))) {
      this.deps.log.info({ generationId: id }, 'generation cancelled');
    }
    return this.poll(userId, id);
  }

  /**
   * The caller's text generation as a later turn continues it: the messages it was sent (kept
   * with its input), the row with its answer as it stands, the tools that answer called (kept
   * with its result), and what its way in noted. Another user's, one deleted from history, or one
   * that is not text is 404.
   */
  async conversation(userId: number, id: number): Promise<Conversation> {
    const generation = await this.get(userId, id);
    if (generation.category !== 'text') throw new AppError('not_found');
    const input = await readInput(generation, this.deps.storage);
    // Only a completed answer called anything: a failed row's metadata says why it failed.
    const toolCalls = generation.status === 'completed' ? textEndOf(resultMetadataOf(generation)).toolCalls : [];
    return { generation, messages: input.messages ?? [], toolCalls, protocol: input.protocol ?? null };
  }

  /** The caller's generation; another user's, or one deleted from history, is 404. */
  async get(userId: number, id: number): Promise<Generation> {
    const generation = await this.deps.store.find(id);
    if (!generation || generation.userId !== userId || generation.hiddenAt) throw new AppError('not_found');
    return generation;
  }

  /** The user's generation made under this idempotency key (the bot's update keys too). */
  async findIdempotent(userId: number, key: string): Promise<Generation | null> {
    return this.deps.db.repo(Generation).findOneBy({ userId, idempotencyKey: key });
  }

  /** Average processing time of the model's completed generations. */
  async averageTime(model: CatalogModel): Promise<{ avgTimeMs: number | null; samples: number }> {
    const row = await this.deps.db
      .repo(Generation)
      .createQueryBuilder('g')
      .select('AVG(g.processing_ms)', 'avg')
      .addSelect('COUNT(*)', 'samples')
      .where('g.model_slug IN (:...slugs)', { slugs: [model.slug, ...model.aliases] })
      .andWhere('g.status = :status', { status: 'completed' })
      .andWhere('g.processing_ms IS NOT NULL')
      .getRawOne<{ avg: string | number | null; samples: string | number }>();
    const samples = Number(row?.samples ?? 0);
    return { avgTimeMs: samples > 0 && row?.avg !== null ? Math.round(Number(row?.avg)) : null, samples };
  }

  private async balanceOf(userId: number): Promise<number> {
    return (await this.deps.balances.balanceOf(userId)) ?? 0;
  }

  /** Applies the request's assistant (which the caller must have installed: 404 otherwise) and finds its model. */
  private async resolve(userId: number, original: GenerateRequest, options: Pick<StartOptions, 'category'>): Promise<Resolved> {
    const request =
      original.assistant_id && !original.assistant
        ? applyAssistant(original, await this.deps.assistants.requireInstalled(userId, original.assistant_id))
        : original;
    const model = this.model(request.model);
    if (options.category && model.category !== options.category) throw AppError.validation('model', `must be a ${options.category} model`);
    return { request, model };
  }

  private violatesPolicy(texts: string[]): boolean {
    return this.blocklist !== null && texts.some((t) => this.blocklist?.test(t));
  }

  private replayOf(existing: Generation, options: StartOptions, model: CatalogModel): Accepted {
    if (options.requestHash && existing.requestHash && existing.requestHash !== options.requestHash) {
      throw new AppError('validation_failed', {
        detail: 'Idempotency-Key was already used with a different request',
        errors: [{ field: 'Idempotency-Key', message: 'reused with a different body' }],
      });
    }
    return { generation: existing, model, replay: true, limits: null, balanceAtHold: null };
  }

  /** Everything up to the inserted, held, pending row. Does not run it. */
  private async accept(caller: GenerationCaller, { request, model }: Resolved, options: StartOptions): Promise<Accepted> {
    const { limiter, inputs, runner, store, storage } = this.deps;
    if (!this.deps.plans.allows(caller.plan.name, model.minPlan)) throw new AppError('insufficient_plan');
    const input = normalizeInput(model, withDefaultImageSize(model, request, caller.user.defaultImageSize));
    const price = priceOf(model, input.params);
    const now = this.deps.clock();
    const userId = caller.user.id;

    let staleKeyRow: number | null = null;
    if (options.idempotencyKey) {
      const existing = await this.findIdempotent(userId, options.idempotencyKey);
      if (existing && now.getTime() - existing.createdAt.getTime() < IDEMPOTENCY_WINDOW_MS) return this.replayOf(existing, options, model);
      staleKeyRow = existing?.id ?? null;
    }

    const limit = await limiter.consume(userId, caller.plan);
    if (!limit.ok) {
      throw new AppError('rate_limited', {
        extra: { retry_after: limit.retryAfter },
        headers: { 'Retry-After': String(limit.retryAfter) },
      });
    }

    // Media are fetched now, so a URL that cannot be read (or that the provider would refuse) is
    // a 422 and nothing is held or counted.
    try {
      for (const name of URL_PARAMS) {
        const value = input.params[name];
        if (typeof value === 'string') input.params[name] = await inputs.intake(value, name);
      }
      const problem = await runner.checkInput(model, input.params, (url) => inputs.fetch(url, AbortSignal.timeout(INPUT_CHECK_READ_MS)));
      if (problem) throw AppError.validation(problem.field, problem.message);
    } catch (error) {
      await limiter.refund(userId, caller.plan);
      throw error;
    }
    const row = pendingGeneration({
      userId,
      modelSlug: model.slug,
      category: model.category,
      source: options.source,
      prompt: (input.prompt ?? '').slice(0, PROMPT_HISTORY_LENGTH),
      input: await serializeInput(options.protocol ? { ...input, protocol: options.protocol } : input, storage),
      price,
      seed: typeof input.params.seed === 'number' ? input.params.seed : null,
      etaSeconds: model.sync ? null : model.etaSeconds,
      idempotencyKey: options.idempotencyKey ?? null,
      requestHash: options.requestHash ?? null,
      scheduleId: options.scheduleId ?? null,
      assistantId: request.assistant_id ?? null,
      createdAt: now,
    });
    let held: HeldInsert;
    try {
      held = await store.insertHeld(row, staleKeyRow);
    } catch (error) {
      await limiter.refund(userId, caller.plan);
      if (options.idempotencyKey && isDuplicateKey(error)) {
        const existing = await this.findIdempotent(userId, options.idempotencyKey);
        if (existing) return this.replayOf(existing, options, model);
      }
      throw error;
    }
    if (!held.held) {
      await limiter.refund(userId, caller.plan);
      const user = await this.deps.db.repo(User).findOneByOrFail({ id: userId });
      throw new AppError('insufficient_tokens', { extra: { price, available: freeBalance(user) } });
    }
    row.id = held.id;
    // The request's later log lines (and the jobs it queues) carry the generation's id.
    bindGeneration(row.id);
    let generation: Generation = row;
    if (this.violatesPolicy(userTexts(input))) generation = (await runner.fail(generation.id, { message: CONTENT_POLICY_ERROR, kind: 'content_policy' })) ?? generation;
    return { generation, model, replay: false, limits: limit.snapshot, balanceAtHold: held.balance };
  }
}
