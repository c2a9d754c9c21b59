/**
 * Field names in an Anthropic Messages request. A 400 names the field as the client sent it:
 * what this front door checks itself names it directly (`parsedAt`), and what the domain refuses
 * after the request was read into its vocabulary (OpenAI's chat shape) is named back
 * (`anthropicFields`): `stop` is `stop_sequences`, `tools.0.function.name` is `tools.0.name`, and
 * `messages.K` is the Anthropic message (or `tool_result` block) that became domain message K.
 */
import { z } from 'zod';
import { AppError, FieldError } from '../../../shared/errors';

/** `schema` applied to one field's value; its first issue is a 400 under that field's path. */
export function parsedAt<S extends z.ZodType>(schema: S, value: unknown, field: string): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  throw AppError.validation([field, ...(issue?.path ?? [])].join('.'), issue?.message ?? 'is invalid');
}

const TOOL_FIELDS: Record<string, string> = { name: 'name', description: 'description', parameters: 'input_schema' };

function renamed(field: string, origins: readonly string[]): string {
  const stop = /^stop(\..*)?$/.exec(field);
  if (stop) return `stop_sequences${stop[1] ?? ''}`;
  const tool = /^tools\.(\d+)\.function(?:\.(\w+))?(.*)$/.exec(field);
  if (tool) return `tools.${tool[1]}${tool[2] ? `.${TOOL_FIELDS[tool[2]] ?? tool[2]}` : ''}${tool[3]}`;
  if (field === 'tool_choice.function.name') return 'tool_choice.name';
  const message = /^messages\.(\d+)(.*)$/.exec(field);
  const origin = message ? origins[Number(message[1])] : undefined;
  if (message && origin) return `${origin}${message[2]?.replace(/^\.tool_call_id/, '.tool_use_id') ?? ''}`;
  return field;
}

/**
 * The domain's refusal of a request with its fields named as the client sent them; any other error
 * as it is. `origins[K]` is where domain message K came from.
 */
export function anthropicFields(error: unknown, origins: readonly string[]): unknown {
  if (!(error instanceof AppError) || error.code !== 'validation_failed' || !error.errors) return error;
  const errors: FieldError[] = error.errors.map(({ field, message }) => ({ field: renamed(field, origins), message }));
  return new AppError('validation_failed', { detail: error.detail, errors, extra: error.extra, headers: error.headers });
}
