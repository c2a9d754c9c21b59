/**
 * The built-in "local" provider: offline demo engines that serve the embedded default without any
 * upstream account. Text is a Markov chain over a shipped corpus, images are procedural art drawn
 * with sharp, videos are a slow zoom over such a picture encoded by ffmpeg. They are real
 * processing of the request, not canned answers, but they are demos, not models.
 */
import { findFfmpeg } from '../../media/executables';
import type { ProviderAdapter } from '../types';
import { LocalImageProvider } from './image';
import { LocalTextProvider } from './text';
import { LocalVideoProvider } from './video';
import { createLocalAudioProviders, localAudioEngines } from './audio-engines';
import { LocalToolProvider, localToolEngines, upscaleInputProblem } from './tools';

export { LocalTextProvider } from './text';
export { LocalImageProvider } from './image';
export { LocalVideoProvider } from './video';

export const LOCAL_PROVIDER_NAME = 'local';

/**
 * The local adapter; a capability whose engine is missing is left out, and a tool whose engine
 * is missing is not served, so their models are not offered.
 */
export function createLocalProvider(options: { whisperModelPath?: string } = {}): ProviderAdapter {
  const audio = createLocalAudioProviders({ whisperModelPath: options.whisperModelPath ?? null });
  const tools = localToolEngines();
  const toolProvider = new LocalToolProvider();
  return {
    name: LOCAL_PROVIDER_NAME,
    text: new LocalTextProvider(),
    image: new LocalImageProvider(),
    ...(findFfmpeg() ? { video: new LocalVideoProvider() } : {}),
    ...(audio.speech ? { speech: audio.speech } : {}),
    ...(audio.transcription ? { transcription: audio.transcription } : {}),
    ...(audio.music ? { music: audio.music } : {}),
    tool: toolProvider,
    serves: (upstreamModel: string) => !(upstreamModel in tools) || tools[upstreamModel as keyof typeof tools],
    // The upscaler's pixel caps keep a request within seconds: larger inputs are refused up front.
    checkInput: async ({ upstreamModel, params, read }) => {
      if (upstreamModel !== 'upscale-esrgan' || typeof params.image_url !== 'string') return null;
      const problem = await upscaleInputProblem(await read(params.image_url), params.scale);
      return problem ? { field: 'image_url', message: problem } : null;
    },
    close: async () => {
      const speech = audio.speech as { close?: () => Promise<void> } | undefined;
      await Promise.allSettled([toolProvider.close(), speech?.close?.()]);
    },
  };
}

export interface LocalEngines {
  /** The ffmpeg binary the video provider runs (absolute path, or `ffmpeg` on PATH), or null: no local video. */
  ffmpeg: string | null;
  pocketsphinx: string | null;
  fluidsynth: string | null;
  soundfont: string | null;
}

/** Which external engines the local provider found, so the service can log what is missing. */
export function localEngines(): LocalEngines {
  return { ffmpeg: findFfmpeg(), ...localAudioEngines() };
}

/** Local tools whose engine cannot load here (logged at startup, shown in /health). */
export function missingLocalTools(): string[] {
  return Object.entries(localToolEngines())
    .filter(([, ok]) => !ok)
    .map(([tool]) => tool);
}
