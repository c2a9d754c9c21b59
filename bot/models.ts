/** Which models a person may use from the chat, the options the dialogs offer, and the photo tools. */
import type { Catalog, CatalogModel } from '../shared/catalog';
import type { ParamSpec } from '../shared/catalog/types';
import { paramSpecs } from '../shared/generation/params';
import type { Plan } from '../shared/plans';
import { modelsFor } from '../shared/telegram/chat-turn';

export { chatModel, modelsFor } from '../shared/telegram/chat-turn';

/** The dialogs: what they make, and the prefix of their buttons' data. */
export const MEDIA_KINDS = {
  image: { category: 'image', prefix: 'img' },
  video: { category: 'video', prefix: 'vid' },
  music: { category: 'music', prefix: 'mus' },
  voice: { category: 'tts', prefix: 'voc' },
} as const;
export type MediaKind = keyof typeof MEDIA_KINDS;

export interface MediaOption {
  param: string;
  values: Array<string | number>;
}

/** The option of an image model the bot offers before confirming: size or aspect ratio. */
export function imageOption(model: CatalogModel): { param: string; values: string[] } | null {
  for (const param of ['size', 'aspect_ratio']) {
    const spec = model.params[param];
    if (spec?.type === 'enum' && spec.values.length > 1) return { param, values: spec.values };
  }
  return null;
}

/** Durations offered for a range (music): these, within the model's bounds, and its default. */
const DURATION_PRESETS = [10, 30, 60, 120];

function choices(spec: ParamSpec | undefined): Array<string | number> {
  if (!spec) return [];
  if (spec.type === 'enum') return spec.values;
  if (spec.type === 'integer') {
    if (spec.values) return spec.values;
    const min = spec.min ?? 1;
    const max = spec.max ?? Number.MAX_SAFE_INTEGER;
    const values = new Set(DURATION_PRESETS.filter((v) => v >= min && v <= max));
    if (spec.default !== undefined) values.add(spec.default);
    return [...values].sort((a, b) => a - b);
  }
  return [];
}

/** The options each dialog offers (only those with a real choice): size, duration, aspect ratio, voice. */
export function mediaOptions(model: CatalogModel, kind: MediaKind): MediaOption[] {
  if (kind === 'image') {
    const option = imageOption(model);
    return option ? [option] : [];
  }
  const specs = paramSpecs(model);
  const params = kind === 'video' ? ['duration', 'aspect_ratio'] : kind === 'music' ? ['duration'] : ['voice_id'];
  return params.map((param) => ({ param, values: choices(specs[param]) })).filter((o) => o.values.length > 1);
}

/** The value of an option from a button's data. */
export function optionValue(option: MediaOption, data: string): string | number | undefined {
  return option.values.find((v) => String(v) === data);
}

/** The format a dialog asks for: a voice message needs OGG (Opus), an image the chosen format. */
export function formatParam(model: CatalogModel, wanted: string | null): string | null {
  const spec = paramSpecs(model).format;
  return wanted && spec?.type === 'enum' && spec.values.includes(wanted) ? wanted : null;
}

/**
 * The photo tools, by the engine name (`upstream_model`) of their catalog models, and the words
 * that name them in a caption (English, Russian). Russian stems are matched at a word's start
 * (`\b` knows only Latin letters), so "улица" is not "лицо". The first match wins.
 */
const RU_WORD = '(?:^|[^а-яё])';
export const PHOTO_TOOLS = [
  { tool: 'remove-bg', words: new RegExp(`remove\\s*(the\\s*)?b(ack)?g(round)?|background|cut\\s*out|${RU_WORD}фон`, 'i') },
  { tool: 'upscale-esrgan', words: new RegExp(`upscale|enlarge|${RU_WORD}увелич|${RU_WORD}апскейл`, 'i') },
  { tool: 'ocr', words: new RegExp(`\\bocr\\b|recogni[sz]e|extract\\s*(the\\s*)?text|read\\s*(the\\s*)?text|${RU_WORD}распозна|${RU_WORD}текст`, 'i') },
  { tool: 'colorize', words: new RegExp(`colou?ri[sz]e|${RU_WORD}раскрас|${RU_WORD}цвет`, 'i') },
  { tool: 'style-transfer', words: new RegExp(`\\bstyle|${RU_WORD}стил`, 'i') },
  { tool: 'face-swap', words: new RegExp(`face\\s*-?\\s*swap|swap\\s*(the\\s*)?faces?|${RU_WORD}лиц[оаеу]`, 'i') },
] as const;
export type PhotoTool = (typeof PHOTO_TOOLS)[number]['tool'];

export function toolFromCaption(caption: string): PhotoTool | null {
  return PHOTO_TOOLS.find((t) => t.words.test(caption))?.tool ?? null;
}

/** The cheapest model of a tool the plan allows. */
export function toolModel(catalog: Catalog, plan: Plan, tool: string): CatalogModel | null {
  return modelsFor(catalog, plan, 'tool').find((l) => l.model.upstreamModel === tool)?.model ?? null;
}

/** The speech-to-text model for voice messages: the cheapest the plan allows. */
export function transcriptionModel(catalog: Catalog, plan: Plan): CatalogModel | null {
  return modelsFor(catalog, plan, 'stt')[0]?.model ?? null;
}
