/**
 * What a Responses API request asks of the model beyond its input: function `tools`,
 * `tool_choice` and `text.format`, in the Chat Completions vocabulary the domain speaks
 * (shared/generation/text-options.ts checks them against what the model declares and keeps
 * them), and as the response object echoes them back.
 *
 * The Responses API's shapes are flat where Chat Completions nests: a function tool is
 * `{type: "function", name, parameters, …}` (Chat: `{type, function: {name, …}}`), a forced choice
 * `{type: "function", name}`, a schema format `{type: "json_schema", name, schema, strict}` (Chat:
 * `{type, json_schema: {…}}`). Only function tools exist here: OpenAI's built-in tools (web
 * search, file search, computer use, code interpreter, MCP, shell, image generation) run on
 * OpenAI's side, and custom (free-form) tools need an output item the domain cannot make; each is
 * refused by name, `tools[i].type`, before anything is held or sent upstream.
 */
import { AppError } from '../../../shared/errors';
import type { TextOptionsRequest } from '../../../shared/generation/text-options';
import type { ResponsesBody } from './responses-input';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const given = (value: unknown): boolean => value !== undefined && value !== null;

/** A function tool as the response object echoes it (OpenAI's `FunctionTool`). */
export interface EchoedTool {
  type: 'function';
  name: unknown;
  description: unknown;
  parameters: unknown;
  strict: unknown;
}

/** The request's options, read: for the domain (Chat's shapes) and for the echo (the Responses API's). */
export interface ResponsesToolOptions {
  textOptions: TextOptionsRequest;
  echo: { tools: EchoedTool[]; tool_choice: unknown; text: { format: unknown } };
}

function refusedTool(type: unknown): string {
  if (type === 'custom') return 'custom (free-form) tools are not supported: declare it as a function tool with JSON parameters';
  return `the built-in tool ${String(type)} is not offered by this server: only function tools are`;
}

/** Each tool must be a function tool; read as the function the domain checks (name, schema, strict). */
function toolsOf(raw: unknown[] | null | undefined): { chat: unknown[]; echo: EchoedTool[] } | undefined {
  if (!raw) return undefined;
  const chat: unknown[] = [];
  const echo: EchoedTool[] = [];
  raw.forEach((tool, i) => {
    if (!isRecord(tool)) throw AppError.validation(`tools[${i}]`, 'must be a tool object');
    if (typeof tool.type !== 'string') throw AppError.validation(`tools[${i}].type`, 'is required');
    if (tool.type !== 'function') throw AppError.validation(`tools[${i}].type`, refusedTool(tool.type));
    // OpenAI's SDK sends `parameters: null` and `strict: null` for "none given": the domain wants them absent.
    const fn: Record<string, unknown> = { name: tool.name };
    if (given(tool.description)) fn.description = tool.description;
    if (given(tool.parameters)) fn.parameters = tool.parameters;
    if (given(tool.strict)) fn.strict = tool.strict;
    chat.push({ type: 'function', function: fn });
    // Echoed as asked: `strict` is passed on when given and not assumed when not (Chat's default, non-strict, applies upstream).
    echo.push({ type: 'function', name: tool.name, description: tool.description ?? null, parameters: tool.parameters ?? null, strict: tool.strict ?? null });
  });
  return { chat, echo };
}

/** `auto`, `none`, `required` or `{type: "function", name}`; a hosted tool's or an allowed-tools choice names something not offered. */
function toolChoiceOf(raw: unknown): unknown {
  if (!isRecord(raw)) return raw;
  if (raw.type === 'function') return { type: 'function', function: { name: raw.name } };
  throw AppError.validation('tool_choice', `${typeof raw.type === 'string' ? raw.type : 'this'} tool choice is not supported: auto, none, required or {"type": "function", "name"}`);
}

/** `text.format` as a Chat response format: `json_schema`'s fields move under `json_schema`. */
function formatOf(raw: Record<string, unknown>): unknown {
  if (raw.type !== 'json_schema') return { type: raw.type };
  const schema: Record<string, unknown> = { name: raw.name };
  for (const key of ['description', 'schema', 'strict'] as const) if (given(raw[key])) schema[key] = raw[key];
  return { type: 'json_schema', json_schema: schema };
}

export function toolOptionsOf(body: ResponsesBody): ResponsesToolOptions {
  const tools = toolsOf(body.tools);
  const format = body.text?.format ?? null;
  const textOptions: TextOptionsRequest = {};
  if (tools) textOptions.tools = tools.chat;
  if (given(body.tool_choice)) textOptions.tool_choice = toolChoiceOf(body.tool_choice);
  if (format) textOptions.response_format = formatOf(format);
  return {
    textOptions,
    echo: { tools: tools?.echo ?? [], tool_choice: body.tool_choice ?? 'auto', text: { format: format ?? { type: 'text' } } },
  };
}
