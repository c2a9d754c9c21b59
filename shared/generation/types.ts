/** What the generation domain's parts and its callers share (here, so they need not import each other). */
import type { CatalogModel, Category } from '../catalog/types';
import type { Generation, GenerationSource, User } from '../db/entities';
import type { LimitSnapshot } from '../limits';
import type { Plan } from '../plans';
import type { ChatMessage, FileOutput, ProviderErrorKind, ToolCall, ToolCallDelta, Usage } from '../providers/types';

/** Who asks: the account and the plan in force. */
export interface GenerationCaller {
  user: User;
  plan: Plan;
}

/** The jobs that run a generation in the background. */
export type RunJob = 'generation.run' | 'bot.chat';

export interface StartOptions {
  idempotencyKey?: string;
  /** SHA-256 of the request, to tell a replay from a reused key. */
  requestHash?: string;
  source: GenerationSource;
  /** The category the caller serves (a chat endpoint takes text models only): another is 422 on `model`. */
  category?: Category;
  scheduleId?: number | null;
  /** Aborts a run in the call (the client went away). */
  signal?: AbortSignal;
  /**
   * `request` (the default): a synchronous model runs in the call, others are queued.
   * `background`: always queued (the bot answers in a chat, not in its update handler).
   */
  runIn?: 'request' | 'background';
  /** The job a queued run is (default `generation.run`; the bot's chat turns stream from `bot.chat`). */
  job?: RunJob;
  /**
   * Called with a pending row just before it runs or is queued (to record where its result
   * goes). False: it is under way already (a redelivered update), so it is neither run nor queued.
   */
  beforeRun?: (generation: Generation, model: CatalogModel) => Promise<boolean | void>;
  /**
   * What a protocol's way in keeps with the request to answer about the generation later (the
   * Responses API's instructions, `store`, metadata): stored with the input, handed back by
   * `Generations.conversation`. The domain never reads it.
   */
  protocol?: ProtocolRecord;
}

/** A way in's own notes on a generation (StartOptions.protocol), as JSON. */
export type ProtocolRecord = Record<string, unknown>;

/** A text generation as a later turn continues it: what the model was sent, and the row (its answer, its tool calls) as it stands. */
export interface Conversation {
  generation: Generation;
  /** The messages exactly as the model was sent them, system messages included. */
  messages: ChatMessage[];
  /**
   * The tools its answer called (kept with the result, `result_metadata.tool_calls`), in order;
   * empty when it called none or has no answer. A later turn sends them as the assistant's
   * `tool_calls`, which the tools' answers then name.
   */
  toolCalls: ToolCall[];
  /** What its way in kept with it (StartOptions.protocol); null when it kept nothing. */
  protocol: ProtocolRecord | null;
}

/** A generation as `start` leaves it. */
export interface Started {
  generation: Generation;
  model: CatalogModel;
  /** True when an Idempotency-Key replay returned an earlier generation. */
  replay: boolean;
  /** The limit windows after this request, for the response headers (null for a replay). */
  limits: LimitSnapshot | null;
  /** The owner's balance: after this call's charge, or as the caller's account was read. */
  balance: number;
}

/** A generation's end as a stream reports it. */
export interface StreamEnd {
  generation: Generation;
  balance: number;
}

/**
 * What a stream yields as it comes: text, or a piece of a tool call (the first piece of call
 * `index` has its id and name, then its arguments' JSON arrives in pieces). Why it finished and
 * the whole tool calls are in the ended generation's result metadata (tool-calls.ts).
 */
export type StreamPart = string | ToolCallDelta;

/** A streamed generation: the text as it comes, then its end; no deltas when there is nothing to run. */
export interface Streamed extends Started {
  deltas: AsyncGenerator<StreamPart, StreamEnd> | null;
}

/** A generation as a run left it, with its owner's balance when this run charged it. */
export interface Ended {
  generation: Generation;
  balance: number | null;
}

/**
 * Why a generation failed, kept with it (`result_metadata.failure`): the provider's own kinds,
 * the content policy, a cancel, a run cut short by a restart, or a fault of ours.
 */
export type FailureKind = ProviderErrorKind | 'content_policy' | 'cancelled' | 'interrupted' | 'internal';

/** What a provider call produced, before it is stored. */
export interface Outcome {
  provider: string;
  resultText: string | null;
  file: FileOutput | null;
  thumbnail: FileOutput | null;
  metadata: Record<string, unknown>;
  usage: Usage | null;
  seed: number | null;
}

/** Reads a user-supplied URL (http(s), data:, or one of our own result URLs) into bytes. */
export interface InputFetcher {
  fetch(url: string, signal: AbortSignal): Promise<Buffer>;
}

/** A job that could not start now and should run again later, under a job id of its own. */
export interface DeferredRun {
  delayMs: number;
  jobId: string;
}

/** What the end of a generation came with, besides the row. */
export interface EndFacts {
  /** Whether the owner has an active webhook, when the completion read it; null when not read. */
  hasWebhooks: boolean | null;
}

/** Listeners told when a generation ends (the bot and webhooks subscribe). */
export type GenerationEndListener = (generation: Generation, facts: EndFacts) => void;
