/**
 * A text request's options beyond the conversation: stop sequences, tools and the choice among
 * them, and the answer's format, in OpenAI's chat vocabulary (which every way in maps to). They
 * are checked at acceptance against what the model's catalog entry declares (`supports_tools`,
 * `supports_response_format`), so a request a model cannot serve is a 422 naming the field before
 * anything is held, counted or sent upstream; what passes is kept with the generation's input.
 */
import { z } from 'zod';
import type { CatalogModel } from '../catalog/types';
import { AppError } from '../errors';
import type { ResponseFormat, TextOptions, ToolChoice, ToolDefinition } from '../providers/types';

/** The options as a caller hands them over, unchecked, under their wire names. */
export interface TextOptionsRequest {
  stop?: unknown;
  tools?: unknown;
  tool_choice?: unknown;
  response_format?: unknown;
}

export const MAX_STOP_SEQUENCES = 4;
/** OpenAI's own limit on tools per request. */
export const MAX_TOOLS = 128;

/** Function names as OpenAI takes them (the protocols' common ground). */
export const ToolNameSchema = z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'must be 1–64 letters, digits, underscores or dashes');

const JsonSchemaObject = z.record(z.string(), z.unknown());

const StopSchema = z.union([
  z.string().min(1, 'must not be empty').max(500, 'must be at most 500 characters'),
  z
    .array(z.string().min(1, 'must not be empty').max(500, 'must be at most 500 characters'))
    .max(MAX_STOP_SEQUENCES, `must be at most ${MAX_STOP_SEQUENCES} sequences`),
]);

const ToolSchema = z.object({
  type: z.literal('function', { message: 'only function tools are supported' }),
  function: z.object({
    name: ToolNameSchema,
    description: z.string().max(100_000).optional(),
    parameters: JsonSchemaObject.optional(),
    strict: z.boolean().nullish(),
  }),
});
const ToolsSchema = z.array(ToolSchema).max(MAX_TOOLS, `must be at most ${MAX_TOOLS} tools`);

const ToolChoiceSchema = z.union([
  z.enum(['none', 'auto', 'required'], { message: 'must be none, auto, required or a function' }),
  z.object({ type: z.literal('function'), function: z.object({ name: ToolNameSchema }) }),
]);

const ResponseFormatSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text') }),
  z.object({ type: z.literal('json_object') }),
  z.object({
    type: z.literal('json_schema'),
    json_schema: z.object({
      name: ToolNameSchema,
      description: z.string().max(100_000).optional(),
      schema: JsonSchemaObject.optional(),
      strict: z.boolean().nullish(),
    }),
  }),
]);

function parse<S extends z.ZodType>(schema: S, value: unknown, field: string): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw AppError.validation([field, ...(issue?.path ?? [])].join('.'), issue?.message ?? 'is invalid');
}

const given = (value: unknown): boolean => value !== undefined && value !== null;

function toolsOf(model: CatalogModel, raw: TextOptionsRequest): ToolDefinition[] | undefined {
  if (!given(raw.tools)) return undefined;
  const tools = parse(ToolsSchema, raw.tools, 'tools');
  // An empty list asks for nothing (some clients always send one): not a reason to refuse a model.
  if (tools.length === 0) return undefined;
  if (model.config.supports_tools !== true) throw AppError.validation('tools', `${model.slug} does not support tools`);
  const seen = new Set<string>();
  tools.forEach((tool, index) => {
    if (seen.has(tool.function.name)) throw AppError.validation(`tools.${index}.function.name`, 'is the name of an earlier tool');
    seen.add(tool.function.name);
  });
  return tools.map((tool) => {
    const fn: ToolDefinition['function'] = { name: tool.function.name };
    if (tool.function.description !== undefined) fn.description = tool.function.description;
    if (tool.function.parameters !== undefined) fn.parameters = tool.function.parameters;
    if (typeof tool.function.strict === 'boolean') fn.strict = tool.function.strict;
    return { type: 'function', function: fn };
  });
}

function toolChoiceOf(raw: TextOptionsRequest, tools: ToolDefinition[] | undefined): ToolChoice | undefined {
  if (!given(raw.tool_choice)) return undefined;
  const choice = parse(ToolChoiceSchema, raw.tool_choice, 'tool_choice');
  if (!tools) {
    // Without tools, `none` and `auto` ask nothing of the model; anything else cannot be met.
    if (choice === 'none' || choice === 'auto') return undefined;
    throw AppError.validation('tool_choice', 'needs tools');
  }
  if (typeof choice === 'object' && !tools.some((tool) => tool.function.name === choice.function.name)) {
    throw AppError.validation('tool_choice.function.name', `names no tool of this request: ${choice.function.name}`);
  }
  return choice;
}

function responseFormatOf(model: CatalogModel, raw: TextOptionsRequest): ResponseFormat | undefined {
  if (!given(raw.response_format)) return undefined;
  const format = parse(ResponseFormatSchema, raw.response_format, 'response_format');
  // Plain text is what every model answers anyway.
  if (format.type === 'text') return undefined;
  if (model.config.supports_response_format !== true) throw AppError.validation('response_format', `${model.slug} does not support response formats`);
  if (format.type === 'json_object') return format;
  const schema: Extract<ResponseFormat, { type: 'json_schema' }>['json_schema'] = { name: format.json_schema.name };
  if (format.json_schema.description !== undefined) schema.description = format.json_schema.description;
  if (format.json_schema.schema !== undefined) schema.schema = format.json_schema.schema;
  if (typeof format.json_schema.strict === 'boolean') schema.strict = format.json_schema.strict;
  return { type: 'json_schema', json_schema: schema };
}

/** The options checked for the model; only those given (and meaningful) are set. Throws 422 naming the field. */
export function parseTextOptions(model: CatalogModel, raw: TextOptionsRequest): TextOptions {
  const options: TextOptions = {};
  if (given(raw.stop)) {
    const stop = parse(StopSchema, raw.stop, 'stop');
    const sequences = typeof stop === 'string' ? [stop] : stop;
    if (sequences.length > 0) options.stop = sequences;
  }
  const tools = toolsOf(model, raw);
  if (tools) options.tools = tools;
  const toolChoice = toolChoiceOf(raw, tools);
  if (toolChoice !== undefined) options.toolChoice = toolChoice;
  const responseFormat = responseFormatOf(model, raw);
  if (responseFormat) options.responseFormat = responseFormat;
  return options;
}
