/**
 * Bring-your-own language model: the `llama` adapter runs the GGUF file named by LLM_MODEL_PATH
 * with llama.cpp (npm `node-llama-cpp`, its prebuilt CPU binary) and offers it as the catalog's
 * `local-llm`. No model ships with the service.
 *
 * Loading starts when the adapter is created (at process start, in the background): the file is
 * checked (exists, GGUF, not truncated), then llama.cpp loads it (memory-mapped) and a context is
 * made, sized by the file's trained context length up to `contextCap`. Only then does `serves()`
 * say yes, so the model is never offered by a process that could not load it; a failure is one
 * error log line naming the file and the reason, and the process carries on without the model.
 * Unlike whisper.cpp (see ../local/whisper.ts), llama.cpp's GGUF loader checks bounds and reports
 * a broken file as an error instead of aborting, so no child process probe is needed.
 */
import type { Logger } from '../../log';
import type { ProviderAdapter } from '../types';
import { GgufModelInfo, inspectGgufModel, unavailable } from './gguf';
import { cpuThreads, getCpuLlama, importLlamaModule, Llama, LlamaContext, LlamaLogLevel, LlamaModule } from './runtime';
import { LlamaSession, LlamaTextProvider } from './text';

export { inspectGgufModel } from './gguf';
export type { GgufModelInfo } from './gguf';

export const LLAMA_PROVIDER_NAME = 'llama';
/**
 * Largest context made: its KV cache costs memory (about 0.1–0.5 GB for a 1–3B model at 4096)
 * and a long prompt is read at only tens of tokens a second on two cores.
 */
export const DEFAULT_CONTEXT_CAP = 4096;
/** How long closing waits for a running generation before freeing the model under it. */
const CLOSE_GRACE_MS = 5_000;

export interface LlamaProviderOptions {
  /** The GGUF file (LLM_MODEL_PATH, resolved). */
  modelPath: string;
  log: Logger;
  /** CPU threads; default: every core this process may use. */
  threads?: number;
  contextCap?: number;
  /** How node-llama-cpp is imported (default: the real dynamic import). */
  importModule?: () => Promise<LlamaModule>;
}

export type LlamaLoadOutcome =
  | { ok: true; info: GgufModelInfo; contextSize: number; chatWrapper: string; gpu: string | false; buildType: string; seconds: number }
  | { ok: false; error: string };

export interface LlamaAdapter extends ProviderAdapter {
  /** Settles when loading has ended, either way (never rejects). */
  readonly ready: Promise<LlamaLoadOutcome>;
}

interface LoadedLlama extends LlamaSession {
  llama: Llama;
  context: LlamaContext;
  info: GgufModelInfo;
}

