/**
 * Params: each category has base params (the spec's defaults and ranges), the catalog model may
 * narrow or add to them, and a client may send each one at the top level or inside `params`.
 * The result is the normalized params (defaults filled) that pricing and the runner both use.
 */
import { z } from 'zod';
import type { CatalogModel, Category, ParamSpec } from '../catalog/types';
import { AppError, FieldError } from '../errors';

export const MAX_SEED = 2_147_483_647;

export const baseParams: Record<Category, Record<string, ParamSpec>> = {
  text: {
    temperature: { type: 'number', min: 0, max: 2, default: 0.7 },
    max_tokens: { type: 'integer', min: 1, max: 200_000, nullable: true },
    system_prompt: { type: 'string', max_length: 100_000 },
  },
  image: {
    format: { type: 'enum', values: ['webp', 'png', 'jpeg'], default: 'webp' },
    quality: { type: 'enum', values: ['standard'], default: 'standard' },
    seed: { type: 'integer', min: 0, max: MAX_SEED },
    negative_prompt: { type: 'string', max_length: 2000 },
    image_url: { type: 'url' },
  },
  video: {
    duration: { type: 'integer', values: [5], default: 5 },
    aspect_ratio: { type: 'enum', values: ['16:9', '9:16', '1:1'], default: '16:9' },
    negative_prompt: { type: 'string', max_length: 2000 },
    image_url: { type: 'url' },
    seed: { type: 'integer', min: 0, max: MAX_SEED },
  },
  tts: {
    speed: { type: 'number', min: 0.5, max: 2, default: 1 },
    format: { type: 'enum', values: ['mp3', 'wav', 'ogg'], default: 'mp3' },
    voice_id: { type: 'string', max_length: 100 },
  },
  stt: {
    audio_url: { type: 'url' },
    language: { type: 'string', min_length: 2, max_length: 2 },
    diarize: { type: 'boolean', default: false },
  },
  music: {
    lyrics: { type: 'string', max_length: 5000 },
    instrumental: { type: 'boolean', default: false },
    duration: { type: 'integer', min: 5, max: 240, default: 30 },
    format: { type: 'enum', values: ['mp3', 'wav'], default: 'mp3' },
    seed: { type: 'integer', min: 0, max: MAX_SEED },
  },
  tool: {
    image_url: { type: 'url' },
  },
};

export function paramSpecs(model: CatalogModel): Record<string, ParamSpec> {
  return { ...baseParams[model.category], ...model.params };
}

function schemaFor(spec: ParamSpec): z.ZodType {
  switch (spec.type) {
    case 'enum':
      return z.enum(spec.values as [string, ...string[]], { message: `must be one of ${spec.values.join(', ')}` });
    case 'integer': {
      let schema: z.ZodType = z.number({ message: 'must be an integer' }).int('must be an integer');
      if (spec.values) {
        const allowed = spec.values;
        schema = schema.refine((v) => allowed.includes(v as number), { message: `must be one of ${allowed.join(', ')}` });
      } else {
        if (spec.min !== undefined) schema = (schema as z.ZodNumber).min(spec.min, `must be at least ${spec.min}`);
        if (spec.max !== undefined) schema = (schema as z.ZodNumber).max(spec.max, `must be at most ${spec.max}`);
      }
      return spec.nullable ? schema.nullable() : schema;
    }
    case 'number': {
      let schema = z.number({ message: 'must be a number' });
      if (spec.min !== undefined) schema = schema.min(spec.min, `must be between ${spec.min} and ${spec.max ?? '∞'}`);
      if (spec.max !== undefined) schema = schema.max(spec.max, `must be between ${spec.min ?? '-∞'} and ${spec.max}`);
      return schema;
    }
    case 'string': {
      let schema = z.string({ message: 'must be a string' });
      if (spec.min_length !== undefined) schema = schema.min(spec.min_length, `must be at least ${spec.min_length} characters`);
      if (spec.max_length !== undefined) schema = schema.max(spec.max_length, `must be at most ${spec.max_length} characters`);
      return schema;
    }
    case 'boolean':
      return z.boolean({ message: 'must be true or false' });
    case 'url':
      return z
        .string({ message: 'must be a URL' })
        .max(8 * 1024 * 1024, 'is too long')
        .refine((v) => /^(https?:\/\/|data:)/i.test(v), { message: 'must be an http(s) or data: URL' });
  }
}

/** Compiled schemas by spec object: catalog specs live for the process, so each is built once. */
const compiled = new WeakMap<ParamSpec, z.ZodType>();

function compiledSchema(spec: ParamSpec): z.ZodType {
  let schema = compiled.get(spec);
  if (!schema) {
    schema = schemaFor(spec);
    compiled.set(spec, schema);
  }
  return schema;
}

function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * Merges top-level and `params` values of the model's declared params, validates each and fills
 * defaults. Throws one 422 naming every bad field. Undeclared names are ignored.
 */
export function normalizeParams(
  model: CatalogModel,
  topLevel: Record<string, unknown>,
  nested: Record<string, unknown>,
): Record<string, unknown> {
  const specs = paramSpecs(model);
  const errors: FieldError[] = [];
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(specs)) {
    const inParams = nested[name];
    const atTop = topLevel[name];
    if (inParams !== undefined && atTop !== undefined && !sameValue(inParams, atTop)) {
      errors.push({ field: `params.${name}`, message: `differs from the top-level ${name}` });
      continue;
    }
    const given = inParams !== undefined ? inParams : atTop;
    const field = inParams !== undefined ? `params.${name}` : name;
    if (given === undefined) {
      if ('default' in spec && spec.default !== undefined) out[name] = spec.default;
      continue;
    }
    const parsed = compiledSchema(spec).safeParse(given);
    if (!parsed.success) {
      errors.push({ field, message: parsed.error.issues[0]?.message ?? 'is invalid' });
      continue;
    }
    out[name] = parsed.data;
  }
  if (errors.length > 0) throw new AppError('validation_failed', { errors });
  return out;
}
