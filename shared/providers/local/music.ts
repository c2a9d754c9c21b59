/**
 * The built-in offline music "model": a rule-based composition from the prompt and the seed
 * (music-compose.ts), played by fluidsynth with a General-MIDI sound font when both are installed
 * (real instrument samples), else (or if fluidsynth fails) by the built-in synthesizer
 * (music-render.ts). The audio is exactly `durationSeconds` long (to the sample) and encoded as
 * WAV (16-bit 44.1 kHz stereo, written directly) or mp3 (192 kbit/s, ffmpeg). Same prompt + seed
 * + duration → the same bytes on the same machine; another seed → another tune.
 */
import { findFfmpeg } from '../../media/executables';
import { abortError } from '../abort';
import { ProviderError } from '../types';
import type { CallOptions, MusicProvider, MusicRequest, MusicResult } from '../types';
import { AUDIO_CONTENT_TYPES, encodeAudio } from './audio-process';
import { findFluidsynth, findSoundfont } from './audio-tools';
import type { PcmAudio } from './dsp/wav';
import { composeMusic } from './music-compose';
import { finishMusic, MUSIC_SAMPLE_RATE, renderWithFluidsynth, renderWithSynth } from './music-render';

export const MAX_MUSIC_SECONDS = 600;

export interface LocalMusicOptions {
  /** Default: `fluidsynth` on PATH. null: always the built-in synthesizer. */
  fluidsynthPath?: string | null;
  /** Default: the first General-MIDI .sf2 found (TimGM6mb, FluidR3, ...). */
  soundfontPath?: string | null;
  /** Default: `findFfmpeg()`; needed for mp3 only. */
  ffmpegPath?: string | null;
}

export class LocalMusicProvider implements MusicProvider {
  constructor(private readonly options: LocalMusicOptions = {}) {}

  /** Which renderer a request will use. */
  renderer(): 'fluidsynth' | 'synth' {
    return this.fluidsynth() && this.soundfont() ? 'fluidsynth' : 'synth';
  }

  async compose(request: MusicRequest, options: CallOptions): Promise<MusicResult> {
    const { signal } = options;
    if (signal.aborted) throw abortError(signal);
    const seconds = request.durationSeconds;
    if (!Number.isFinite(seconds) || seconds <= 0 || seconds > MAX_MUSIC_SECONDS) {
      throw new ProviderError('bad_request', `duration must be more than 0 and at most ${MAX_MUSIC_SECONDS} seconds, got ${seconds}`);
    }
    if (request.format !== 'mp3' && request.format !== 'wav') throw new ProviderError('bad_request', `unsupported format ${String(request.format)}; use mp3 or wav`);
    const ffmpeg = this.options.ffmpegPath === undefined ? findFfmpeg() : this.options.ffmpegPath;
    if (request.format === 'mp3' && !ffmpeg) throw new ProviderError('unavailable', 'mp3 needs ffmpeg: install the system ffmpeg or the npm package @ffmpeg-installer/ffmpeg');

    const composition = composeMusic({
      prompt: request.prompt,
      seed: request.seed,
      durationSeconds: seconds,
      lyrics: request.lyrics,
      instrumental: request.instrumental,
    });
    options.onProgress?.(10);
    const fluidsynth = this.fluidsynth();
    const soundfont = this.soundfont();
    let raw: PcmAudio | null = null;
    if (fluidsynth && soundfont) {
      try {
        raw = await renderWithFluidsynth(composition, fluidsynth, soundfont, signal);
      } catch (error) {
        // A broken sound font or fluidsynth install: the built-in synthesizer still plays it.
        if (signal.aborted || !(error instanceof ProviderError)) throw error;
      }
    }
    if (!raw || raw.sampleRate !== MUSIC_SAMPLE_RATE) raw = renderWithSynth(composition);
    if (signal.aborted) throw abortError(signal);
    options.onProgress?.(70);
    const frames = Math.round(seconds * MUSIC_SAMPLE_RATE);
    const audio = finishMusic(raw, frames);
    const bytes = await encodeAudio(ffmpeg, audio, request.format, signal, 192);
    options.onProgress?.(100);
    return {
      file: { bytes, contentType: AUDIO_CONTENT_TYPES[request.format], extension: request.format },
      durationSeconds: frames / MUSIC_SAMPLE_RATE,
    };
  }

  private fluidsynth(): string | null {
    return this.options.fluidsynthPath === undefined ? findFluidsynth() : this.options.fluidsynthPath;
  }

  private soundfont(): string | null {
    return this.options.soundfontPath === undefined ? findSoundfont() : this.options.soundfontPath;
  }
}
