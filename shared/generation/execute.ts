/**
 * One provider call per category: turns the stored input into the capability's request and the
 * capability's result into an Outcome.
 */
import type { CatalogModel } from '../catalog/types';
import { CallOptions, ProviderAdapter, ProviderError, TextRequest } from '../providers/types';
import type { GenerationInput } from './input';
import { textMetadata } from './tool-calls';
import type { InputFetcher, Outcome } from './types';

/** The provider request of a chat turn (a completion or a stream). */
export function textRequest(model: CatalogModel, input: GenerationInput): TextRequest {
  const p = input.params;
  return {
    upstreamModel: model.upstreamModel,
    messages: input.messages ?? [],
    temperature: typeof p.temperature === 'number' ? p.temperature : 0.7,
    maxTokens: typeof p.max_tokens === 'number' ? p.max_tokens : null,
    maxContext: typeof model.config.max_context === 'number' ? model.config.max_context : null,
    ...input.textOptions,
  };
}

/** Width and height for a `WxH` size, or for an aspect ratio at about one megapixel (multiples of 64). */
export function dimensionsFor(size: unknown, aspectRatio: unknown): { width: number; height: number } {
  if (typeof size === 'string') {
    const match = /^(\d+)x(\d+)$/.exec(size);
    if (match) return { width: Number(match[1]), height: Number(match[2]) };
  }
  if (typeof aspectRatio === 'string') {
    const match = /^(\d+):(\d+)$/.exec(aspectRatio);
    if (match) {
      const ratio = Number(match[1]) / Number(match[2]);
      const height = Math.round(Math.sqrt((1024 * 1024) / ratio) / 64) * 64;
      const width = Math.round((height * ratio) / 64) * 64;
      return { width, height };
    }
  }
  return { width: 1024, height: 1024 };
}

function str(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

function need<T>(capability: T | undefined, adapter: ProviderAdapter, what: string): T {
  if (!capability) throw new ProviderError('unavailable', `provider ${adapter.name} cannot do ${what}`);
  return capability;
}

export async function executeCategory(
  adapter: ProviderAdapter,
  model: CatalogModel,
  input: GenerationInput,
  options: CallOptions,
  inputs: InputFetcher,
): Promise<Outcome> {
  const p = input.params;
  const base = { provider: adapter.name, resultText: null, file: null, thumbnail: null, usage: null, seed: null };
  switch (model.category) {
    case 'text': {
      const result = await need(adapter.text, adapter, 'text').complete(textRequest(model, input), options);
      return { ...base, resultText: result.content, usage: result.usage, metadata: textMetadata(result) };
    }
    case 'image': {
      const { width, height } = dimensionsFor(p.size, p.aspect_ratio);
      const imageUrl = str(p.image_url);
      const result = await need(adapter.image, adapter, 'images').generate(
        {
          upstreamModel: model.upstreamModel,
          prompt: input.prompt ?? '',
          negativePrompt: str(p.negative_prompt),
          width,
          height,
          aspectRatio: str(p.aspect_ratio),
          format: (str(p.format) ?? 'webp') as 'webp' | 'png' | 'jpeg',
          quality: p.quality === 'hd' ? 'hd' : 'standard',
          style: str(p.style),
          seed: typeof p.seed === 'number' ? p.seed : 0,
          inputImage: imageUrl ? await inputs.fetch(imageUrl, options.signal) : null,
        },
        options,
      );
      return { ...base, file: result.file, seed: result.seed, metadata: { width: result.width, height: result.height } };
    }
    case 'video': {
      const imageUrl = str(p.image_url);
      const result = await need(adapter.video, adapter, 'video').generate(
        {
          upstreamModel: model.upstreamModel,
          prompt: input.prompt ?? '',
          negativePrompt: str(p.negative_prompt),
          durationSeconds: typeof p.duration === 'number' ? p.duration : 5,
          aspectRatio: str(p.aspect_ratio) ?? '16:9',
          resolution: str(p.resolution) ?? '720p',
          seed: typeof p.seed === 'number' ? p.seed : 0,
          startImage: imageUrl ? await inputs.fetch(imageUrl, options.signal) : null,
        },
        options,
      );
      return {
        ...base,
        file: result.file,
        thumbnail: result.thumbnail,
        seed: typeof p.seed === 'number' ? p.seed : null,
        metadata: { width: result.width, height: result.height, duration: result.durationSeconds },
      };
    }
    case 'tts': {
      const text = input.text ?? input.prompt ?? '';
      const result = await need(adapter.speech, adapter, 'speech').synthesize(
        {
          upstreamModel: model.upstreamModel,
          text,
          voice: str(p.voice_id) ?? (typeof model.config.default_voice === 'string' ? model.config.default_voice : 'default'),
          speed: typeof p.speed === 'number' ? p.speed : 1,
          format: (str(p.format) ?? 'mp3') as 'mp3' | 'wav' | 'ogg',
        },
        options,
      );
      return { ...base, file: result.file, metadata: { duration: result.durationSeconds, characters: text.length } };
    }
    case 'stt': {
      const audio = await inputs.fetch(String(p.audio_url), options.signal);
      const result = await need(adapter.transcription, adapter, 'transcription').transcribe(
        { upstreamModel: model.upstreamModel, audio, language: str(p.language), diarize: p.diarize === true },
        options,
      );
      return { ...base, resultText: result.text, metadata: { duration: result.durationSeconds, language: result.language } };
    }
    case 'music': {
      const result = await need(adapter.music, adapter, 'music').compose(
        {
          upstreamModel: model.upstreamModel,
          prompt: input.prompt ?? '',
          lyrics: str(p.lyrics),
          instrumental: p.instrumental === true,
          durationSeconds: typeof p.duration === 'number' ? p.duration : 30,
          format: (str(p.format) ?? 'mp3') as 'mp3' | 'wav',
          seed: typeof p.seed === 'number' ? p.seed : 0,
        },
        options,
      );
      return { ...base, file: result.file, seed: typeof p.seed === 'number' ? p.seed : null, metadata: { duration: result.durationSeconds } };
    }
    case 'tool': {
      const image = await inputs.fetch(String(p.image_url), options.signal);
      const secondUrl = str(p.target_image_url) ?? str(p.mask_url);
      const result = await need(adapter.tool, adapter, 'image tools').run(
        {
          upstreamModel: model.upstreamModel,
          // The tool's own name (`remove-bg`): `config.tool`, else the primary provider's model id.
          tool: typeof model.config.tool === 'string' ? model.config.tool : model.upstreamModel,
          prompt: input.prompt,
          image,
          secondImage: secondUrl ? await inputs.fetch(secondUrl, options.signal) : null,
          params: p,
        },
        options,
      );
      return result.kind === 'text'
        ? { ...base, resultText: result.text, metadata: {} }
        : { ...base, file: result.file, metadata: { width: result.width, height: result.height } };
    }
  }
}
