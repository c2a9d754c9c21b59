/**
 * The error answers of a documented route, by status: the codes its kind of route can always
 * answer (its credentials, its body, its path params, a store that is down, a bug) plus the ones
 * it names, each rendered by the real error presenter (api/presenters/errors.ts) in the dialect of
 * its path, so statuses and example bodies are exactly what the API sends.
 */
import { z } from 'zod';
import type { ZodOpenApiResponseObject } from 'zod-openapi';
import { AppError, ErrorCode, errorCatalogue } from '../../shared/errors';
import { ErrorDialect, errorDialectOf, presentError } from '../presenters/errors';
import type { RouteDoc } from './registry';
import { pathParams } from './registry';

const BY_AUTH: Record<RouteDoc['auth'], ErrorCode[]> = {
  none: [],
  optional: ['not_authenticated', 'invalid_token', 'insufficient_plan'],
  user: ['not_authenticated', 'invalid_token', 'insufficient_plan'],
  session: ['not_authenticated', 'invalid_token', 'insufficient_plan', 'api_key_not_allowed'],
  refresh: ['not_authenticated', 'invalid_token'],
  // Each provider's route names its own signature code.
  signature: ['feature_disabled'],
  operator: ['not_authenticated', 'invalid_token', 'not_found'],
};

/** Every code `doc` may answer. */
export function errorCodesOf(doc: RouteDoc): ErrorCode[] {
  const codes = new Set<ErrorCode>(BY_AUTH[doc.auth]);
  // The JSON body parser reads the bodies of these methods, whatever the route does with them.
  if (doc.method !== 'get') for (const code of ['malformed_request', 'payload_too_large'] as const) codes.add(code);
  if (doc.body) for (const code of ['unsupported_media_type', 'validation_failed'] as const) codes.add(code);
  if (doc.multipart) for (const code of ['payload_too_large', 'unsupported_media_type', 'validation_failed'] as const) codes.add(code);
  if (doc.query) codes.add('validation_failed');
  if (pathParams(doc.path).length > 0) codes.add('not_found');
  for (const code of doc.errors ?? []) codes.add(code);
  codes.add('internal_error');
  codes.add('service_unavailable');
  return [...codes];
}

/** The dialects a path answers errors in: /v1 paths answer Anthropic's too when the client sends anthropic-version. */
export function dialectsOf(path: string): ErrorDialect[] {
  const plain = errorDialectOf(path);
  const anthropic = errorDialectOf(path, '2023-06-01');
  return plain === anthropic ? [plain] : [plain, anthropic];
}

function exampleError(code: ErrorCode): AppError {
  if (code === 'validation_failed') return AppError.validation('prompt', 'is required');
  if (code === 'rate_limited') return new AppError(code, { extra: { retry_after: 1800 }, headers: { 'Retry-After': '1800' } });
  if (code === 'insufficient_tokens') return new AppError(code, { extra: { price: 12, available: 3 } });
  return new AppError(code);
}

/** The component name of the example of `code` in `dialect`. */
function exampleName(dialect: ErrorDialect, code: ErrorCode): string {
  return dialect === 'gensvc' ? code : `${dialect}_${code}`;
}

/** Every error example the document refers to (components.examples), rendered by the real presenter. */
export function errorExamples(docs: RouteDoc[]): Record<string, { summary: string; value: unknown }> {
  const examples: Record<string, { summary: string; value: unknown }> = {};
  for (const doc of docs) {
    for (const dialect of dialectsOf(doc.path)) {
      for (const code of errorCodesOf(doc)) {
        examples[exampleName(dialect, code)] ??= { summary: errorCatalogue[code].detail, value: presentError(dialect, exampleError(code), 'b7c1e0d2-5f4a-4c39-9e0a-7d2f1c3b4a56').body };
      }
    }
  }
  return examples;
}

/** Our error body with `code` narrowed to `codes` (the Error component, plus the narrowing). */
function narrowedErrorBody(codes: ErrorCode[]) {
  return { allOf: [{ $ref: '#/components/schemas/Error' }, { type: 'object' as const, properties: { code: { enum: codes } } }] };
}

const REFS_BY_DIALECT = { openai: { $ref: '#/components/schemas/OpenAIError' }, anthropic: { $ref: '#/components/schemas/AnthropicError' } } as const;

/** The responses of `doc`'s error statuses, keyed by status. */
export function errorResponses(doc: RouteDoc): Record<string, ZodOpenApiResponseObject> {
  const byStatus = new Map<number, { codes: Set<ErrorCode>; dialects: Set<ErrorDialect>; examples: Record<string, { $ref: string }> }>();
  for (const dialect of dialectsOf(doc.path)) {
    for (const code of errorCodesOf(doc)) {
      const { status } = presentError(dialect, exampleError(code), '');
      const entry = byStatus.get(status) ?? { codes: new Set(), dialects: new Set(), examples: {} };
      entry.codes.add(code);
      entry.dialects.add(dialect);
      entry.examples[exampleName(dialect, code)] = { $ref: `#/components/examples/${exampleName(dialect, code)}` };
      byStatus.set(status, entry);
    }
  }
  const responses: Record<string, ZodOpenApiResponseObject> = {};
  for (const [status, entry] of [...byStatus].sort(([a], [b]) => a - b)) {
    const codes = [...entry.codes];
    const schemas = [...entry.dialects].map((d) => (d === 'gensvc' ? narrowedErrorBody(codes) : REFS_BY_DIALECT[d]));
    const schema = schemas.length === 1 ? schemas[0] : { oneOf: schemas };
    responses[String(status)] = {
      description: codes.map((c) => `\`${c}\`: ${errorCatalogue[c].detail}`).join('; '),
      ...(status === 429 ? { headers: z.object({ 'Retry-After': z.string().optional().meta({ description: 'Seconds to wait' }) }) } : {}),
      content: { 'application/json': { schema, examples: entry.examples } },
    };
  }
  return responses;
}
