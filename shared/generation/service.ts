/**
 * The generate pipeline: resolve the model → plan gate → validate → price → plan limit → hold the
 * price and insert the row in one transaction → run (synchronous models) or enqueue.
 */
import sharp from 'sharp';
import type { Catalog } from '../catalog';
import { checkUpscaleInput } from '../providers/local/tools';
import { priceOf } from '../catalog/pricing';
import type { CatalogModel } from '../catalog/types';
import type { Clock } from '../clock';
import type { Database } from '../db/database';
import { Generation, GenerationSource, User } from '../db/entities';
import { AppError } from '../errors';
import type { GenerationLimiter, LimitSnapshot } from '../limits';
import type { Logger } from '../log';
import type { Plan, PlanTable } from '../plans';
import type { Queue } from '../queue/types';
import type { Storage } from '../storage';
import { applyAssistant, GenerateRequest, GenerationInput, normalizeInput, userTexts } from './input';
import type { Assistants } from '../assistants';
import { normalizeParams } from './params';
import type { MediaInputs } from './media-inputs';

/** Params that name media the service will fetch. */
const URL_PARAMS = ['image_url', 'audio_url', 'target_image_url', 'mask_url'];
import { CANCELLED, GenerationRunner } from './runner';
import { serializeInput } from './stored-input';
import { isDuplicateKey } from '../db/errors';
import { GenerationStore, HeldInsert, pendingGeneration } from './store';

export interface GenerationCaller {
  user: User;
  plan: Plan;
}

export interface StartOptions {
  idempotencyKey?: string;
  /** SHA-256 of the request, to tell a replay from a reused key. */
  requestHash?: string;
  source: GenerationSource;
  scheduleId?: number | null;
  /** Aborts a synchronous run (the client went away). */
  signal?: AbortSignal;
  /** Called with the accepted pending row before it runs (e.g. to record where its result goes). */
  beforeRun?: (generation: Generation) => Promise<void>;
}

export interface Accepted {
  generation: Generation;
  model: CatalogModel;
  /** True when an Idempotency-Key replay returned an earlier generation. */
  replay: boolean;
  /** The limit windows after this request, for the response headers. */
  limits: LimitSnapshot | null;
  /** The owner's balance right after this request charged the generation (a synchronous run). */
  balance?: number | null;
}

export const IDEMPOTENCY_WINDOW_MS = 24 * 3600 * 1000;
export const CONTENT_POLICY_ERROR = 'Content policy violation';
const PROMPT_HISTORY_LENGTH = 4000;


export function parseGenerationId(raw: string | number | undefined): number {
  const text = String(raw ?? '');
  const match = /^(?:gen_)?([1-9][0-9]{0,9})$/.exec(text);
  const id = match ? Number(match[1]) : NaN;
  if (!Number.isSafeInteger(id) || id > 2_147_483_647) throw new AppError('not_found');
  return id;
}

export class Generations {
  private readonly blocklist: RegExp | null;

