/**
 * The local audio capabilities and the engines behind them, for wiring into the "local" adapter:
 *
 * - speech: Flite + eSpeak-NG, WebAssembly from npm: always offered when the packages are installed;
 * - transcription: PocketSphinx (`pocketsphinx_batch` + the US English model) and ffmpeg; or, when
 *   `whisperModelPath` (WHISPER_MODEL_PATH) is given, the operator's Whisper model;
 * - music: always (fluidsynth + a General-MIDI sound font when installed, else the built-in synth).
 */
import { findFfmpeg } from '../../media/executables';
import type { MusicProvider, SpeechProvider, TranscriptionProvider } from '../types';
import { findFluidsynth, findPocketsphinx, findPocketsphinxModel, findSoundfont } from './audio-tools';
import { LocalMusicProvider } from './music';
import { LocalSpeechProvider, speechEnginesInstalled } from './speech';
import { LocalTranscriptionProvider } from './transcription';
import { LocalWhisperProvider, whisperModulePath } from './whisper';

export interface LocalAudioEngines {
  /** `pocketsphinx_batch` when it and the US English model are installed, else null: no local speech-to-text. */
  pocketsphinx: string | null;
  /** The General-MIDI sound font music is played with, or null: the built-in synthesizer. */
  soundfont: string | null;
  /** `fluidsynth`, or null: the built-in synthesizer. */
  fluidsynth: string | null;
}

/** Which external audio engines were found (for the startup log). */
export function localAudioEngines(): LocalAudioEngines {
  const pocketsphinx = findPocketsphinx();
  return {
    pocketsphinx: pocketsphinx && findPocketsphinxModel() ? pocketsphinx : null,
    soundfont: findSoundfont(),
    fluidsynth: findFluidsynth(),
  };
}

export interface LocalAudioOptions {
  /** WHISPER_MODEL_PATH: a whisper.cpp ggml model; transcription then uses it instead of PocketSphinx. */
  whisperModelPath?: string | null;
  /** CPU threads for Whisper (default 2). */
  whisperThreads?: number;
  /** Overrides of the engine lookups (tests, unusual installs). */
  ffmpegPath?: string | null;
  pocketsphinxPath?: string | null;
  fluidsynthPath?: string | null;
  soundfontPath?: string | null;
}

export interface LocalAudioProviders {
  speech?: SpeechProvider;
  transcription?: TranscriptionProvider;
  music?: MusicProvider;
}

/**
 * The local audio providers whose engines are present; a capability whose engine is missing is
 * left out (so its models are not offered). Creating them loads nothing: engines load on first use.
 */
export function createLocalAudioProviders(options: LocalAudioOptions = {}): LocalAudioProviders {
  const ffmpeg = options.ffmpegPath === undefined ? findFfmpeg() : options.ffmpegPath;
  const providers: LocalAudioProviders = {};

  const installed = speechEnginesInstalled();
  if (installed.flite) providers.speech = new LocalSpeechProvider({ ffmpegPath: ffmpeg });

  if (options.whisperModelPath && whisperModulePath() && ffmpeg) {
    providers.transcription = new LocalWhisperProvider({ modelPath: options.whisperModelPath, ffmpegPath: ffmpeg, threads: options.whisperThreads });
  } else {
    const pocketsphinx = options.pocketsphinxPath === undefined ? findPocketsphinx() : options.pocketsphinxPath;
    const model = findPocketsphinxModel();
    if (pocketsphinx && model && ffmpeg) {
      providers.transcription = new LocalTranscriptionProvider({ pocketsphinxPath: pocketsphinx, model, ffmpegPath: ffmpeg });
    }
  }

  providers.music = new LocalMusicProvider({
    ffmpegPath: ffmpeg,
    ...(options.fluidsynthPath !== undefined ? { fluidsynthPath: options.fluidsynthPath } : {}),
    ...(options.soundfontPath !== undefined ? { soundfontPath: options.soundfontPath } : {}),
  });
  return providers;
}
