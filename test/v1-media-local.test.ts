/**
 * The /v1 media endpoints over the built-in engines of the shipped catalog, no upstream at all,
 * driven by the official `openai` client: demo-image (webp really encoded), local-tts (an OpenAI
 * voice name mapped onto a Flite voice; wav, and opus re-encoded from the engine's Vorbis),
 * local-stt transcribing that speech back in every response format, and demo-video's real mp4.
 */
import OpenAI, { toFile } from 'openai';
import sharp from 'sharp';
import { useTestApp } from './helpers/app';
import { vipClient } from './helpers/v1-clients';

const t = useTestApp({}, { worker: true });

describe('over the built-in engines', () => {
  let openai: OpenAI;
  beforeAll(async () => {
    openai = (await vipClient(t.app, 500)).openai;
  });

  it('draws demo-image in the asked size and format', async () => {
    const images = await openai.images.generate({ model: 'demo-image', prompt: 'a quiet harbour', size: '512x512', output_format: 'webp', response_format: 'b64_json' });
    const picture = await sharp(Buffer.from(images.data?.[0]?.b64_json ?? '', 'base64')).metadata();
    expect(picture).toMatchObject({ format: 'webp', width: 512, height: 512 });
    expect(images).toMatchObject({ output_format: 'webp', size: '512x512' });
  });

  it('speaks with local-tts and transcribes it back with local-stt in every response format', async () => {
    const speech = await openai.audio.speech.create({ model: 'local-tts', input: 'the quick brown fox jumps over the lazy dog', voice: 'onyx', response_format: 'wav' });
    expect(speech.headers.get('content-type')).toBe('audio/wav');
    const wav = Buffer.from(await speech.arrayBuffer());
    expect(wav.subarray(0, 4).toString('latin1')).toBe('RIFF');
    // The engine's ogg is Vorbis: opus is re-encoded.
    const opus = Buffer.from(await (await openai.audio.speech.create({ model: 'local-tts', input: 'hello', voice: 'alloy', response_format: 'opus' })).arrayBuffer());
    expect(opus.subarray(0, 96).includes('OpusHead')).toBe(true);

    const file = () => toFile(wav, 'fox.wav');
    const json = await openai.audio.transcriptions.create({ file: await file(), model: 'local-stt', language: 'en' });
    const words = json.text.toLowerCase();
    expect(['quick', 'brown', 'fox', 'lazy', 'dog'].filter((w) => words.includes(w)).length).toBeGreaterThanOrEqual(3);
    const verbose = await openai.audio.transcriptions.create({ file: await file(), model: 'local-stt', response_format: 'verbose_json', timestamp_granularities: ['segment'] });
    expect(verbose).toMatchObject({ task: 'transcribe', language: 'english', text: json.text, segments: [{ id: 0, start: 0, text: json.text.trim() }] });
    expect(verbose.duration).toBeGreaterThan(1);
    expect(verbose.segments?.[0]?.end).toBe(verbose.duration);
    expect(await openai.audio.transcriptions.create({ file: await file(), model: 'local-stt', response_format: 'text' })).toBe(`${json.text}\n`);
    const srt = await openai.audio.transcriptions.create({ file: await file(), model: 'local-stt', response_format: 'srt' });
    expect(srt).toMatch(/^1\n00:00:00,000 --> 00:00:0\d,\d{3}\n.+\n\n$/);
    const vtt = await openai.audio.transcriptions.create({ file: await file(), model: 'local-stt', response_format: 'vtt' });
    expect(vtt).toMatch(/^WEBVTT\n\n00:00:00\.000 --> 00:00:0\d\.\d{3}\n.+\n\n$/);
  }, 90_000);

  it('makes a demo-video job, polls it and downloads a real mp4', async () => {
    const job = await openai.videos.create({ model: 'demo-video', prompt: 'waves at dusk', seconds: '5' as OpenAI.Videos.VideoSeconds, size: '1280x720' });
    expect(job).toMatchObject({ object: 'video', status: 'queued', size: '1280x720', seconds: '5' });
    let video = job;
    for (let i = 0; i < 600 && video.status !== 'completed' && video.status !== 'failed'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      video = await openai.videos.retrieve(job.id);
    }
    expect(video).toMatchObject({ status: 'completed', progress: 100, size: '1280x720' });
    const mp4 = Buffer.from(await (await openai.videos.downloadContent(job.id)).arrayBuffer());
    expect(mp4.subarray(4, 8).toString('latin1')).toBe('ftyp');
  }, 90_000);
});
