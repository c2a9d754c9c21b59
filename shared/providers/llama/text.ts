/**
 * Text generation with the operator's GGUF model: the conversation is laid out by the model's own
 * chat template (node-llama-cpp picks the chat wrapper from the file's `tokenizer.chat_template`)
 * and generated on the one context sequence this process has, one generation at a time.
 *
 * Usage is counted in the model's tokens: `prompt_tokens` is the whole templated conversation as
 * the tokenizer splits it, `completion_tokens` the tokens the model generated. The sequence keeps
 * what it evaluated, so a follow-up turn of the same conversation re-uses the common prefix.
 * Stop sequences are llama.cpp's custom stop triggers; a reply cut by `max_tokens` finishes with
 * `length`. Tools and response formats are not offered (the catalog declares neither).
 */
import { abortError } from '../abort';
import { ProviderError } from '../types';
import type { CallOptions, ChatMessage, TextChunk, TextProvider, TextRequest, TextResult } from '../types';
import { Mutex } from './mutex';
import type { LlamaChatHistoryItem, LlamaContextSequence, LlamaModel, LlamaModule } from './runtime';

/** Reply length when the request sets no `max_tokens`: a few paragraphs, about a minute on 2 cores for a 1–3B model. */
export const DEFAULT_MAX_TOKENS = 512;

/** What the provider generates with, once the model is loaded. */
export interface LlamaSession {
  lib: LlamaModule;
  model: LlamaModel;
  sequence: LlamaContextSequence;
}

function textOf(message: ChatMessage): string {
  // The catalog declares no tool support for this model, so acceptance refuses tool conversations.
  if (message.role === 'tool' || message.tool_calls?.length) throw new ProviderError('bad_request', 'the local GGUF model does not call tools');
  if (message.content === null) return '';
  if (typeof message.content === 'string') return message.content;
  if (message.content.some((part) => part.type !== 'text')) {
    throw new ProviderError('bad_request', 'the local GGUF model reads text only: send no images');
  }
  return message.content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');
}

/** The history before the last user message, and that message (the prompt to answer). */
export function toChat(messages: ChatMessage[]): { history: LlamaChatHistoryItem[]; prompt: string } {
  const last = messages[messages.length - 1];
  if (!last || last.role !== 'user') throw new ProviderError('bad_request', 'the conversation must end with a user message');
  const history = messages.slice(0, -1).map((message): LlamaChatHistoryItem => {
    const text = textOf(message);
    if (message.role === 'assistant') return { type: 'model', response: [text] };
    return { type: message.role === 'system' ? 'system' : 'user', text };
  });
  return { history, prompt: textOf(last) };
}

export class LlamaTextProvider implements TextProvider {
  private readonly lock = new Mutex();

  /** `session()` is null until the model has loaded (or after it was closed). */
  constructor(private readonly session: () => LlamaSession | null) {}

  /** Callers holding or waiting for the model. */
  get queued(): number {
    return this.lock.queued;
  }

  /** Resolves once no generation runs (or when `signal` aborts): for closing the model. */
  async idle(signal: AbortSignal): Promise<void> {
    const release = await this.lock.acquire(signal).catch(() => null);
    release?.();
  }

  async complete(request: TextRequest, options: CallOptions): Promise<TextResult> {
    return this.generate(request, options.signal, () => undefined);
  }

  async *stream(request: TextRequest, options: CallOptions): AsyncIterable<TextChunk> {
    // The consumer may stop reading early (client gone): then the generation is stopped too.
    const stop = new AbortController();
    const signal = AbortSignal.any([options.signal, stop.signal]);
    const pending: string[] = [];
    let wake: (() => void) | null = null;
    let finished = false;
    // Set from the callbacks below (a holder, so the type checker does not narrow it to null).
    const end: { outcome: { ok: true; result: TextResult } | { ok: false; error: unknown } | null } = { outcome: null };
    const run = this.generate(request, signal, (delta) => {
      pending.push(delta);
      wake?.();
    })
      .then(
        (result) => void (end.outcome = { ok: true, result }),
        (error: unknown) => void (end.outcome = { ok: false, error }),
      )
      .finally(() => {
        finished = true;
        wake?.();
      });
    try {
      for (;;) {
        const delta = pending.shift();
        if (delta !== undefined) {
          yield { delta };
          continue;
        }
        if (finished) break;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = null;
      }
      const settled = end.outcome;
      if (!settled) throw new ProviderError('unavailable', 'the local model stopped without an answer');
      if (!settled.ok) throw settled.error;
      yield { finish: settled.result.finishReason };
      yield { usage: settled.result.usage };
    } finally {
      if (!finished) stop.abort(new ProviderError('timeout', 'the stream was closed'));
      await run;
    }
  }

  private async generate(request: TextRequest, signal: AbortSignal, onDelta: (delta: string) => void): Promise<TextResult> {
    const { history, prompt } = toChat(request.messages);
    const release = await this.lock.acquire(signal);
    try {
      const loaded = this.session();
      if (!loaded) throw new ProviderError('unavailable', 'the local GGUF model is not loaded');
      const session = new loaded.lib.LlamaChatSession({ contextSequence: loaded.sequence, autoDisposeSequence: false });
      try {
        session.setChatHistory(history);
        const templated = session.chatWrapper.generateContextState({
          chatHistory: [...history, { type: 'user', text: prompt }, { type: 'model', response: [] }],
        });
        const promptTokens = templated.contextText.tokenize(loaded.model.tokenizer).length;
        const contextSize = loaded.sequence.contextSize;
        if (promptTokens >= contextSize) {
          throw new ProviderError('bad_request', `the conversation is ${promptTokens} tokens long; the local model's context holds ${contextSize}`);
        }
        const maxTokens = Math.max(1, Math.min(request.maxTokens ?? DEFAULT_MAX_TOKENS, contextSize - promptTokens));
        let completionTokens = 0;
        const result = await session.promptWithMeta(prompt, {
          temperature: request.temperature,
          maxTokens,
          // llama.cpp stops on them and leaves them out of the answer (and holds back text that may begin one).
          customStopTriggers: request.stop ?? [],
          signal,
          onTextChunk: (text) => {
            if (text !== '') onDelta(text);
          },
          onToken: (tokens) => {
            completionTokens += tokens.length;
          },
        });
        if (signal.aborted) throw abortError(signal);
        return {
          content: result.responseText,
          toolCalls: [],
          finishReason: result.stopReason === 'maxTokens' ? 'length' : 'stop',
          usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
        };
      } finally {
        session.dispose({ disposeSequence: false });
      }
    } catch (error) {
      if (signal.aborted) throw abortError(signal);
      if (error instanceof ProviderError) throw error;
      throw new ProviderError('unavailable', `the local model failed: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      release();
    }
  }
}
