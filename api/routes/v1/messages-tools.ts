/**
 * Anthropic's `tools` and `tool_choice` in the domain's vocabulary (OpenAI's function tools), which
 * checks them against the model (`supports_tools`), the names, duplicates and the count, before
 * anything is held. Only custom tools (`name`, `description`, `input_schema`) can be served:
 * the tools Anthropic defines itself, whether it runs them (`web_search_20250305`,
 * `code_execution_…`, `web_fetch_…`) or a client does with a schema only Anthropic's models know
 * (`bash_…`, `text_editor_…`, `computer_…`, `memory_…`), are refused with a 400 naming the tool.
 */
import { z } from 'zod';
import { AppError } from '../../../shared/errors';
import type { ToolChoice, ToolDefinition } from '../../../shared/providers/types';
import { parsedAt } from './anthropic-fields';

const CustomTool = z.looseObject({
  type: z.literal('custom', { message: 'must be custom, or absent' }).nullish(),
  // The domain checks the name's pattern (1–64 letters, digits, `_`, `-`: Anthropic's too).
  name: z.string({ message: 'is required' }).max(200),
  description: z.string({ message: 'must be a string' }).max(100_000).nullish(),
  input_schema: z.record(z.string(), z.unknown(), { message: 'is required: the JSON Schema of the input, an object' }),
});

/** A custom tool as the domain's function tool; its input schema is the function's parameters. */
function functionTool(raw: unknown, index: number): ToolDefinition {
  const field = `tools.${index}`;
  if (typeof raw === 'object' && raw !== null && 'type' in raw && typeof raw.type === 'string' && raw.type !== 'custom') {
    const name = 'name' in raw && typeof raw.name === 'string' ? ` (${raw.name})` : '';
    throw AppError.validation(
      `${field}.type`,
      `${raw.type}${name} is one of the tools Anthropic defines for its own models, which this service does not offer; only custom tools (name, description, input_schema) are supported`,
    );
  }
  const tool = parsedAt(CustomTool, raw, field);
  const fn: ToolDefinition['function'] = { name: tool.name, parameters: tool.input_schema };
  if (tool.description) fn.description = tool.description;
  return { type: 'function', function: fn };
}

/** `tools` for the domain; an absent or empty list is no tools (Claude Code sends `[]` on some turns). */
export function toolsOf(tools: unknown[] | null | undefined): ToolDefinition[] | undefined {
  if (!tools || tools.length === 0) return undefined;
  return tools.map(functionTool);
}

const parallel = { disable_parallel_tool_use: z.boolean({ message: 'must be true or false' }).nullish() };
const AnthropicToolChoice = z.discriminatedUnion(
  'type',
  [
    z.looseObject({ type: z.literal('auto'), ...parallel }),
    z.looseObject({ type: z.literal('any'), ...parallel }),
    z.looseObject({ type: z.literal('tool'), name: z.string({ message: 'is required' }).max(200), ...parallel }),
    z.looseObject({ type: z.literal('none') }),
  ],
  { message: 'must be auto, any, tool (with a name) or none' },
);

/**
 * `tool_choice` for the domain: `auto` as it is, `any` is OpenAI's `required`, `tool` names the
 * function, `none` as it is. `disable_parallel_tool_use` is accepted and not passed on: the domain
 * has no such switch, so a model may still call several tools in one answer, each its own
 * `tool_use` block, which Anthropic's clients answer one `tool_result` each.
 */
export function toolChoiceOf(raw: unknown): ToolChoice | undefined {
  if (raw === null || raw === undefined) return undefined;
  const choice = parsedAt(AnthropicToolChoice, raw, 'tool_choice');
  switch (choice.type) {
    case 'auto':
      return 'auto';
    case 'any':
      return 'required';
    case 'tool':
      return { type: 'function', function: { name: choice.name } };
    case 'none':
      return 'none';
  }
}
