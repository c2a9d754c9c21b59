/**
 * A controllable in-process provider for pipeline tests: each call takes the next scripted
 * behaviour (succeed, refuse, fail transiently, hang, be slow), defaulting to success.
 */
import type {
  CallOptions,
  ImageRequest,
  ImageResult,
  MusicRequest,
  MusicResult,
  SpeechRequest,
  SpeechResult,
  ToolRequest,
  ToolResult,
  TranscriptionRequest,
  TranscriptionResult,
  ProviderAdapter,
  TextChunk,
  TextRequest,
  TextResult,
  ToolCall,
  VideoRequest,
  VideoResult,
} from '../../shared/providers/types';
import { ProviderError } from '../../shared/providers/types';
import { cutAtStop } from '../../shared/providers/stop-sequences';

export type Behaviour =
  // `waitFor`: the call finishes only once this settles too (a test's gate, not a clock).
  | { kind: 'succeed'; delayMs?: number; waitFor?: Promise<unknown> }
  | { kind: 'refuse'; message: string }
  | { kind: 'unavailable'; message?: string }
  | { kind: 'rate_limited'; retryAfterMs?: number }
  | { kind: 'hang' }
  | { kind: 'crash' };

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    // The listener goes when the wait ends, so a long stream does not pile them up on one signal.
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

// A 1×1 transparent PNG: real bytes for the image and thumbnail files.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');

export class FakeProvider {
  readonly calls: Array<{ capability: string; request: unknown }> = [];
  /** Why each hanging call was stopped (its abort reason), in order. */
  readonly aborts: string[] = [];
  private readonly script: Behaviour[] = [];
  /** Text the fake answers with; the words are streamed one by one (cut at a stop sequence, as models do, saying which). */
  reply = 'Hello from the fake model';
  /**
   * Calls the fake makes instead of answering, when the request offers tools (and does not say
   * `none`) and its last message is not already a tool's answer; streamed as id and name, then
   * the arguments in two pieces.
   */
  toolCalls: ToolCall[] = [];

  constructor(readonly name = 'fake') {}

  next(...behaviours: Behaviour[]): this {
    this.script.push(...behaviours);
    return this;
  }

  reset(): void {
    this.script.length = 0;
    this.calls.length = 0;
    this.aborts.length = 0;
    this.reply = 'Hello from the fake model';
    this.toolCalls = [];
  }

  private callsFor(request: TextRequest): ToolCall[] {
    const offered = (request.tools?.length ?? 0) > 0 && request.toolChoice !== 'none';
    return offered && request.messages.at(-1)?.role !== 'tool' ? this.toolCalls : [];
  }

  private async behave(options: CallOptions): Promise<void> {
    const behaviour = this.script.shift() ?? { kind: 'succeed' };
    switch (behaviour.kind) {
      case 'succeed':
        if (behaviour.delayMs) await sleep(behaviour.delayMs, options.signal);
        if (behaviour.waitFor) await behaviour.waitFor;
        return;
      case 'refuse':
        throw new ProviderError('refused', behaviour.message);
      case 'unavailable':
        throw new ProviderError('unavailable', behaviour.message ?? 'upstream is down');
      case 'rate_limited':
        throw new ProviderError('rate_limited', 'upstream rate limit', behaviour.retryAfterMs);
      case 'hang':
        await sleep(3_600_000, options.signal).catch((error: unknown) => {
          this.aborts.push(error instanceof Error ? error.message : String(error));
          throw error;
        });
        return;
      case 'crash':
        throw new Error('fake provider bug');
    }
  }

