/**
 * POST /v1/audio/speech and /v1/audio/transcriptions driven by the official `openai` client
 * against the real app over the fake provider (its speech engine answering real audio, so what
 * is re-encoded can be decoded): every response format of both, voices mapped or refused, every
 * error class, billing and history as for the same work through /api/v2.
 */
import path from 'node:path';
import OpenAI, { toFile } from 'openai';
import { Generation } from '../shared/db/entities';
import { audioDuration } from '../shared/media/audio-duration';
import { findFfmpeg } from '../shared/media/executables';
import type { SpeechRequest, TranscriptionRequest } from '../shared/providers/types';
import { useTestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { speakingProvider, TONE_SECONDS, toneFiles } from './helpers/real-audio';
import { moneyOf, lastGeneration, ledgerRowsOf, rejectionOf, vipClient } from './helpers/v1-clients';

const fake = new FakeProvider('fake');
const tone = toneFiles();
let oggIsOpus = false;
const t = useTestApp(
  { CATALOG_PATH: path.join(__dirname, 'fixtures/v1-media-catalog.json'), CONTENT_POLICY_BLOCKLIST: 'forbidden' },
  { providers: [speakingProvider(fake, tone, { oggIsOpus: () => oggIsOpus })] },
);
beforeEach(() => {
  fake.reset();
  oggIsOpus = false;
});

const speechCalls = (): SpeechRequest[] => fake.calls.filter((c) => c.capability === 'speech').map((c) => c.request as SpeechRequest);
const bytesOf = async (response: Response): Promise<Buffer> => Buffer.from(await response.arrayBuffer());
/** That the audio decodes and plays as long as the tone (AAC adds a priming frame or two). */
async function expectTheTone(bytes: Buffer): Promise<void> {
  const { seconds } = await audioDuration(bytes, findFfmpeg(), AbortSignal.timeout(10_000));
  expect(seconds).toBeGreaterThanOrEqual(TONE_SECONDS - 0.02);
  expect(seconds).toBeLessThanOrEqual(TONE_SECONDS + 0.1);
}

describe('audio.speech.create', () => {
  it('answers the audio bytes with their content type, charged and in history like /api/v2', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    const response = await openai.audio.speech.create({ model: 'fake-tts', input: 'Hello there', voice: 'echo', response_format: 'mp3', speed: 1.25 });
    expect(response.headers.get('content-type')).toBe('audio/mpeg');
    expect(response.headers.get('x-ratelimit-limit-hour')).toBe('100');
    expect((await bytesOf(response)).equals(tone.mp3)).toBe(true);
    expect(speechCalls().at(-1)).toMatchObject({ text: 'Hello there', voice: 'echo', speed: 1.25, format: 'mp3' });
    const row = await lastGeneration(t.app, user.id);
    expect(row).toMatchObject({ modelSlug: 'fake-tts', category: 'tts', status: 'completed', tokensSpent: 2, prompt: 'Hello there' });
    expect(await ledgerRowsOf(t.app, row.id)).toHaveLength(1);
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total - 2, held: 0 });
    const direct = await t.app.http().post('/api/v2/generate').set('authorization', `Bearer ${user.accessToken}`).send({ model: 'fake-tts', text: 'Hello there', voice_id: 'echo' });
    expect(direct.body).toMatchObject({ status: 'completed', tokens_used: 2 });
  });

  it('answers wav as the model made it, and mp3 by default', async () => {
    const { openai } = await vipClient(t.app);
    const wav = await openai.audio.speech.create({ model: 'fake-tts', input: 'wave', voice: 'nova', response_format: 'wav' });
    expect(wav.headers.get('content-type')).toBe('audio/wav');
    expect((await bytesOf(wav)).equals(tone.wav)).toBe(true);
    const plain = await openai.audio.speech.create({ model: 'fake-tts', input: 'plain', voice: 'nova' });
    expect((await bytesOf(plain)).equals(tone.mp3)).toBe(true);
  });

  it('answers opus as Ogg/Opus: the model\'s own when it is Opus, re-encoded from Vorbis otherwise', async () => {
    const { openai } = await vipClient(t.app);
    oggIsOpus = true;
    const own = await openai.audio.speech.create({ model: 'fake-tts', input: 'opus', voice: 'alloy', response_format: 'opus' });
    expect(own.headers.get('content-type')).toBe('audio/opus');
    expect((await bytesOf(own)).equals(tone.opus)).toBe(true);
    oggIsOpus = false;
    const converted = await bytesOf(await openai.audio.speech.create({ model: 'fake-tts', input: 'vorbis', voice: 'alloy', response_format: 'opus' }));
    expect(converted.subarray(0, 4).toString('latin1')).toBe('OggS');
    expect(converted.subarray(0, 96).includes('OpusHead')).toBe(true);
    await expectTheTone(converted);
    expect(speechCalls().map((c) => c.format)).toEqual(['ogg', 'ogg']);
  });

  it('re-encodes aac, flac and pcm (24 kHz 16-bit mono, no header) from the model\'s WAV', async () => {
    const { openai } = await vipClient(t.app);
    const aac = await openai.audio.speech.create({ model: 'fake-tts', input: 'aac', voice: 'alloy', response_format: 'aac' });
    expect(aac.headers.get('content-type')).toBe('audio/aac');
    const aacBytes = await bytesOf(aac);
    // ADTS frames begin with 12 sync bits.
    expect([aacBytes[0], (aacBytes[1] ?? 0) & 0xf0]).toEqual([0xff, 0xf0]);
    await expectTheTone(aacBytes);
    const flac = await openai.audio.speech.create({ model: 'fake-tts', input: 'flac', voice: 'alloy', response_format: 'flac' });
    expect(flac.headers.get('content-type')).toBe('audio/flac');
    const flacBytes = await bytesOf(flac);
    expect(flacBytes.subarray(0, 4).toString('latin1')).toBe('fLaC');
    await expectTheTone(flacBytes);
    const pcm = await openai.audio.speech.create({ model: 'fake-tts', input: 'pcm', voice: 'alloy', response_format: 'pcm' });
    expect(pcm.headers.get('content-type')).toBe('audio/pcm');
    const pcmBytes = await bytesOf(pcm);
    expect(pcmBytes.subarray(0, 4).toString('latin1')).not.toBe('RIFF');
    expect(Math.abs(pcmBytes.length - 24_000 * 2 * TONE_SECONDS)).toBeLessThan(200);
    expect(speechCalls().map((c) => c.format)).toEqual(['wav', 'wav', 'wav']);
  });

  it('maps OpenAI voice names onto a model\'s own voices, passes the model\'s and its provider\'s ids, refuses the rest', async () => {
    const { openai } = await vipClient(t.app);
    const voices = [];
    for (const voice of ['alloy', 'onyx', 'adam', 'voice_1234']) {
      await openai.audio.speech.create({ model: 'fake-voices', input: 'hi', voice });
      voices.push(speechCalls().at(-1)?.voice);
    }
    expect(voices).toEqual(['rachel', 'adam', 'adam', 'voice_1234']);
    await openai.audio.speech.create({ model: 'fake-tts', input: 'hi', voice: { id: 'nova' } });
    expect(speechCalls().at(-1)?.voice).toBe('nova');
    fake.reset();
    for (const [model, voice] of [
      ['fake-voices', 'nova'],
      ['fake-tts', 'shimmer'],
      ['fake-tts', 'rachel'],
    ]) {
      const error = await rejectionOf(openai.audio.speech.create({ model: model as string, input: 'hi', voice: voice as string }));
      expect({ model, voice, error }).toMatchObject({ error: { status: 400, param: 'voice' } });
    }
    expect(fake.calls).toEqual([]);
  });

  it('refuses bad fields with 400 naming the parameter, before any provider call or charge', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ model: 'fake-tts', input: 'x', voice: 'alloy', response_format: 'ogg' }, 'response_format'],
      [{ model: 'fake-tts', input: 'x', voice: 'alloy', speed: 3 }, 'speed'],
      [{ model: 'fake-tts', input: 'x', voice: 'alloy', stream_format: 'sse' }, 'stream_format'],
      [{ model: 'fake-tts', input: 'x'.repeat(101), voice: 'alloy' }, 'input'],
      [{ model: 'fake-tts', input: '  ', voice: 'alloy' }, 'input'],
      [{ model: 'fake-tts', voice: 'alloy' }, 'input'],
      [{ model: 'fake-tts', input: 'x' }, 'voice'],
      [{ model: 'fake-stt', input: 'x', voice: 'alloy' }, 'model'],
    ];
    for (const [body, param] of cases) {
      const error = await rejectionOf(openai.audio.speech.create(body as unknown as OpenAI.Audio.SpeechCreateParams));
      expect({ body, error }).toMatchObject({ body, error: { status: 400, type: 'invalid_request_error', param } });
    }
    expect(await rejectionOf(openai.audio.speech.create({ model: 'tts-9', input: 'x', voice: 'alloy' }))).toBeInstanceOf(OpenAI.NotFoundError);
    expect(fake.calls).toEqual([]);
    expect(await t.app.container.db.repo(Generation).countBy({ userId: user.id })).toBe(0);
    expect(await moneyOf(t.app, user.id)).toEqual(before);
  });

  it('replays with the same Idempotency-Key, charged once; the content policy and a refusal are uncharged 400s', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    const body = { model: 'fake-tts', input: 'once', voice: 'alloy' as const, response_format: 'flac' as const };
    const first = await bytesOf(await openai.audio.speech.create(body, { headers: { 'Idempotency-Key': 'speech-1' } }));
    const second = await bytesOf(await openai.audio.speech.create(body, { headers: { 'Idempotency-Key': 'speech-1' } }));
    expect(second.equals(first)).toBe(true);
    expect(speechCalls()).toHaveLength(1);
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total - 2, held: 0 });
    expect(await rejectionOf(openai.audio.speech.create({ ...body, input: 'a forbidden word' }))).toMatchObject({ status: 400, code: 'content_policy_violation' });
    fake.next({ kind: 'refuse', message: 'That voice may not say this' });
    expect(await rejectionOf(openai.audio.speech.create({ ...body, input: 'refused' }))).toMatchObject({ status: 400, code: 'content_policy_violation' });
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total - 2, held: 0 });
  });
});

