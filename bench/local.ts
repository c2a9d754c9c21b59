/**
 * Local engines: latency of each image tool on a 512 px image (first call and warm), and the
 * real-time factors of speech synthesis and recognition (seconds of work per second of audio).
 */
import sharp from 'sharp';
import { createLocalAudioProviders } from '../shared/providers/local/audio-engines';
import { LocalToolProvider, localToolEngines } from '../shared/providers/local/tools';
import type { ToolRequest } from '../shared/providers/types';

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = process.hrtime.bigint();
  const value = await work();
  return { ms: Number(process.hrtime.bigint() - started) / 1e6, value };
}

async function picture(size: number): Promise<Buffer> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${size}" height="${size}">
    <rect width="100%" height="100%" fill="#8aa"/><circle cx="${size / 2}" cy="${size / 2}" r="${size / 4}" fill="#c44"/>
    <text x="20" y="60" font-size="40" font-family="DejaVu Sans, sans-serif">GENSVC 512</text></svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}

export async function benchLocal(): Promise<void> {
  const signal = new AbortController().signal;
  const tools = new LocalToolProvider();
  const available = localToolEngines();
  const image512 = await picture(512);
  const grey = await sharp(image512).grayscale().png().toBuffer();
  const mask = await sharp({ create: { width: 512, height: 512, channels: 3, background: '#000' } })
    .composite([{ input: Buffer.from('<svg width="512" height="512"><rect x="200" y="200" width="100" height="100" fill="#fff"/></svg>') }])
    .png()
    .toBuffer();
  const cases: Array<[string, Partial<ToolRequest>]> = [
    ['ocr', { image: image512 }],
    ['remove-bg', { image: image512 }],
    ['upscale-esrgan', { image: await sharp(image512).resize(256, 256).png().toBuffer(), params: { scale: 4 } }],
    ['inpaint', { image: image512, secondImage: mask }],
    ['colorize', { image: grey }],
    ['style-transfer', { image: image512, params: { style: 'oil-painting' } }],
  ];
  console.log('\nlocal image tools (512 px; upscale ×4 from 256 px)');
  for (const [tool, request] of cases) {
    if (!available[tool as keyof typeof available]) {
      console.log(`  ${tool.padEnd(16)} not available here`);
      continue;
    }
    const run = () => tools.run({ upstreamModel: tool, tool, prompt: null, image: image512, secondImage: null, params: {}, ...request }, { signal });
    const first = await timed(run);
    const warm = await timed(run);
    console.log(`  ${tool.padEnd(16)} first ${first.ms.toFixed(0).padStart(6)} ms   warm ${warm.ms.toFixed(0).padStart(6)} ms`);
  }
  await tools.close();

  const audio = createLocalAudioProviders();
  console.log('\nlocal speech (real-time factor = processing time / audio duration)');
  const sentence = 'The quick brown fox jumps over the lazy dog while the children play in the garden.';
  if (audio.speech) {
    await audio.speech.synthesize({ upstreamModel: 'flite', text: 'warm up', voice: 'awb', speed: 1, format: 'wav' }, { signal });
    const tts = await timed(() => audio.speech!.synthesize({ upstreamModel: 'flite', text: sentence, voice: 'awb', speed: 1, format: 'wav' }, { signal }));
    console.log(`  tts (awb, wav)   ${tts.ms.toFixed(0)} ms for ${tts.value.durationSeconds.toFixed(2)} s → RTF ${(tts.ms / 1000 / tts.value.durationSeconds).toFixed(3)}`);
    if (audio.transcription) {
      const stt = await timed(() => audio.transcription!.transcribe({ upstreamModel: 'pocketsphinx', audio: tts.value.file.bytes, language: 'en', diarize: false }, { signal }));
      console.log(`  stt (pocketsphinx) ${stt.ms.toFixed(0)} ms for ${stt.value.durationSeconds.toFixed(2)} s → RTF ${(stt.ms / 1000 / stt.value.durationSeconds).toFixed(3)}`);
    } else {
      console.log('  stt              pocketsphinx not installed');
    }
    await (audio.speech as { close?: () => Promise<void> }).close?.();
  }
}
