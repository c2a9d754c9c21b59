/**
 * Real audio for the fake speech engine, so that what the /v1 speech endpoint re-encodes can be
 * decoded: a half-second tone as WAV, and that tone encoded by ffmpeg as mp3, Ogg/Vorbis (what the
 * local engine's `ogg` is) and Ogg/Opus (what the speech upstreams' `ogg` is).
 */
import { execFileSync } from 'node:child_process';
import { findFfmpeg } from '../../shared/media/executables';
import { pcmToWav } from '../../shared/media/wav';
import type { ProviderAdapter, SpeechRequest } from '../../shared/providers/types';
import type { FakeProvider } from './fake-provider';

export interface ToneFiles {
  wav: Buffer;
  mp3: Buffer;
  vorbis: Buffer;
  opus: Buffer;
}

export const TONE_SECONDS = 0.5;

function tonePcm(sampleRate: number): Buffer {
  const samples = Math.round(sampleRate * TONE_SECONDS);
  const pcm = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++) pcm.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / sampleRate)), i * 2);
  return pcm;
}

function encode(ffmpeg: string, wav: Buffer, args: string[]): Buffer {
  return execFileSync(ffmpeg, ['-hide_banner', '-loglevel', 'error', '-i', 'pipe:0', ...args, 'pipe:1'], { input: wav, maxBuffer: 16 * 1024 * 1024 });
}

export function toneFiles(): ToneFiles {
  const ffmpeg = findFfmpeg();
  if (!ffmpeg) throw new Error('these tests need ffmpeg (the npm package @ffmpeg-installer/ffmpeg has one)');
  const wav = pcmToWav(tonePcm(22_050), 22_050);
  return {
    wav,
    mp3: encode(ffmpeg, wav, ['-c:a', 'libmp3lame', '-b:a', '64k', '-f', 'mp3']),
    vorbis: encode(ffmpeg, wav, ['-c:a', 'libvorbis', '-f', 'ogg']),
    opus: encode(ffmpeg, wav, ['-c:a', 'libopus', '-f', 'ogg']),
  };
}

/**
 * The fake provider with a speech engine that answers the tone in the asked format (its `ogg` is
 * Vorbis unless `oggIsOpus` says otherwise), recording the request like the fake does.
 */
export function speakingProvider(fake: FakeProvider, tone: ToneFiles, options: { oggIsOpus: () => boolean }): ProviderAdapter {
  const adapter = fake.adapter();
  return {
    ...adapter,
    speech: {
      synthesize: async (request: SpeechRequest, callOptions) => {
        await adapter.speech?.synthesize(request, callOptions);
        const bytes = request.format === 'wav' ? tone.wav : request.format === 'mp3' ? tone.mp3 : options.oggIsOpus() ? tone.opus : tone.vorbis;
        const contentType = { wav: 'audio/wav', mp3: 'audio/mpeg', ogg: 'audio/ogg' }[request.format];
        return { file: { bytes, contentType, extension: request.format }, durationSeconds: TONE_SECONDS };
      },
    },
  };
}