  adapter(): ProviderAdapter {
    return {
      name: this.name,
      text: {
        complete: async (request: TextRequest, options: CallOptions): Promise<TextResult> => {
          this.calls.push({ capability: 'text', request });
          await this.behave(options);
          const calls = this.callsFor(request);
          const cut = cutAtStop(this.reply, request.stop);
          const content = calls.length > 0 ? '' : cut.text;
          const words = content === '' ? calls.length : content.split(' ').length;
          return {
            content,
            toolCalls: calls,
            finishReason: calls.length > 0 ? 'tool_calls' : 'stop',
            // Like the demo model, it says which stop sequence ended its answer.
            ...(calls.length === 0 && cut.sequence !== undefined ? { stopSequence: cut.sequence } : {}),
            usage: { prompt_tokens: 3, completion_tokens: words, total_tokens: 3 + words },
          };
        },
        stream: (request: TextRequest, options: CallOptions): AsyncIterable<TextChunk> => {
          this.calls.push({ capability: 'text.stream', request });
          const behave = () => this.behave(options);
          const calls = this.callsFor(request);
          const cut = cutAtStop(this.reply, request.stop);
          const words = calls.length > 0 ? [] : cut.text.split(' ');
          const stopSequence = calls.length === 0 ? cut.sequence : undefined;
          return (async function* (): AsyncGenerator<TextChunk> {
            await behave();
            for (let i = 0; i < words.length; i++) {
              await sleep(5, options.signal);
              yield { delta: (i === 0 ? '' : ' ') + words[i] };
            }
            for (const [index, call] of calls.entries()) {
              const half = Math.ceil(call.function.arguments.length / 2);
              yield { toolCall: { index, id: call.id, name: call.function.name } };
              yield { toolCall: { index, arguments: call.function.arguments.slice(0, half) } };
              yield { toolCall: { index, arguments: call.function.arguments.slice(half) } };
            }
            yield stopSequence !== undefined ? { finish: 'stop', stopSequence } : { finish: calls.length > 0 ? 'tool_calls' : 'stop' };
            const completion = words.length + calls.length;
            yield { usage: { prompt_tokens: 3, completion_tokens: completion, total_tokens: 3 + completion } };
          })();
        },
      },
      image: {
        generate: async (request: ImageRequest, options: CallOptions): Promise<ImageResult> => {
          this.calls.push({ capability: 'image', request });
          await this.behave(options);
          return { file: { bytes: PNG, contentType: 'image/png', extension: 'png' }, width: request.width, height: request.height, seed: request.seed };
        },
      },
      video: {
        generate: async (request: VideoRequest, options: CallOptions): Promise<VideoResult> => {
          this.calls.push({ capability: 'video', request });
          options.onProgress?.(50);
          await this.behave(options);
          return {
            file: { bytes: Buffer.from('fake mp4 bytes'), contentType: 'video/mp4', extension: 'mp4' },
            thumbnail: { bytes: PNG, contentType: 'image/png', extension: 'png' },
            width: 1280,
            height: 720,
            durationSeconds: request.durationSeconds,
          };
        },
      },
      speech: {
        synthesize: async (request: SpeechRequest, options: CallOptions): Promise<SpeechResult> => {
          this.calls.push({ capability: 'speech', request });
          await this.behave(options);
          return { file: { bytes: Buffer.from('fake audio'), contentType: 'audio/mpeg', extension: request.format }, durationSeconds: 1.5 };
        },
      },
      transcription: {
        transcribe: async (request: TranscriptionRequest, options: CallOptions): Promise<TranscriptionResult> => {
          this.calls.push({ capability: 'transcription', request });
          await this.behave(options);
          return { text: request.diarize ? '[Speaker 1]: hello\n[Speaker 2]: hi' : 'hello world', language: request.language ?? 'en', durationSeconds: 2 };
        },
      },
      music: {
        compose: async (request: MusicRequest, options: CallOptions): Promise<MusicResult> => {
          this.calls.push({ capability: 'music', request });
          await this.behave(options);
          return { file: { bytes: Buffer.from('fake music'), contentType: 'audio/mpeg', extension: request.format }, durationSeconds: request.durationSeconds };
        },
      },
      tool: {
        run: async (request: ToolRequest, options: CallOptions): Promise<ToolResult> => {
          this.calls.push({ capability: 'tool', request });
          await this.behave(options);
          if (request.tool === 'ocr') return { kind: 'text', text: 'recognized text' };
          return { kind: 'image', file: { bytes: PNG, contentType: 'image/png', extension: 'png' }, width: 1, height: 1 };
        },
      },
    };
  }
}

/** A provider that is always down, for fallback tests. */
export function downProvider(name = 'down'): ProviderAdapter {
  const fail = async (): Promise<never> => {
    throw new ProviderError('unavailable', `${name} is down`);
  };
  return {
    name,
    text: {
      complete: fail,
      stream: () => ({
        [Symbol.asyncIterator]: () => ({ next: fail }),
      }),
    },
  };
}

/** How many image calls are in flight now, and the most there ever were at once. */
export interface Flight {
  now: number;
  max: number;
  /** Settles once `count` calls are in flight at the same time. */
  reached(count: number): Promise<void>;
}

/** The fake's adapter with its image calls counted while in flight (for concurrency limits). */
export function countingImageCalls(fake: FakeProvider): { adapter: ProviderAdapter; flight: Flight } {
  const waiting: Array<{ count: number; settle: () => void }> = [];
  const flight: Flight = {
    now: 0,
    max: 0,
    reached: (count) => (flight.now >= count ? Promise.resolve() : new Promise((settle) => waiting.push({ count, settle }))),
  };
  const image = fake.adapter().image as NonNullable<ProviderAdapter['image']>;
  const adapter: ProviderAdapter = {
    ...fake.adapter(),
    image: {
      generate: async (request: ImageRequest, options) => {
        flight.now++;
        flight.max = Math.max(flight.max, flight.now);
        for (const waiter of waiting.filter((w) => flight.now >= w.count)) {
          waiting.splice(waiting.indexOf(waiter), 1);
          waiter.settle();
        }
        try {
          return await image.generate(request, options);
        } finally {
          flight.now--;
        }
      },
    },
  };
  return { adapter, flight };
}
