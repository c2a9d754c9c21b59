/**
 * OpenCV.js (`@techstark/opencv-js`, OpenCV 4.5.2 in WebAssembly), loaded on first use. The module
 * object is a thenable that resolves to itself, so it is never awaited nor passed to `resolve`:
 * readiness is `onRuntimeInitialized`, and the module is handed out wrapped in an object.
 */
import { lazy } from './common';
import type { OpenCv } from './types/opencv';

const INIT_TIMEOUT_MS = 30_000;

const runtime = lazy(
  () =>
    new Promise<{ cv: OpenCv }>((resolve, reject) => {
      const cv: OpenCv = require('@techstark/opencv-js');
      if (typeof cv.Mat === 'function' && typeof cv.inpaint === 'function') {
        resolve({ cv });
        return;
      }
      const timer = setTimeout(() => reject(new Error('OpenCV.js did not initialise in time')), INIT_TIMEOUT_MS);
      timer.unref();
      cv.onRuntimeInitialized = () => {
        clearTimeout(timer);
        resolve({ cv });
      };
    }),
);

/**
 * The ready module, wrapped: `cv` must never be the value an async function returns or a promise
 * resolves with (it is a thenable resolving to itself, so that would loop forever).
 */
export function loadOpenCv(): Promise<{ cv: OpenCv }> {
  return runtime.get();
}

export function openCvAvailable(): boolean {
  if (runtime.failure !== null) return false;
  try {
    require.resolve('@techstark/opencv-js');
    return true;
  } catch {
    return false;
  }
}
