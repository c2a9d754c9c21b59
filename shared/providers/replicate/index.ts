/**
 * The adapter for Replicate-style asynchronous predictions: `POST {base}/models/{owner}/{name}/predictions`
 * with `{input}`, then `GET {base}/predictions/{id}` with exponential backoff (a Retry-After wins)
 * until the prediction succeeds, fails or is canceled; the first output URL is downloaded. With a
 * webhook configured the provider is also asked to call us on completion, which only makes the
 * poll happen now (see PredictionSignals). An abort (the model's timeout, a cancelled job) cancels
 * the prediction upstream, best effort, and fails with `timeout`. Image tools map their inputs
 * per tool (see tools.ts); OCR's output is the text itself, not a file.
 */
import { findFfmpeg } from '../../media/executables';
import { CallOptions, ImageRequest, MusicRequest, ProviderAdapter, ProviderError, VideoRequest } from '../types';
import { isRecord } from '../upstream-http';
import { PollAnswer, Prediction, REPLICATE_PROVIDER_NAME, ReplicateHttp } from './http';
import { imageResult, musicResult, videoResult } from './media';
import { outputText, TOOL_MAPPINGS, toolImageResult, toolInput, toolOf } from './tools';
import { PredictionSignals } from './signals';

export { PredictionSignals } from './signals';
export { REPLICATE_PROVIDER_NAME } from './http';

export interface ReplicateProviderOptions {
  /** e.g. `https://api.replicate.com/v1`. */
  baseUrl: string;
  apiKey?: string;
  fetch?: typeof fetch;
  /** Where the provider posts on completion (our `/api/v2/providers/replicate/webhook`), and who hears it. */
  webhook?: { url: string; signals: PredictionSignals };
  /** First wait between polls; doubles up to `pollMaxMs`. */
  pollInitialMs?: number;
  pollMaxMs?: number;
  /** Where ffmpeg is (for video thumbnails); defaults to `findFfmpeg()`. Null: no thumbnail. */
  ffmpeg?: () => string | null;
}

/** Consecutive poll failures (5xx, network) tolerated while the prediction runs upstream. */
const MAX_POLL_FAILURES = 5;
const TERMINAL = new Set(['succeeded', 'failed', 'canceled', 'aborted']);
/** Failure texts that mean the provider refused the content rather than failed at it. */
const POLICY_WORDING = /nsfw|content polic|safety|flagged|sensitive|moderation|not allowed|inappropriate|prohibited/i;
/** Failure texts worth another attempt (the job's retries make one). */
const TRANSIENT_WORDING = /out of memory|cuda|timed? ?out|try again|capacity|unavailable|interrupted|preempted/i;

/** A wait between polls that a webhook signal can end early (and that remembers a signal sent mid-poll). */
class Waker {
  private signalled = false;
  private release: (() => void) | null = null;

  wake(): void {
    this.signalled = true;
    this.release?.();
  }

  /** Forgets earlier signals: called right before a poll, which sees whatever they announced. */
  consume(): void {
    this.signalled = false;
  }

  sleep(ms: number, signal: AbortSignal): Promise<void> {
    if (this.signalled || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.release = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.release = done;
    });
  }
}

/** The latest percentage in the logs (`45%|████`), if any. */
export function progressFromLogs(logs: string): number | null {
  const matches = [...logs.slice(-2000).matchAll(/(\d{1,3}(?:\.\d+)?)\s?%/g)];
  const last = matches[matches.length - 1];
  if (!last) return null;
  const value = Number(last[1]);
  return value >= 0 && value <= 100 ? value : null;
}

/** The first output file: a URL, the first of a list, or the first URL among an object's values. */
export function firstOutputUrl(output: unknown): string | null {
  if (typeof output === 'string') return output !== '' ? output : null;
  if (Array.isArray(output)) {
    for (const item of output) {
      const url = firstOutputUrl(item);
      if (url) return url;
    }
    return null;
  }
  if (isRecord(output)) {
    for (const value of Object.values(output)) {
      if (typeof value === 'string' && /^(https?:|data:)/i.test(value)) return value;
    }
  }
  return null;
}