describe('audio.transcriptions.create', () => {
  const file = () => toFile(tone.wav, 'speech.wav', { type: 'audio/wav' });

  it('answers json, charged and in history like /api/v2/stt, with the upload stored as its input', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    const { data: transcription, response } = await openai.audio.transcriptions.create({ file: await file(), model: 'fake-stt', language: 'en', prompt: 'A greeting.' }).withResponse();
    expect(transcription).toMatchObject({ text: 'hello world', usage: { type: 'duration', seconds: 2 } });
    expect(response.headers.get('x-ratelimit-limit-hour')).toBe('100');
    const sent = fake.calls.at(-1)?.request as TranscriptionRequest;
    expect(sent.audio.equals(tone.wav)).toBe(true);
    expect(sent.language).toBe('en');
    const row = await lastGeneration(t.app, user.id);
    expect(row).toMatchObject({ modelSlug: 'fake-stt', category: 'stt', status: 'completed', tokensSpent: 2, prompt: 'A greeting.', resultText: 'hello world' });
    expect(await ledgerRowsOf(t.app, row.id)).toHaveLength(1);
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total - 2, held: 0 });
    const direct = await t.app.http().post('/api/v2/stt').set('authorization', `Bearer ${user.accessToken}`).field('model', 'fake-stt').attach('audio', tone.wav, 'speech.wav');
    expect(direct.body).toMatchObject({ status: 'completed', tokens_spent: 2 });
  });

  it('answers text, verbose_json (one segment spanning the audio), srt and vtt', async () => {
    const { openai } = await vipClient(t.app);
    expect(await openai.audio.transcriptions.create({ file: await file(), model: 'fake-stt', response_format: 'text' })).toBe('hello world\n');
    const verbose = await openai.audio.transcriptions.create({ file: await file(), model: 'fake-stt', response_format: 'verbose_json', timestamp_granularities: ['segment'], temperature: 0.2 });
    expect(verbose).toEqual({
      task: 'transcribe',
      language: 'english',
      duration: 2,
      text: 'hello world',
      segments: [{ id: 0, seek: 0, start: 0, end: 2, text: 'hello world', tokens: [], temperature: 0.2, avg_logprob: 0, compression_ratio: 0, no_speech_prob: 0 }],
      usage: { type: 'duration', seconds: 2 },
    });
    expect(await openai.audio.transcriptions.create({ file: await file(), model: 'fake-stt', response_format: 'srt' })).toBe('1\n00:00:00,000 --> 00:00:02,000\nhello world\n\n');
    const vtt = await openai.audio.transcriptions.create({ file: await file(), model: 'fake-stt', response_format: 'vtt' }).withResponse();
    expect(vtt.data).toBe('WEBVTT\n\n00:00:00.000 --> 00:00:02.000\nhello world\n\n');
    expect(vtt.response.headers.get('content-type')).toBe('text/vtt; charset=utf-8');
  });

  it('refuses bad fields and files before any provider call or charge', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ response_format: 'verbose_json', timestamp_granularities: ['word'] }, 'timestamp_granularities'],
      [{ response_format: 'diarized_json' }, 'response_format'],
      [{ language: 'xx' }, 'language'],
      [{ temperature: 2 }, 'temperature'],
      [{ stream: true }, 'stream'],
      [{ model: 'fake-tts' }, 'model'],
    ];
    for (const [fields, param] of cases) {
      const error = await rejectionOf(openai.audio.transcriptions.create({ file: await file(), model: 'fake-stt', ...fields } as unknown as OpenAI.Audio.TranscriptionCreateParamsNonStreaming));
      expect({ fields, error }).toMatchObject({ fields, error: { status: 400, param } });
    }
    const notAudio = await rejectionOf(openai.audio.transcriptions.create({ file: await toFile(Buffer.from('just some text'), 'a.wav'), model: 'fake-stt' }));
    expect(notAudio).toMatchObject({ status: 415, type: 'invalid_request_error' });
    expect(await rejectionOf(openai.audio.transcriptions.create({ file: await file(), model: 'whisper-9' }))).toBeInstanceOf(OpenAI.NotFoundError);
    const noFile = await t.app.http().post('/v1/audio/transcriptions').set('authorization', `Bearer ${user.accessToken}`).field('model', 'fake-stt');
    expect(noFile.status).toBe(400);
    expect(noFile.body.error).toMatchObject({ param: 'file', type: 'invalid_request_error' });
    expect(fake.calls).toEqual([]);
    expect(await t.app.container.db.repo(Generation).countBy({ userId: user.id })).toBe(0);
    expect(await moneyOf(t.app, user.id)).toEqual(before);
  });

  it('replays with the same Idempotency-Key and file, charged once; another file under the key is refused', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    const options = { headers: { 'Idempotency-Key': 'stt-1' } };
    await openai.audio.transcriptions.create({ file: await file(), model: 'fake-stt' }, options);
    await openai.audio.transcriptions.create({ file: await file(), model: 'fake-stt' }, options);
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total - 2, held: 0 });
    const other = await rejectionOf(openai.audio.transcriptions.create({ file: await toFile(tone.mp3, 'other.mp3'), model: 'fake-stt' }, options));
    expect(other).toMatchObject({ status: 400, param: 'Idempotency-Key' });
  });
});
