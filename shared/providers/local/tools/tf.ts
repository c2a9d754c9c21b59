/**
 * The one TensorFlow.js runtime of the process, on the WebAssembly backend (tfjs-node does not
 * install here; the pure-JS cpu backend is the fallback, ~15× slower). Loaded on first use by the
 * upscaler and the face detector; the wasm binaries are read from the installed package, never a CDN.
 */
import path from 'node:path';
import { lazy, packageDir } from './common';

export type Tf = typeof import('@tensorflow/tfjs');
type TfWasm = typeof import('@tensorflow/tfjs-backend-wasm');

const runtime = lazy(async (): Promise<{ tf: Tf }> => {
  const tf: Tf = require('@tensorflow/tfjs');
  const wasm: TfWasm = require('@tensorflow/tfjs-backend-wasm');
  if (tf.getBackend() !== 'wasm') {
    wasm.setWasmPaths(path.join(packageDir('@tensorflow/tfjs-backend-wasm'), 'dist') + path.sep);
    let ok = false;
    try {
      ok = await tf.setBackend('wasm');
    } catch {
      ok = false;
    }
    if (!ok) await tf.setBackend('cpu');
  }
  await tf.ready();
  tf.enableProdMode();
  return { tf };
});

/** The warm tfjs module (wrapped: a module object is never handed to `resolve`). */
export async function loadTf(): Promise<Tf> {
  return (await runtime.get()).tf;
}

/** False once loading the runtime has failed (the packages are broken here). */
export function tfLoadFailed(): boolean {
  return runtime.failure !== null;
}