function dataUri(bytes: Buffer, contentType: string): string {
  return `data:${contentType};base64,${bytes.toString('base64')}`;
}

function imageContentType(bytes: Buffer): string {
  if (bytes[0] === 0x89) return 'image/png';
  if (bytes[0] === 0xff) return 'image/jpeg';
  if (bytes.toString('latin1', 8, 12) === 'WEBP') return 'image/webp';
  return 'application/octet-stream';
}

export function imageInput(request: ImageRequest): Record<string, unknown> {
  const input: Record<string, unknown> = { prompt: request.prompt, output_format: request.format === 'jpeg' ? 'jpg' : request.format };
  if (request.aspectRatio !== null) input.aspect_ratio = request.aspectRatio;
  else {
    input.width = request.width;
    input.height = request.height;
  }
  if (request.negativePrompt !== null) input.negative_prompt = request.negativePrompt;
  if (request.seed !== 0) input.seed = request.seed;
  if (request.inputImage) input.image = dataUri(request.inputImage, imageContentType(request.inputImage));
  return input;
}

export function videoInput(request: VideoRequest): Record<string, unknown> {
  const input: Record<string, unknown> = {
    prompt: request.prompt,
    duration: request.durationSeconds,
    aspect_ratio: request.aspectRatio,
    resolution: request.resolution,
  };
  if (request.negativePrompt !== null) input.negative_prompt = request.negativePrompt;
  if (request.seed !== 0) input.seed = request.seed;
  if (request.startImage) input.start_image = dataUri(request.startImage, imageContentType(request.startImage));
  return input;
}

export function musicInput(request: MusicRequest): Record<string, unknown> {
  const input: Record<string, unknown> = { prompt: request.prompt, duration: request.durationSeconds, output_format: request.format };
  if (request.lyrics !== null && !request.instrumental) input.lyrics = request.lyrics;
  if (request.seed !== 0) input.seed = request.seed;
  return input;
}

/** A prediction that ended without success, as the ProviderError the runner understands. */
export function failureOf(prediction: Prediction, scrub: (text: string) => string): ProviderError {
  const message = scrub(prediction.error ?? '').trim().slice(0, 500);
  if (prediction.status === 'canceled' || prediction.status === 'aborted') {
    return new ProviderError('unavailable', `The replicate prediction was ${prediction.status === 'canceled' ? 'canceled' : 'aborted'} by the provider`);
  }
  if (message !== '' && POLICY_WORDING.test(message)) return new ProviderError('refused', message);
  if (message !== '' && TRANSIENT_WORDING.test(message)) return new ProviderError('unavailable', `The replicate prediction failed: ${message}`);
  return new ProviderError('bad_request', message !== '' ? `The replicate prediction failed: ${message}` : 'The replicate prediction failed');
}

const REF_PREFIX = `${REPLICATE_PROVIDER_NAME}:`;

function refOf(predictionId: string): string {
  return `${REF_PREFIX}${predictionId}`;
}

