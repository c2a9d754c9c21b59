/**
 * The built-in offline image tools (`ToolProvider`): real processing, no network.
 *
 * | tool | method |
 * |---|---|
 * | `upscale-esrgan` | ESRGAN-family RDN network from `@upscalerjs/esrgan-slim` on TensorFlow.js wasm, 128 px tiles |
 * | `remove-bg` | IS-Net segmentation (`@imgly/background-removal-node`, onnxruntime-node) → PNG alpha |
 * | `ocr` | Tesseract 5 LSTM (tesseract.js + `@tesseract.js-data/eng`), one warm worker |
 * | `inpaint` | Telea fast-marching inpainting (OpenCV.js `cv.inpaint`) |
 * | `face-swap` | face-api SSD + 68 landmarks, piecewise-affine warp, Reinhard colour transfer, MVC seamless cloning |
 * | `colorize` | Welsh et al. 2002 colour transfer from a generated reference palette image |
 * | `style-transfer` | Hertzmann 1998 curved-brush-stroke painterly rendering, one parameter set per style |
 *
 * Importing this module loads nothing heavy: each engine is required and initialised on its first
 * call and stays warm. `localToolEngines()` reports which tools can run here.
 */
import { throwIfAborted } from '../../abort';
import { ProviderError } from '../../types';
import type { CallOptions, ToolProvider, ToolRequest, ToolResult } from '../../types';
import { runColorize } from './colorize';
import { faceSwapAvailable, runFaceSwap } from './face-swap';
import { runInpaint } from './inpaint';
import { closeOcr, ocrAvailable, runOcr } from './ocr';
import { openCvAvailable } from './opencv';
import { removeBgAvailable, runRemoveBg } from './remove-bg';
import { runStyleTransfer } from './style-transfer';
import { runUpscale, upscaleAvailable } from './upscale';

export { checkUpscaleInput, parseUpscaleScale, upscaleInputProblem, UPSCALE_MAX_INPUT_PIXELS, UPSCALE_MAX_INPUT_SIDE, UPSCALE_SCALES } from './upscale';
export type { UpscaleScale } from './upscale';
export { STYLE_NAMES, STYLE_PARAMETERS, parseStyle } from './style-transfer';
export type { StyleName } from './style-transfer';
export { faceDescriptor } from './face-swap';

export const LOCAL_TOOLS = ['upscale-esrgan', 'remove-bg', 'ocr', 'inpaint', 'face-swap', 'colorize', 'style-transfer'] as const;
export type LocalTool = (typeof LOCAL_TOOLS)[number];

function isLocalTool(value: string): value is LocalTool {
  return (LOCAL_TOOLS as readonly string[]).includes(value);
}

/**
 * Which tools can run here: package and model files present, the native ONNX runtime loadable, and
 * no earlier failure to load the engine. Cheap: no model is loaded.
 */
export function localToolEngines(): Record<LocalTool, boolean> {
  return {
    'upscale-esrgan': upscaleAvailable(),
    'remove-bg': removeBgAvailable(),
    ocr: ocrAvailable(),
    inpaint: openCvAvailable(),
    'face-swap': faceSwapAvailable(),
    colorize: true,
    'style-transfer': true,
  };
}

export class LocalToolProvider implements ToolProvider {
  async run(request: ToolRequest, options: CallOptions): Promise<ToolResult> {
    throwIfAborted(options.signal);
    const tool = isLocalTool(request.upstreamModel) ? request.upstreamModel : request.tool;
    if (!isLocalTool(tool)) throw new ProviderError('bad_request', `Unknown local tool "${request.tool}"; tools: ${LOCAL_TOOLS.join(', ')}`);
    options.onProgress?.(1);
    const result = await this.dispatch(tool, request, options);
    options.onProgress?.(100);
    return result;
  }

  private dispatch(tool: LocalTool, request: ToolRequest, options: CallOptions): Promise<ToolResult> {
    switch (tool) {
      case 'upscale-esrgan':
        return runUpscale(request.image, request.params, options);
      case 'remove-bg':
        return runRemoveBg(request.image, options);
      case 'ocr':
        return runOcr(request.image, options);
      case 'inpaint':
        return runInpaint(request.image, request.secondImage, options);
      case 'face-swap':
        return runFaceSwap(request.image, request.secondImage, options);
      case 'colorize':
        return runColorize(request.image, request.secondImage, options);
      case 'style-transfer':
        return runStyleTransfer(request.image, request.params, options);
    }
  }

  /** Ends background workers (the OCR thread); models stay loaded. Call on shutdown and in tests. */
  async close(): Promise<void> {
    await closeOcr();
  }
}