/** The telling line of what llama.cpp logged while failing to load. */
function llamaComplaint(lines: string[]): string {
  const telling = lines.find((line) => /error loading model:/i.test(line)) ?? lines.find((line) => /error|fail|invalid|corrupt/i.test(line));
  return (telling ?? '').replace(/^.*error loading model:\s*/i, '').slice(0, 300);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function loadLlamaModel(options: LlamaProviderOptions, signal: AbortSignal): Promise<LoadedLlama> {
  const file = options.modelPath;
  const info = await inspectGgufModel(file);
  const lib = await (options.importModule ?? importLlamaModule)().catch((error: unknown) => {
    throw unavailable(file, `cannot be run: node-llama-cpp could not be loaded (${messageOf(error)})`);
  });
  const complaints: string[] = [];
  const logger = (level: LlamaLogLevel, message: string): void => {
    const line = message.trim();
    if (line === '') return;
    if (level === 'error' || level === 'fatal' || level === 'warn') complaints.push(line);
    if (complaints.length > 50) complaints.shift();
    options.log.debug({ llamaCpp: level }, line);
  };
  const threads = options.threads ?? cpuThreads();
  const llama = await getCpuLlama(lib, logger, threads).catch((error: unknown) => {
    throw unavailable(file, `cannot be run: llama.cpp's CPU backend did not load (${messageOf(error)})`);
  });
  try {
    const model = await llama.loadModel({ modelPath: file, gpuLayers: 0, loadSignal: signal }).catch(async (error: unknown) => {
      // llama.cpp's log lines reach JavaScript asynchronously, after the failed promise: let them arrive.
      await new Promise((resolve) => setTimeout(resolve, 100));
      throw unavailable(file, `could not be loaded by llama.cpp: ${llamaComplaint(complaints) || messageOf(error)}`);
    });
    try {
      const trained = model.trainContextSize > 0 ? model.trainContextSize : (info.trainContextSize ?? 2048);
      const max = Math.min(trained, options.contextCap ?? DEFAULT_CONTEXT_CAP);
      // The library takes the largest size within [min, max] that fits in free memory.
      const context = await model.createContext({ contextSize: { min: Math.min(512, max), max }, sequences: 1, threads }).catch((error: unknown) => {
        throw unavailable(file, `loaded, but no context fits in memory (${messageOf(error)})`);
      });
      return { lib, llama, model, context, sequence: context.getSequence(), info };
    } catch (error) {
      await model.dispose().catch(() => undefined);
      throw error;
    }
  } catch (error) {
    await llama.dispose().catch(() => undefined);
    throw error;
  }
}

async function disposeLoaded(loaded: LoadedLlama): Promise<void> {
  await loaded.context.dispose().catch(() => undefined);
  await loaded.model.dispose().catch(() => undefined);
  await loaded.llama.dispose().catch(() => undefined);
}

/** The `llama` adapter; starts loading the model at once (see the top of this file). */
export function createLlamaProvider(options: LlamaProviderOptions): LlamaAdapter {
  const { log, modelPath } = options;
  const started = Date.now();
  const closing = new AbortController();
  let loaded: LoadedLlama | null = null;
  const text = new LlamaTextProvider(() => loaded);

  // `.then(ok).catch(fail)`, not `.then(ok, fail)`: a throw inside `ok` must not become an
  // unhandled rejection (nothing awaits `ready` but close), and the model is served only once
  // everything about it was read.
  const ready: Promise<LlamaLoadOutcome> = loadLlamaModel(options, closing.signal).then(
    async (model): Promise<LlamaLoadOutcome> => {
      if (closing.signal.aborted) {
        await disposeLoaded(model);
        return { ok: false, error: 'closed before the model was loaded' };
      }
      const chatWrapper = chatWrapperName(model);
      loaded = model;
      const outcome = {
        ok: true as const,
        info: model.info,
        contextSize: model.sequence.contextSize,
        chatWrapper,
        gpu: model.llama.gpu,
        buildType: model.llama.buildType,
        seconds: Math.round((Date.now() - started) / 100) / 10,
      };
      log.info(
        { modelPath, architecture: model.info.architecture, name: model.info.name, contextSize: outcome.contextSize, chatWrapper, seconds: outcome.seconds },
        'local GGUF model loaded: local-llm is offered',
      );
      return outcome;
    },
  ).catch(
    (error: unknown): LlamaLoadOutcome => {
      loaded = null;
      const message = closing.signal.aborted ? 'closed before the model was loaded' : messageOf(error);
      if (!closing.signal.aborted) log.error({ modelPath }, `local-llm is not offered: ${message}`);
      return { ok: false, error: message };
    },
  );

  return {
    name: LLAMA_PROVIDER_NAME,
    text,
    ready,
    serves: () => loaded !== null,
    close: async () => {
      closing.abort();
      await ready;
      const model = loaded;
      loaded = null;
      if (!model) return;
      await text.idle(AbortSignal.timeout(CLOSE_GRACE_MS));
      await disposeLoaded(model);
    },
  };
}

/** Which chat template node-llama-cpp resolved for the model (for the startup log). */
function chatWrapperName(model: LoadedLlama): string {
  const session = new model.lib.LlamaChatSession({ contextSequence: model.sequence, autoDisposeSequence: false });
  try {
    return session.chatWrapper.wrapperName;
  } finally {
    session.dispose({ disposeSequence: false });
  }
}