  constructor(
    private readonly db: Database,
    private readonly store: GenerationStore,
    private readonly catalog: Catalog,
    private readonly plans: PlanTable,
    private readonly limiter: GenerationLimiter,
    private readonly queue: Queue,
    readonly runner: GenerationRunner,
    private readonly storage: Storage,
    private readonly inputs: MediaInputs,
    private readonly assistants: Assistants,
    private readonly clock: Clock,
    blocklist: string[],
    private readonly log: Logger,
  ) {
    const words = blocklist.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).filter(Boolean);
    this.blocklist = words.length ? new RegExp(`(^|[^\\p{L}\\p{N}_])(${words.join('|')})(?=$|[^\\p{L}\\p{N}_])`, 'iu') : null;
  }

  /** The offered model for a slug; unknown (or not configured here) is 404. */
  model(slug: string | undefined): CatalogModel {
    if (!slug) throw AppError.validation('model', 'is required');
    const model = this.catalog.find(slug);
    if (!model) throw new AppError('not_found', { detail: `Unknown model: ${slug}` });
    return model;
  }

  /** Validates and prices a request without running it (the price calculator uses this too). */
  quote(model: CatalogModel, request: GenerateRequest): { input: GenerationInput; price: number } {
    const input = normalizeInput(model, request);
    return { input, price: priceOf(model, input.params) };
  }

  /**
   * The price of a request's params alone (calculate-price): params are validated and defaults
   * filled, but the prompt or messages a real request needs are not required.
   */
  quoteParams(model: CatalogModel, request: GenerateRequest): { params: Record<string, unknown>; price: number } {
    const params = normalizeParams(model, request.topLevel, request.params ?? {});
    return { params, price: priceOf(model, params) };
  }

  private violatesPolicy(input: GenerationInput): boolean {
    return this.blocklist !== null && userTexts(input).some((t) => this.blocklist?.test(t));
  }

  /** The user's generation made under this idempotency key (the bot's update keys too). */
  async findIdempotent(userId: number, key: string): Promise<Generation | null> {
    return this.db.repo(Generation).findOneBy({ userId, idempotencyKey: key });
  }

  private replayOf(existing: Generation, options: StartOptions, model: CatalogModel): Accepted {
    if (options.requestHash && existing.requestHash && existing.requestHash !== options.requestHash) {
      throw new AppError('validation_failed', {
        detail: 'Idempotency-Key was already used with a different request',
        errors: [{ field: 'Idempotency-Key', message: 'reused with a different body' }],
      });
    }
    return { generation: existing, model, replay: true, limits: null };
  }

  /** Applies the request's assistant (which the caller must have installed: 404 otherwise). */
  async prepare(userId: number, request: GenerateRequest): Promise<GenerateRequest> {
    if (!request.assistant_id || request.assistant) return request;
    return applyAssistant(request, await this.assistants.requireInstalled(userId, request.assistant_id));
  }

  /** Everything up to the inserted, held, pending row. Does not run it. */
  async accept(caller: GenerationCaller, original: GenerateRequest, options: StartOptions): Promise<Accepted> {
    const request = await this.prepare(caller.user.id, original);
    const model = this.model(request.model);
    if (!this.plans.allows(caller.plan.name, model.minPlan)) throw new AppError('insufficient_plan');
    const { input, price } = this.quote(model, request);
    const now = this.clock();
    const userId = caller.user.id;

    let staleKeyRow: number | null = null;
    if (options.idempotencyKey) {
      const existing = await this.findIdempotent(userId, options.idempotencyKey);
      if (existing && now.getTime() - existing.createdAt.getTime() < IDEMPOTENCY_WINDOW_MS) return this.replayOf(existing, options, model);
      staleKeyRow = existing?.id ?? null;
    }

    const limit = await this.limiter.consume(userId, caller.plan);
    if (!limit.ok) {
      throw new AppError('rate_limited', {
        extra: { retry_after: limit.retryAfter },
        headers: { 'Retry-After': String(limit.retryAfter) },
      });
    }

    // Media are fetched now, so a URL that cannot be read is a 422 and nothing is held or counted.
    try {
      for (const name of URL_PARAMS) {
        const value = input.params[name];
        if (typeof value === 'string') input.params[name] = await this.inputs.intake(value, name);
      }
      const localUpscale = model.upstreamModel === 'upscale-esrgan' && this.runner.firstProvider(model) === 'local';
      if (localUpscale && typeof input.params.image_url === 'string') {
        // The local upscaler's pixel caps keep a request within seconds: refuse larger inputs up front.
        const bytes = await this.inputs.fetch(input.params.image_url, AbortSignal.timeout(10_000));
        const { width = 0, height = 0 } = await sharp(bytes).metadata().catch(() => ({ width: 0, height: 0 }));
        const scale = input.params.scale === 4 ? 4 : 2;
        const problem = checkUpscaleInput(width, height, scale);
        if (problem) throw AppError.validation('image_url', problem);
      }
    } catch (error) {
      await this.limiter.refund(userId, caller.plan);
      throw error;
    }
    const storedInput = await serializeInput(input, this.storage);
    const row = pendingGeneration({
      userId,
      modelSlug: model.slug,
      category: model.category,
      source: options.source,
      prompt: (input.prompt ?? '').slice(0, PROMPT_HISTORY_LENGTH),
      input: storedInput,
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
      held = await this.store.insertHeld(row, staleKeyRow);
    } catch (error) {
      await this.limiter.refund(userId, caller.plan);
      if (options.idempotencyKey && isDuplicateKey(error)) {
        const existing = await this.findIdempotent(userId, options.idempotencyKey);
        if (existing) return this.replayOf(existing, options, model);
      }
      throw error;
    }
    if (!held.held) {
      await this.limiter.refund(userId, caller.plan);
      const user = await this.db.repo(User).findOneByOrFail({ id: userId });
      throw new AppError('insufficient_tokens', {
        extra: { price, available: Math.max(0, user.subscriptionTokens + user.bonusTokens - user.heldTokens) },
      });
    }
    row.id = held.id;
    let generation: Generation = row;

    if (this.violatesPolicy(input)) {
      generation = (await this.runner.fail(generation.id, CONTENT_POLICY_ERROR)) ?? generation;
    }
    return { generation, model, replay: false, limits: limit.snapshot };
  }

  /** Accepts, then runs a synchronous model in the request or queues an asynchronous one. */
  async start(caller: GenerationCaller, request: GenerateRequest, options: StartOptions): Promise<Accepted> {
    const accepted = await this.accept(caller, await this.prepare(caller.user.id, request), options);
    if (accepted.replay || accepted.generation.status !== 'pending') return accepted;
    const { generation, model } = accepted;
    await options.beforeRun?.(generation);
    if (model.sync) {
      const ended = await this.runner.runSync(generation, model, options.signal);
      return { ...accepted, generation: ended.generation, balance: ended.balance };
    }
    await this.queue.enqueue('generation.run', { generationId: generation.id }, { jobId: `gen-${generation.id}` });
    return accepted;
  }

  /** The caller's generation; another user's, or one deleted from history, is 404. */
  async get(userId: number, id: number): Promise<Generation> {
    const generation = await this.store.find(id);
    if (!generation || generation.userId !== userId || generation.hiddenAt) throw new AppError('not_found');
    return generation;
  }

  /** A pending generation becomes failed ("Cancelled") with its hold released; others stay as they are. */
  async cancel(userId: number, id: number): Promise<Generation> {
    const generation = await this.get(userId, id);
    if (generation.status === 'pending') {
      await this.runner.fail(id, CANCELLED);
      this.log.info({ generationId: id }, 'generation cancelled');
    }
    return this.get(userId, id);
  }

  /** Average processing time of the model's completed generations. */
  async averageTime(model: CatalogModel): Promise<{ avgTimeMs: number | null; samples: number }> {
    const row = await this.db
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
}