export function createReplicateProvider(options: ReplicateProviderOptions): ProviderAdapter {
  const http = new ReplicateHttp(options);
  const pollInitialMs = options.pollInitialMs ?? 1_000;
  const pollMaxMs = Math.max(pollInitialMs, options.pollMaxMs ?? 10_000);
  const ffmpeg = options.ffmpeg ?? findFfmpeg;
  const webhook = options.webhook;

  function timedOut(): ProviderError {
    return new ProviderError('timeout', `The ${REPLICATE_PROVIDER_NAME} prediction did not finish in time; it was canceled`);
  }

  function reportProgress(prediction: Prediction, call: CallOptions): void {
    if (!call.onProgress) return;
    const fromLogs = progressFromLogs(prediction.logs);
    if (fromLogs !== null) call.onProgress(fromLogs);
    else if (prediction.status === 'processing') call.onProgress(10);
  }

  /** Waits for a prediction to end: polls with backoff, woken early by its webhook. */
  async function settle(first: Prediction, call: CallOptions): Promise<Prediction> {
    let prediction = first;
    const waker = new Waker();
    const unwatch = webhook ? await webhook.signals.watch(prediction.id, () => waker.wake()) : () => undefined;
    let backoff = pollInitialMs;
    let wait = pollInitialMs;
    let failures = 0;
    try {
      while (!TERMINAL.has(prediction.status)) {
        reportProgress(prediction, call);
        await waker.sleep(wait, call.signal);
        if (call.signal.aborted) throw timedOut();
        waker.consume();
        backoff = Math.min(backoff * 2, pollMaxMs);
        let answer: PollAnswer;
        try {
          answer = await http.get(prediction.id, call.signal);
        } catch (error) {
          throw call.signal.aborted ? timedOut() : error;
        }
        if (answer.transientFailure) {
          failures += 1;
          if (failures >= MAX_POLL_FAILURES) throw answer.transientFailure;
        } else {
          failures = 0;
        }
        if (answer.prediction) prediction = answer.prediction;
        // A 429 without Retry-After waits the longest interval.
        wait = answer.retryAfterMs ?? (answer.prediction || answer.transientFailure ? backoff : pollMaxMs);
      }
      return prediction;
    } catch (error) {
      await http.cancel(prediction.id);
      throw error;
    } finally {
      unwatch();
    }
  }

  /**
   * The prediction an earlier run of this generation started, when it can still give a result
   * (running, or succeeded): resumed instead of paying for a new one. A failed or canceled one,
   * or one the API no longer knows, is not.
   */
  async function resumable(call: CallOptions): Promise<Prediction | null> {
    const previous = call.upstreamRef?.previous;
    if (!previous?.startsWith(REF_PREFIX)) return null;
    const answer = await http.get(previous.slice(REF_PREFIX.length), call.signal).catch(() => null);
    const prediction = answer?.prediction;
    if (!prediction || prediction.status === 'failed' || prediction.status === 'canceled') return null;
    return prediction;
  }

  /** Creates a prediction and waits for it to succeed; its output. */
  async function outputOf(upstreamModel: string, input: Record<string, unknown>, call: CallOptions): Promise<unknown> {
    const body: Record<string, unknown> = { input };
    if (webhook) {
      body.webhook = webhook.url;
      body.webhook_events_filter = ['completed'];
    }
    const created = (await resumable(call)) ?? (await http.create(upstreamModel, body, call.signal));
    if (call.upstreamRef && call.upstreamRef.previous !== refOf(created.id)) await call.upstreamRef.save(refOf(created.id));
    const prediction = await settle(created, call);
    if (prediction.status !== 'succeeded') throw failureOf(prediction, (text) => http.scrub(text));
    return prediction.output;
  }

  /** Creates a prediction, waits for it and downloads its first output. */
  async function predict(upstreamModel: string, input: Record<string, unknown>, call: CallOptions): Promise<Buffer> {
    const url = firstOutputUrl(await outputOf(upstreamModel, input, call));
    if (!url) throw new ProviderError('unavailable', `The ${REPLICATE_PROVIDER_NAME} prediction succeeded without an output file`);
    call.onProgress?.(99);
    return http.download(url, call.signal);
  }

  return {
    name: REPLICATE_PROVIDER_NAME,
    image: {
      async generate(request, call) {
        return imageResult(await predict(request.upstreamModel, imageInput(request), call), request);
      },
    },
    video: {
      async generate(request, call) {
        return videoResult(await predict(request.upstreamModel, videoInput(request), call), request, ffmpeg(), call.signal);
      },
    },
    music: {
      async compose(request, call) {
        return musicResult(await predict(request.upstreamModel, musicInput(request), call), request);
      },
    },
    tool: {
      async run(request, call) {
        const mapping = TOOL_MAPPINGS[toolOf(request)];
        const input = toolInput(request, mapping);
        if (mapping.output === 'image') return toolImageResult(await predict(request.upstreamModel, input, call), request.params);
        const text = outputText(await outputOf(request.upstreamModel, input, call));
        if (text === null) throw new ProviderError('unavailable', `The ${REPLICATE_PROVIDER_NAME} prediction succeeded without a text output`);
        call.onProgress?.(99);
        return { kind: 'text', text: text.trim() };
      },
    },
  };
}
