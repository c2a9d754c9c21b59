/**
 * The small interfaces every provider adapter implements, one per capability. Adapters are
 * stateless: they get what they need per call (the upstream model id, params, an abort signal),
 * return files as bytes plus metadata, and fail with a typed ProviderError.
 */

export type ProviderErrorKind = 'refused' | 'rate_limited' | 'unavailable' | 'bad_request' | 'timeout';

export class ProviderError extends Error {
  constructor(
    readonly kind: ProviderErrorKind,
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'ProviderError';
  }

  /** Worth another try (by the job's retries, or once more within a sync request's timeout). */
  get transient(): boolean {
    return this.kind === 'rate_limited' || this.kind === 'unavailable' || this.kind === 'timeout';
  }
}

/**
 * Work an asynchronous upstream already started for this generation (`<provider>:<id>`), kept on
 * the row across job retries and worker crashes, so a new run resumes it rather than pay twice.
 */
export interface UpstreamRef {
  previous: string | null;
  save(ref: string): Promise<void>;
}

export interface CallOptions {
  signal: AbortSignal;
  /** 0–100, for pending status polling. */
  onProgress?: (percent: number) => void;
  /** Queued runs only: where to resume, and where to record what was started. */
  upstreamRef?: UpstreamRef;
}

export interface FileOutput {
  bytes: Buffer;
  contentType: string;
  /** Without the dot: `webp`, `mp4`, `mp3`. */
  extension: string;
}

export type ContentPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

/**
 * A call of a tool the model asked for (OpenAI's chat shape, which the domain's messages speak):
 * `arguments` is the JSON text the model wrote, not parsed, as every protocol passes it on.
 */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/**
 * One message of a conversation. An assistant message that called tools carries `tool_calls`
 * (its content may then be null); a `tool` message answers one of those calls by its id.
 */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | ContentPart[] | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
}

/** A tool the model may call: a function with a JSON Schema of its arguments. */
export interface ToolDefinition {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean };
}

/** Whether the model may (`auto`), must (`required`, or this function) or must not (`none`) call a tool. */
export type ToolChoice = 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };

/** The shape of the answer: free text, any JSON object, or JSON matching a schema. */
export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; json_schema: { name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean } };

/** Why the model stopped: it ended (or hit a stop sequence), ran out of tokens, called tools, or was filtered. */
export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

/**
 * What a text request may ask beyond the conversation, each only when given. A provider that can
 * honours `stop`; tools and response formats reach only models whose catalog entry declares them
 * (`supports_tools`, `supports_response_format`), checked at acceptance.
 */
