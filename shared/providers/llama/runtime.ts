/**
 * node-llama-cpp, loaded for the CPU only and never built or downloaded, typed by the few parts
 * this provider uses.
 *
 * node-llama-cpp v3 is an ES module: it is loaded with importEsm (shared/esm-import.ts says why
 * that needs a helper in this CommonJS project). Jest's module sandbox has no dynamic import:
 * inside jest, loading fails (and the model is not offered); the tests run the real loading in a
 * child Node process.
 */
import os from 'node:os';
import { importEsm } from '../../esm-import';

/** Token ids; the library brands them, this provider only counts them. */
export type LlamaToken = number;

export type LlamaLogLevel = 'disabled' | 'fatal' | 'error' | 'warn' | 'info' | 'log' | 'debug';

export type LlamaChatHistoryItem = { type: 'system'; text: string } | { type: 'user'; text: string } | { type: 'model'; response: string[] };

export interface LlamaPromptOptions {
  temperature: number;
  maxTokens: number;
  customStopTriggers: string[];
  signal: AbortSignal;
  onTextChunk: (text: string) => void;
  onToken: (tokens: LlamaToken[]) => void;
}

export interface LlamaPromptResult {
  responseText: string;
  stopReason: string;
}

export interface LlamaChatWrapper {
  wrapperName: string;
  generateContextState(options: { chatHistory: LlamaChatHistoryItem[] }): { contextText: { tokenize(tokenizer: LlamaTokenizer): LlamaToken[] } };
}

/** The model's tokenizer: opaque here, handed back to the library. */
export interface LlamaTokenizer {
  (text: string, specialTokens?: boolean): LlamaToken[];
}

export interface LlamaChatSession {
  readonly chatWrapper: LlamaChatWrapper;
  setChatHistory(history: LlamaChatHistoryItem[]): void;
  promptWithMeta(prompt: string, options: LlamaPromptOptions): Promise<LlamaPromptResult>;
  dispose(options: { disposeSequence: boolean }): void;
}

export interface LlamaContextSequence {
  readonly contextSize: number;
}

export interface LlamaContext {
  readonly contextSize: number;
  getSequence(): LlamaContextSequence;
  dispose(): Promise<void>;
}

export interface LlamaModel {
  readonly trainContextSize: number;
  readonly tokenizer: LlamaTokenizer;
  createContext(options: { contextSize: { min: number; max: number }; sequences: 1; threads: number }): Promise<LlamaContext>;
  dispose(): Promise<void>;
}

export interface Llama {
  /** `false`: the CPU backend. */
  readonly gpu: string | false;
  /** `prebuilt` (shipped in the npm package) or `localBuild`. */
  readonly buildType: string;
  loadModel(options: { modelPath: string; gpuLayers: 0; loadSignal?: AbortSignal }): Promise<LlamaModel>;
  dispose(): Promise<void>;
}

export interface LlamaModule {
  getLlama(options: {
    gpu: false;
    build: 'never';
    skipDownload: true;
    progressLogs: false;
    usePrebuiltBinaries: true;
    logLevel: LlamaLogLevel;
    logger: (level: LlamaLogLevel, message: string) => void;
    maxThreads: number;
  }): Promise<Llama>;
  LlamaChatSession: new (options: { contextSequence: LlamaContextSequence; autoDisposeSequence: false }) => LlamaChatSession;
}

/**
 * The path of node-llama-cpp's entry (the package's `node` export condition answers
 * `require.resolve`, though the package is an ES module), or null when it is not installed.
 */
export function llamaModulePath(): string | null {
  try {
    return require.resolve('node-llama-cpp');
  } catch {
    return null;
  }
}

export async function importLlamaModule(): Promise<LlamaModule> {
  const entry = llamaModulePath();
  if (!entry) throw new Error('the npm package node-llama-cpp is not installed');
  const loaded = (await importEsm(entry)) as Partial<LlamaModule>;
  if (typeof loaded.getLlama !== 'function' || typeof loaded.LlamaChatSession !== 'function') {
    throw new Error('node-llama-cpp does not export getLlama and LlamaChatSession (an incompatible version?)');
  }
  return loaded as LlamaModule;
}

/** CPU threads to compute with: every core this process may use (more only oversubscribes). */
export function cpuThreads(): number {
  return Math.max(1, os.availableParallelism());
}

/**
 * The llama.cpp backend on the CPU, from the prebuilt binary in @node-llama-cpp/<platform>:
 * `build: 'never'` and `skipDownload` make a missing binary an error instead of a download of
 * llama.cpp's sources and a compile.
 */
export async function getCpuLlama(lib: LlamaModule, logger: (level: LlamaLogLevel, message: string) => void, threads = cpuThreads()): Promise<Llama> {
  return lib.getLlama({
    gpu: false,
    build: 'never',
    skipDownload: true,
    progressLogs: false,
    usePrebuiltBinaries: true,
    logLevel: 'warn',
    logger,
    maxThreads: threads,
  });
}
