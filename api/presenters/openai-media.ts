/**
 * Our image, transcription and video generations in OpenAI's wire shapes (/v1): an images
 * response, a transcription in each response format (json, text, verbose_json, srt, vtt), and a
 * video job. Ids are ours with OpenAI's prefixes (`video_<id>`).
 */
import type { Generation } from '../../shared/db/entities';
import { presentError } from './errors';
import { failedGenerationError } from './openai';

const seconds = (date: Date): number => Math.floor(date.getTime() / 1000);

function metadataOf(generation: Generation): Record<string, unknown> {
  try {
    return generation.resultMetadata ? (JSON.parse(generation.resultMetadata) as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

const numberOr = (value: unknown, fallback: number): number => (typeof value === 'number' && Number.isFinite(value) ? value : fallback);

// Images ------------------------------------------------------------------------------------------

/** A completed image generation: its URL under PUBLIC_BASE_URL, or its bytes (`b64_json`) when given. */
export function presentImages(generation: Generation, options: { publicBaseUrl: string; bytes: Buffer | null }) {
  const metadata = metadataOf(generation);
  const extension = generation.resultKey?.split('.').pop() ?? 'png';
  const image = options.bytes ? { b64_json: options.bytes.toString('base64') } : { url: `${options.publicBaseUrl}/files/${generation.resultKey ?? ''}` };
  return {
    created: seconds(generation.createdAt),
    data: [image],
    output_format: extension === 'jpg' ? 'jpeg' : extension,
    ...(typeof metadata.width === 'number' && typeof metadata.height === 'number' ? { size: `${metadata.width}x${metadata.height}` } : {}),
  };
}

// Transcriptions ----------------------------------------------------------------------------------

export type TranscriptFormat = 'json' | 'text' | 'verbose_json' | 'srt' | 'vtt';

/** What a recognizer gave: the text, its language (ISO 639-1) and how long the audio plays. */
interface Transcript {
  text: string;
  language: string;
  duration: number;
}

function transcriptOf(generation: Generation): Transcript {
  const metadata = metadataOf(generation);
  return {
    text: generation.resultText ?? '',
    language: typeof metadata.language === 'string' ? metadata.language : '',
    duration: Math.max(0, numberOr(metadata.duration, 0)),
  };
}

/** Whisper names the language in English words (`english`), not by its code. */
function languageName(code: string): string {
  if (!code) return '';
  try {
    return (new Intl.DisplayNames(['en'], { type: 'language' }).of(code) ?? code).toLowerCase();
  } catch {
    return code;
  }
}

/** `HH:MM:SS<separator>mmm`, the cue times of SRT (`,`) and WebVTT (`.`). */
function cueTime(totalSeconds: number, separator: ',' | '.'): string {
  const ms = Math.round(totalSeconds * 1000);
  const pad = (n: number, width = 2): string => String(n).padStart(width, '0');
  return `${pad(Math.floor(ms / 3_600_000))}:${pad(Math.floor(ms / 60_000) % 60)}:${pad(Math.floor(ms / 1000) % 60)}${separator}${pad(ms % 1000, 3)}`;
}

/**
 * The cues: our recognizers give the whole text and the audio's duration, not times within it,
 * so the text is one cue spanning the audio (none for silence). A blank line would end a cue
 * early in both formats, so the text's blank lines are closed up.
 */
function cuesOf(transcript: Transcript): Array<{ start: number; end: number; text: string }> {
  const text = transcript.text.trim().replace(/\n\s*\n+/g, '\n');
  return text ? [{ start: 0, end: transcript.duration, text }] : [];
}

/** A transcription in `format`: a JSON body, or text with its content type. */
export function presentTranscription(generation: Generation, format: TranscriptFormat, temperature: number): { body: unknown; contentType: string } {
  const transcript = transcriptOf(generation);
  const usage = { type: 'duration', seconds: Math.ceil(transcript.duration) };
  switch (format) {
    case 'json':
      return { body: { text: transcript.text, usage }, contentType: 'application/json' };
    case 'text':
      return { body: `${transcript.text}\n`, contentType: 'text/plain; charset=utf-8' };
    case 'verbose_json':
      return {
        contentType: 'application/json',
        body: {
          task: 'transcribe',
          language: languageName(transcript.language),
          duration: transcript.duration,
          text: transcript.text,
          // Whisper's per-segment statistics are not something our recognizers report: zero, not invented.
          segments: cuesOf(transcript).map((cue, id) => ({ id, seek: 0, start: cue.start, end: cue.end, text: cue.text, tokens: [], temperature, avg_logprob: 0, compression_ratio: 0, no_speech_prob: 0 })),
          usage,
        },
      };
    case 'srt':
      return { body: cuesOf(transcript).map((cue, i) => `${i + 1}\n${cueTime(cue.start, ',')} --> ${cueTime(cue.end, ',')}\n${cue.text}\n\n`).join(''), contentType: 'text/plain; charset=utf-8' };
    case 'vtt':
      return { body: `WEBVTT\n\n${cuesOf(transcript).map((cue) => `${cueTime(cue.start, '.')} --> ${cueTime(cue.end, '.')}\n${cue.text}\n\n`).join('')}`, contentType: 'text/vtt; charset=utf-8' };
  }
}

// Videos ------------------------------------------------------------------------------------------

export function videoId(generation: Pick<Generation, 'id'>): string {
  return `video_${generation.id}`;
}

/** What a video job shows beyond its row: the clip's length and size as asked (or made), and when its files go. */
export interface VideoFacts {
  seconds: string;
  size: string;
  expiresAt: number | null;
}

/** A video generation as OpenAI's video job: queued until a worker starts it, in progress, completed or failed. */
export function presentVideo(generation: Generation, facts: VideoFacts) {
  const ended = generation.status !== 'pending';
  const failure = generation.status === 'failed' ? (presentError('openai', failedGenerationError(generation), '').body as { error: { code: string; message: string } }).error : null;
  return {
    id: videoId(generation),
    object: 'video' as const,
    model: generation.modelSlug,
    status: ended ? generation.status : generation.startedAt ? 'in_progress' : 'queued',
    progress: generation.status === 'completed' ? 100 : generation.progress,
    created_at: seconds(generation.createdAt),
    completed_at: ended && generation.completedAt ? seconds(generation.completedAt) : null,
    expires_at: facts.expiresAt,
    error: failure ? { code: failure.code, message: failure.message } : null,
    prompt: generation.prompt,
    remixed_from_video_id: null,
    seconds: facts.seconds,
    size: facts.size,
  };
}

export function presentVideoList(videos: Array<ReturnType<typeof presentVideo>>, hasMore: boolean) {
  return { object: 'list', data: videos, first_id: videos[0]?.id ?? null, last_id: videos.at(-1)?.id ?? null, has_more: hasMore };
}