export interface TextOptions {
  /** Up to 4 sequences; the answer ends before the first one that appears. */
  stop?: string[];
  tools?: ToolDefinition[];
  toolChoice?: ToolChoice;
  responseFormat?: ResponseFormat;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface TextRequest extends TextOptions {
  upstreamModel: string;
  messages: ChatMessage[];
  temperature: number;
  maxTokens: number | null;
  maxContext: number | null;
}

export interface TextResult {
  /** The answer's text; empty when the model only called tools. */
  content: string;
  /** The tools the model called, in order (empty when none). */
  toolCalls: ToolCall[];
  finishReason: FinishReason;
  /**
   * The stop sequence that ended the answer, when the provider says which (the built-in demo
   * does; OpenAI's API only says `stop`). Protocols that report it (Anthropic's `stop_sequence`)
   * read it from here; nothing is guessed when it is absent.
   */
  stopSequence?: string;
  usage: Usage;
}

/**
 * A piece of tool call `index` as a stream sends it: its first piece has the id and the name, the
 * arguments' JSON text comes in pieces to be joined.
 */
export interface ToolCallDelta {
  index: number;
  id?: string;
  name?: string;
  arguments?: string;
}

/** What a text stream yields: text, a piece of a tool call, why it finished, and the usage last. */
export type TextChunk = { delta: string } | { toolCall: ToolCallDelta } | { finish: FinishReason; stopSequence?: string } | { usage: Usage };

export interface TextProvider {
  complete(request: TextRequest, options: CallOptions): Promise<TextResult>;
  stream(request: TextRequest, options: CallOptions): AsyncIterable<TextChunk>;
}

export interface ImageRequest {
  upstreamModel: string;
  prompt: string;
  negativePrompt: string | null;
  width: number;
  height: number;
  /** As asked (`16:9`) for families that take ratios rather than sizes. */
  aspectRatio: string | null;
  format: 'webp' | 'png' | 'jpeg';
  quality: 'standard' | 'hd';
  style: string | null;
  seed: number;
  inputImage: Buffer | null;
}

export interface ImageResult {
  file: FileOutput;
  width: number;
  height: number;
  seed: number;
}

export interface ImageProvider {
  generate(request: ImageRequest, options: CallOptions): Promise<ImageResult>;
}

export interface VideoRequest {
  upstreamModel: string;
  prompt: string;
  negativePrompt: string | null;
  durationSeconds: number;
  aspectRatio: string;
  /** e.g. `480p`, `720p`, `1080p`. */
  resolution: string;
  seed: number;
  startImage: Buffer | null;
}

export interface VideoResult {
  file: FileOutput;
  thumbnail: FileOutput | null;
  width: number;
  height: number;
  durationSeconds: number;
}

export interface VideoProvider {
  generate(request: VideoRequest, options: CallOptions): Promise<VideoResult>;
}

export interface SpeechRequest {
  upstreamModel: string;
  text: string;
  voice: string;
  speed: number;
  format: 'mp3' | 'wav' | 'ogg';
}

export interface SpeechResult {
  file: FileOutput;
  durationSeconds: number;
}

export interface SpeechProvider {
  synthesize(request: SpeechRequest, options: CallOptions): Promise<SpeechResult>;
}

export interface TranscriptionRequest {
  upstreamModel: string;
  audio: Buffer;
  /** ISO 639-1, or null to detect. */
  language: string | null;
  diarize: boolean;
}

export interface TranscriptionResult {
  text: string;
  language: string;
  durationSeconds: number;
}

export interface TranscriptionProvider {
  transcribe(request: TranscriptionRequest, options: CallOptions): Promise<TranscriptionResult>;
}

export interface MusicRequest {
  upstreamModel: string;
  prompt: string;
  lyrics: string | null;
  instrumental: boolean;
  durationSeconds: number;
  format: 'mp3' | 'wav';
  seed: number;
}

export interface MusicResult {
  file: FileOutput;
  durationSeconds: number;
}

export interface MusicProvider {
  compose(request: MusicRequest, options: CallOptions): Promise<MusicResult>;
}

export interface ToolRequest {
  upstreamModel: string;
  /** The tool's own slug, e.g. `remove-bg`. */
  tool: string;
  prompt: string | null;
  image: Buffer;
  /** Second image: the target of face-swap (whose face is replaced), the mask of inpaint. */
  secondImage: Buffer | null;
  params: Record<string, unknown>;
}

export type ToolResult = { kind: 'image'; file: FileOutput; width: number; height: number } | { kind: 'text'; text: string };

export interface ToolProvider {
  run(request: ToolRequest, options: CallOptions): Promise<ToolResult>;
}

/** One configured upstream (or the built-in local one): whatever capabilities it has. */
/** A request's inputs, for an adapter's check at acceptance (`read` fetches a URL param's bytes). */
export interface InputCheck {
  upstreamModel: string;
  params: Readonly<Record<string, unknown>>;
  read(url: string): Promise<Buffer>;
}

export interface InputProblem {
  field: string;
  message: string;
}

export interface ProviderAdapter {
  name: string;
  /**
   * Whether this adapter can serve one upstream model of a capability it has (a local tool whose
   * engine is missing, say). Absent: every model of its capabilities.
   */
  serves?(upstreamModel: string): boolean;
  /** Ends worker threads and warm engines at shutdown. */
  close?(): Promise<void>;
  /**
   * Refuses at acceptance, before anything is held, a request this adapter would refuse later
   * (a local engine's size caps, say): the field at fault and why, or null.
   */
  checkInput?(request: InputCheck): Promise<InputProblem | null>;
  text?: TextProvider;
  image?: ImageProvider;
  video?: VideoProvider;
  speech?: SpeechProvider;
  transcription?: TranscriptionProvider;
  music?: MusicProvider;
  tool?: ToolProvider;
}
