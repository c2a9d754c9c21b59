/**
 * The Deepgram adapter: pre-recorded transcription with `POST {baseUrl}/v1/listen?model=…`, key
 * in `Authorization: Token …`, the raw audio bytes as the body (Content-Type sniffed from them).
 * Stateless; `fetch` is injected. Errors map as in ../upstream-http.ts; Deepgram's bodies are
 * `{err_code, err_msg, request_id}` (newer endpoints: `{category, message, details}`).
 *
 * With diarize, the text is `[Speaker N]: …` lines (the spec's format, as every recognizer writes
 * them: ../transcript-format.ts): one line per turn, speakers numbered from 1 in order of first
 * appearance (Deepgram counts from 0). Turns come from the smart-format paragraphs (each carries
 * its speaker), or from the words' speakers when there are no paragraphs.
 */
import { audioDuration } from '../../media/audio-duration';
import { findFfmpeg } from '../../media/executables';
import { sniffAudio } from '../../media/sniff';
import { formatSpeakerLines, normalizeLanguage } from '../transcript-format';
import { CallOptions, ProviderAdapter, TranscriptionRequest, TranscriptionResult } from '../types';
import { isRecord, UpstreamHttp } from '../upstream-http';

export const DEEPGRAM_PROVIDER_NAME = 'deepgram';

export interface DeepgramProviderOptions {
  /** e.g. `https://api.deepgram.com` (the `/v1` is added here). */
  baseUrl: string;
  apiKey?: string;
  fetch?: typeof fetch;
  /** Where ffmpeg is (to measure audio when Deepgram reports no duration); defaults to `findFfmpeg()`. */
  ffmpeg?: () => string | null;
}

type Utterance = { speaker: number; text: string };

export function deepgramErrorMessage(body: unknown): string | null {
  if (!isRecord(body)) return null;
  if (typeof body.err_msg === 'string') return body.err_msg;
  if (typeof body.message === 'string') return typeof body.details === 'string' && body.details !== '' ? `${body.message} (${body.details})` : body.message;
  return null;
}

/** The `/v1/listen` query: smart formatting and punctuation always, diarize as asked, the language or detection. */
export function listenQuery(request: TranscriptionRequest): string {
  const query = new URLSearchParams({ model: request.upstreamModel, smart_format: 'true', punctuate: 'true', diarize: String(request.diarize) });
  if (request.language !== null) query.set('language', request.language);
  else query.set('detect_language', 'true');
  return query.toString();
}

function records(value: unknown): Record<string, unknown>[] {
  return Array.isArray(value) ? value.filter(isRecord) : [];
}

function turnsFromParagraphs(alternative: Record<string, unknown>): Utterance[] | null {
  const paragraphs = isRecord(alternative.paragraphs) ? records(alternative.paragraphs.paragraphs) : [];
  if (paragraphs.length === 0 || !paragraphs.every((p) => typeof p.speaker === 'number')) return null;
  return paragraphs.map((p) => ({
    speaker: p.speaker as number,
    text: records(p.sentences)
      .map((s) => (typeof s.text === 'string' ? s.text.trim() : ''))
      .filter((t) => t !== '')
      .join(' '),
  }));
}

function turnsFromWords(alternative: Record<string, unknown>): Utterance[] {
  return records(alternative.words).map((w) => ({
    speaker: typeof w.speaker === 'number' ? w.speaker : 0,
    text: typeof w.punctuated_word === 'string' ? w.punctuated_word : typeof w.word === 'string' ? w.word : '',
  }));
}

export function createDeepgramProvider(options: DeepgramProviderOptions): ProviderAdapter {
  const http = new UpstreamHttp({
    name: DEEPGRAM_PROVIDER_NAME,
    baseUrl: options.baseUrl,
    fetch: options.fetch,
    authHeaders: options.apiKey ? { authorization: `Token ${options.apiKey}` } : {},
    secrets: options.apiKey ? [options.apiKey] : [],
    errorMessage: deepgramErrorMessage,
  });
  const ffmpeg = options.ffmpeg ?? findFfmpeg;

  async function transcribe(request: TranscriptionRequest, call: CallOptions): Promise<TranscriptionResult> {
    const contentType = sniffAudio(request.audio)?.contentType ?? 'application/octet-stream';
    const response = await http.post(`/v1/listen?${listenQuery(request)}`, request.audio, { 'content-type': contentType, accept: 'application/json' }, call.signal);
    const json = await http.readJson(response, call.signal);
    const results = isRecord(json) && isRecord(json.results) ? json.results : null;
    const channel = results ? records(results.channels)[0] : undefined;
    const alternative = channel ? records(channel.alternatives)[0] : undefined;
    if (!channel || !alternative || typeof alternative.transcript !== 'string') throw http.malformed('transcription');

    const text = request.diarize ? formatSpeakerLines(turnsFromParagraphs(alternative) ?? turnsFromWords(alternative)) : alternative.transcript.trim();
    const detected = typeof channel.detected_language === 'string' ? normalizeLanguage(channel.detected_language) : null;
    const metadata = isRecord(json) && isRecord(json.metadata) ? json.metadata : null;
    const durationSeconds =
      metadata && typeof metadata.duration === 'number' ? metadata.duration : (await audioDuration(request.audio, ffmpeg(), call.signal)).seconds;
    return { text, language: detected ?? request.language ?? 'und', durationSeconds };
  }

  return { name: DEEPGRAM_PROVIDER_NAME, transcription: { transcribe } };
}
