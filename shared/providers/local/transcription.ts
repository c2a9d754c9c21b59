/**
 * The built-in offline speech recognizer: CMU PocketSphinx (Debian's `pocketsphinx` +
 * `pocketsphinx-en-us`, US English only), no neural model. Clear speech only.
 *
 * The input (any format ffmpeg reads: mp3, wav, ogg, m4a, flac, webm, mp4) is decoded to 16 kHz
 * mono 16-bit PCM by ffmpeg, cut into utterances at pauses (energy VAD, dsp/diarize.ts), and the
 * utterances are decoded in one `pocketsphinx_batch` run (one model load; a control file lists the
 * frame ranges). `durationSeconds` is the decoded sample count over 16,000.
 *
 * `diarize: true`: the utterances are labelled by speaker (voice profiles clustered, see
 * dsp/diarize.ts) and the text is `[Speaker N]: ...` lines, consecutive utterances of one speaker
 * on one line.
 */
import fs from 'node:fs';
import path from 'node:path';
import { findFfmpeg } from '../../media/executables';
import { runProgram } from '../../media/run-program';
import { abortError } from '../abort';
import { formatSpeakerLines, normalizeLanguage } from '../transcript-format';
import { ProviderError } from '../types';
import type { CallOptions, TranscriptionProvider, TranscriptionRequest, TranscriptionResult } from '../types';
import { decodeAudioFile, withTempDir } from './audio-process';
import { findPocketsphinx, findPocketsphinxModel } from './audio-tools';
import type { PocketsphinxModel } from './audio-tools';
import { detectSpeechSegments, diarizeSegments } from './dsp/diarize';
import type { Segment } from './dsp/diarize';
import { toInt16Bytes } from './dsp/wav';

export const STT_SAMPLE_RATE = 16_000;
/** PocketSphinx's frame rate (`-frate`, frames a second). */
const FRAMES_PER_SECOND = 100;
/** Utterance cutting when no speakers are wanted: longer pauses, longer utterances. */
const PLAIN_VAD = { minPauseSeconds: 0.45, maxSegmentSeconds: 20 };

/**
 * Decodes each segment of 16 kHz mono audio with one `pocketsphinx_batch` run; returns one text
 * per segment (empty where nothing was recognized).
 */
export async function recognizeWithPocketsphinx(
  binary: string,
  model: PocketsphinxModel,
  samples: Float32Array,
  segments: Segment[],
  signal: AbortSignal,
): Promise<string[]> {
  if (segments.length === 0) return [];
  return withTempDir('gensvc-stt-', async (dir) => {
    await fs.promises.writeFile(path.join(dir, 'audio.raw'), toInt16Bytes(samples));
    const samplesPerFrame = STT_SAMPLE_RATE / FRAMES_PER_SECOND;
    const ctl = segments
      .map((segment, i) => `audio ${Math.floor(segment.start / samplesPerFrame)} ${Math.max(Math.floor(segment.start / samplesPerFrame) + 1, Math.ceil(segment.end / samplesPerFrame))} u${i}`)
      .join('\n');
    await fs.promises.writeFile(path.join(dir, 'audio.ctl'), `${ctl}\n`);
    const hypPath = path.join(dir, 'hyp.txt');
    const args = [
      '-adcin', 'yes', '-adchdr', '0', '-samprate', String(STT_SAMPLE_RATE), '-input_endian', 'little',
      '-cepdir', dir, '-cepext', '.raw', '-ctl', path.join(dir, 'audio.ctl'), '-hyp', hypPath,
      '-hmm', model.hmm, '-lm', model.lm, '-dict', model.dict,
      '-logfn', '/dev/null',
    ];
    await runProgram('pocketsphinx', binary, args, { signal });
    const texts = new Array<string>(segments.length).fill('');
    const hyp = await fs.promises.readFile(hypPath, 'utf8').catch(() => '');
    for (const line of hyp.split('\n')) {
      const match = /^(.*?)\s*\(u(\d+)(?:\s+-?\d+)?\)\s*$/.exec(line);
      if (!match) continue;
      const index = Number(match[2]);
      if (index < texts.length) texts[index] = match[1].replace(/<[^>]*>|\[[^\]]*\]|\(\d+\)/g, ' ').replace(/\s+/g, ' ').trim();
    }
    return texts;
  });
}

export interface LocalTranscriptionOptions {
  /** Default: `pocketsphinx_batch` on PATH. */
  pocketsphinxPath?: string | null;
  /** Default: Debian's US English model. */
  model?: PocketsphinxModel | null;
  /** Default: `findFfmpeg()`. */
  ffmpegPath?: string | null;
}

export class LocalTranscriptionProvider implements TranscriptionProvider {
  constructor(private readonly options: LocalTranscriptionOptions = {}) {}

  /** Whether PocketSphinx, its English model and ffmpeg were all found. */
  available(): boolean {
    return this.binary() !== null && this.model() !== null && this.ffmpeg() !== null;
  }

  async transcribe(request: TranscriptionRequest, options: CallOptions): Promise<TranscriptionResult> {
    const { signal } = options;
    if (signal.aborted) throw abortError(signal);
    const language = normalizeLanguage(request.language);
    if (language !== null && language !== 'en') {
      throw new ProviderError('bad_request', `language ${request.language} is not supported by the local recognizer: English (en) only`);
    }
    if (request.audio.length === 0) throw new ProviderError('bad_request', 'the audio is empty');
    const binary = this.binary();
    const model = this.model();
    const ffmpeg = this.ffmpeg();
    if (!binary || !model) throw new ProviderError('unavailable', 'PocketSphinx is not installed: apt-get install pocketsphinx pocketsphinx-en-us');
    if (!ffmpeg) throw new ProviderError('unavailable', 'ffmpeg is not available: install the system ffmpeg or the npm package @ffmpeg-installer/ffmpeg');

    const audio = await decodeAudioFile(ffmpeg, request.audio, STT_SAMPLE_RATE, 1, signal);
    const samples = audio.samples;
    const durationSeconds = samples.length / STT_SAMPLE_RATE;
    options.onProgress?.(15);

    let text: string;
    if (request.diarize) {
      const labelled = diarizeSegments(samples, STT_SAMPLE_RATE, detectSpeechSegments(samples, STT_SAMPLE_RATE));
      options.onProgress?.(40);
      const texts = await recognizeWithPocketsphinx(binary, model, samples, labelled, signal);
      text = formatSpeakerLines(labelled.map((segment, i) => ({ speaker: segment.speaker, text: texts[i] })));
    } else {
      const segments = detectSpeechSegments(samples, STT_SAMPLE_RATE, PLAIN_VAD);
      options.onProgress?.(25);
      const texts = await recognizeWithPocketsphinx(binary, model, samples, segments, signal);
      text = texts.filter((t) => t !== '').join(' ');
    }
    options.onProgress?.(100);
    return { text, language: 'en', durationSeconds };
  }

  private binary(): string | null {
    return this.options.pocketsphinxPath === undefined ? findPocketsphinx() : this.options.pocketsphinxPath;
  }

  private model(): PocketsphinxModel | null {
    return this.options.model === undefined ? findPocketsphinxModel() : this.options.model;
  }

  private ffmpeg(): string | null {
    return this.options.ffmpegPath === undefined ? findFfmpeg() : this.options.ffmpegPath;
  }
}
