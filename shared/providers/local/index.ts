/**
 * The built-in "local" provider: offline demo engines that serve the embedded default without any
 * upstream account. Text is a Markov chain over a shipped corpus, images are procedural art drawn
 * with sharp, videos are a slow zoom over such a picture encoded by ffmpeg. They are real
 * processing of the request, not canned answers, but they are demos, not models.
 */
import type { ProviderAdapter } from '../types';
import { LocalImageProvider } from './image';
import { LocalTextProvider } from './text';
import { findFfmpeg, LocalVideoProvider } from './video';

export { LocalTextProvider } from './text';
export { LocalImageProvider } from './image';
export { LocalVideoProvider, findFfmpeg, videoDimensions } from './video';

export const LOCAL_PROVIDER_NAME = 'local';

/** The local adapter; a capability whose engine is missing is left out, so its models are not offered. */
export function createLocalProvider(): ProviderAdapter {
  return {
    name: LOCAL_PROVIDER_NAME,
    text: new LocalTextProvider(),
    image: new LocalImageProvider(),
    ...(findFfmpeg() ? { video: new LocalVideoProvider() } : {}),
  };
}

export interface LocalEngines {
  /** The ffmpeg binary the video provider runs (absolute path, or `ffmpeg` on PATH), or null: no local video. */
  ffmpeg: string | null;
}

/** Which external engines the local provider found, so the service can log what is missing. */
export function localEngines(): LocalEngines {
  return { ffmpeg: findFfmpeg() };
}
