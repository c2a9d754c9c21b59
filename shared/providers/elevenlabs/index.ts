/**
 * The ElevenLabs adapter: speech with `POST {baseUrl}/v1/text-to-speech/{voice_id}?output_format=…`,
 * key in `xi-api-key`, JSON `{text, model_id, voice_settings}`, audio bytes back. Stateless;
 * `fetch` is injected. Errors map as in ../upstream-http.ts; ElevenLabs' bodies are
 * `{detail: {status, message}}` or, for validation, `{detail: [{loc, msg}]}`.
 */
import { audioDuration } from '../../media/audio-duration';
import { findFfmpeg } from '../../media/executables';
import { pcmToWav, wavDuration } from '../../media/wav';
import { CallOptions, ProviderAdapter, SpeechRequest, SpeechResult } from '../types';
import { isRecord, UpstreamHttp } from '../upstream-http';

export const ELEVENLABS_PROVIDER_NAME = 'elevenlabs';

export interface ElevenLabsProviderOptions {
  /** e.g. `https://api.elevenlabs.io` (the `/v1` is added here). */
  baseUrl: string;
  apiKey?: string;
  fetch?: typeof fetch;
  /** Where ffmpeg is (to measure mp3/ogg); defaults to `findFfmpeg()`. Null: estimate. */
  ffmpeg?: () => string | null;
}

/**
 * The catalog's voice names → ElevenLabs' premade voice ids. Any other `voice_id` is sent as it
 * is: a voice of the operator's own library.
 */
export const ELEVENLABS_VOICES: Readonly<Record<string, string>> = {
  rachel: '21m00Tcm4TlvDq8ikWAM',
  adam: 'pNInz6obpgDQGcFmaJgB',
  bella: 'EXAVITQu4vr4xnSDxMaL',
  josh: 'TxGEqnHWrfWFTfGW9XjX',
};

/** Raw 16-bit mono PCM comes back for `pcm_*`; we wrap it in a WAV header ourselves. */
const PCM_SAMPLE_RATE = 22_050;

/** Our formats → ElevenLabs' documented `output_format` values (its `opus_*` are Ogg/Opus files). */
const OUTPUT_FORMATS = {
  mp3: { outputFormat: 'mp3_44100_128', contentType: 'audio/mpeg', extension: 'mp3' },
  wav: { outputFormat: `pcm_${PCM_SAMPLE_RATE}`, contentType: 'audio/wav', extension: 'wav' },
  ogg: { outputFormat: 'opus_48000_64', contentType: 'audio/ogg', extension: 'ogg' },
} as const;

/** ElevenLabs' voice_settings.speed range; our 0.5–2 is clamped into it (0.5 plays at 0.7, 2 at 1.2). */
const MIN_SPEED = 0.7;
const MAX_SPEED = 1.2;

/** The defaults ElevenLabs documents for premade voices. */
const STABILITY = 0.5;
const SIMILARITY_BOOST = 0.75;

export function elevenLabsVoiceId(voice: string): string {
  return ELEVENLABS_VOICES[voice.toLowerCase()] ?? voice;
}

/** `{detail: {status, message}}`, `{detail: [{loc, msg}]}` (validation) or `{detail: "…"}`. */
export function elevenLabsErrorMessage(body: unknown): string | null {
  if (!isRecord(body)) return null;
  const detail = body.detail;
  if (typeof detail === 'string') return detail;
  if (isRecord(detail)) {
    if (typeof detail.message === 'string') return detail.message;
    return typeof detail.status === 'string' ? detail.status : null;
  }
  if (Array.isArray(detail)) {
    const messages = detail.filter(isRecord).map((item) => {
      const where = Array.isArray(item.loc) ? item.loc.filter((part) => part !== 'body').join('.') : '';
      const msg = typeof item.msg === 'string' ? item.msg : 'invalid';
      return where ? `${where}: ${msg}` : msg;
    });
    return messages.length > 0 ? messages.join('; ') : null;
  }
  return null;
}

export function createElevenLabsProvider(options: ElevenLabsProviderOptions): ProviderAdapter {
  const http = new UpstreamHttp({
    name: ELEVENLABS_PROVIDER_NAME,
    baseUrl: options.baseUrl,
    fetch: options.fetch,
    authHeaders: options.apiKey ? { 'xi-api-key': options.apiKey } : {},
    secrets: options.apiKey ? [options.apiKey] : [],
    errorMessage: elevenLabsErrorMessage,
  });
  const ffmpeg = options.ffmpeg ?? findFfmpeg;

  async function synthesize(request: SpeechRequest, call: CallOptions): Promise<SpeechResult> {
    const format = OUTPUT_FORMATS[request.format];
    const voiceId = encodeURIComponent(elevenLabsVoiceId(request.voice));
    const body = {
      text: request.text,
      model_id: request.upstreamModel,
      voice_settings: {
        stability: STABILITY,
        similarity_boost: SIMILARITY_BOOST,
        speed: Math.min(MAX_SPEED, Math.max(MIN_SPEED, request.speed)),
      },
    };
    const response = await http.post(
      `/v1/text-to-speech/${voiceId}?output_format=${format.outputFormat}`,
      JSON.stringify(body),
      { 'content-type': 'application/json', accept: '*/*' },
      call.signal,
    );
    const received = await http.readBytes(response, call.signal);
    if (received.length === 0) throw http.malformed('speech');
    if (request.format === 'wav') {
      const wav = pcmToWav(received, PCM_SAMPLE_RATE);
      return { file: { bytes: wav, contentType: format.contentType, extension: format.extension }, durationSeconds: wavDuration(wav) ?? 0 };
    }
    if (request.format === 'ogg' && received.toString('latin1', 0, 4) !== 'OggS') throw http.malformed('Ogg/Opus speech');
    const duration = await audioDuration(received, ffmpeg(), call.signal);
    return { file: { bytes: received, contentType: format.contentType, extension: format.extension }, durationSeconds: duration.seconds };
  }

  return { name: ELEVENLABS_PROVIDER_NAME, speech: { synthesize } };
}
