/**
 * Checking an OpenAPI 3.1 document without network: a JSON Schema of the 3.1 document's structure
 * (condensed from the specification's schema at spec.openapis.org/oas/3.1: objects, their required
 * fields and allowed keys, `x-` extensions), the checks a schema cannot make (every `$ref`
 * resolves, operation ids are unique, each path template's params are declared as path params),
 * and validation of a value against one of the document's schemas (JSON Schema 2020-12, its
 * `$ref`s resolved within the document) by @cfworker/json-schema.
 */
import { Validator } from '@cfworker/json-schema';

type Json = Record<string, unknown>;

/**
 * Which routes of the app the OpenAPI document must describe: everything under /api/ and /v1/,
 * the files, and the service's probes (/health, /ready, /metrics). The rest serve pages (/docs,
 * the dashboard) and are left out of it.
 */
export function isApiPath(path: string): boolean {
  return /^\/(api|v1|files)\//.test(path) || ['/health', '/ready', '/metrics'].includes(path);
}

const ext = { '^x-': {} };
const strict = (properties: Json, required: string[] = []) => ({ type: 'object', properties, required, patternProperties: ext, additionalProperties: false });
const ref = (name: string) => ({ $ref: `#/$defs/${name}` });
const orRef = (name: string) => ({ oneOf: [ref('reference'), ref(name)] });
const mapOf = (schema: Json) => ({ type: 'object', additionalProperties: schema });

/** The OpenAPI 3.1 document's structure (schemas inside it are JSON Schema 2020-12: any object or boolean). */
export const OPENAPI_31_STRUCTURE = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  ...strict(
    {
      openapi: { type: 'string', pattern: '^3\\.1\\.\\d+(-.+)?$' },
      info: ref('info'),
      jsonSchemaDialect: { type: 'string' },
      servers: { type: 'array', items: ref('server') },
      paths: { type: 'object', patternProperties: { '^/': ref('pathItem'), ...ext }, additionalProperties: false },
      webhooks: mapOf(orRef('pathItem')),
      components: ref('components'),
      security: { type: 'array', items: mapOf({ type: 'array', items: { type: 'string' } }) },
      tags: { type: 'array', items: strict({ name: { type: 'string' }, description: { type: 'string' }, externalDocs: {} }, ['name']) },
      externalDocs: {},
    },
    ['openapi', 'info'],
  ),
  anyOf: [{ required: ['paths'] }, { required: ['components'] }, { required: ['webhooks'] }],
  $defs: {
    reference: { type: 'object', properties: { $ref: { type: 'string', format: 'uri-reference' }, summary: { type: 'string' }, description: { type: 'string' } }, required: ['$ref'] },
    schema: { type: ['object', 'boolean'] },
    info: strict(
      {
        title: { type: 'string' },
        summary: { type: 'string' },
        description: { type: 'string' },
        termsOfService: { type: 'string' },
        contact: strict({ name: { type: 'string' }, url: { type: 'string' }, email: { type: 'string' } }),
        license: { ...strict({ name: { type: 'string' }, identifier: { type: 'string' }, url: { type: 'string' } }, ['name']), not: { required: ['identifier', 'url'] } },
        version: { type: 'string' },
      },
      ['title', 'version'],
    ),
    server: strict({ url: { type: 'string' }, description: { type: 'string' }, variables: mapOf(strict({ enum: { type: 'array', items: { type: 'string' }, minItems: 1 }, default: { type: 'string' }, description: { type: 'string' } }, ['default'])) }, ['url']),
    components: strict({
      schemas: mapOf(ref('schema')),
      responses: mapOf(orRef('response')),
      parameters: mapOf(orRef('parameter')),
      examples: mapOf(orRef('example')),
      requestBodies: mapOf(orRef('requestBody')),
      headers: mapOf(orRef('header')),
      securitySchemes: mapOf(orRef('securityScheme')),
      links: mapOf({ type: 'object' }),
      callbacks: mapOf({ type: 'object' }),
      pathItems: mapOf(orRef('pathItem')),
    }),
    pathItem: strict({
      $ref: { type: 'string' },
      summary: { type: 'string' },
      description: { type: 'string' },
      servers: { type: 'array', items: ref('server') },
      parameters: { type: 'array', items: orRef('parameter') },
      get: ref('operation'),
      put: ref('operation'),
      post: ref('operation'),
      delete: ref('operation'),
      options: ref('operation'),
      head: ref('operation'),
      patch: ref('operation'),
      trace: ref('operation'),
    }),
    operation: strict({
      tags: { type: 'array', items: { type: 'string' } },
      summary: { type: 'string' },
      description: { type: 'string' },
      externalDocs: {},
      operationId: { type: 'string' },
      parameters: { type: 'array', items: orRef('parameter') },
      requestBody: orRef('requestBody'),
      responses: { type: 'object', patternProperties: { '^[1-5](?:[0-9]{2}|XX)$': orRef('response'), '^default$': orRef('response'), ...ext }, additionalProperties: false, minProperties: 1 },
      callbacks: mapOf({ type: 'object' }),
      deprecated: { type: 'boolean' },
      security: { type: 'array', items: mapOf({ type: 'array', items: { type: 'string' } }) },
      servers: { type: 'array', items: ref('server') },
    }),
    parameter: {
      ...strict(
        {
          name: { type: 'string' },
          in: { enum: ['query', 'header', 'path', 'cookie'] },
          description: { type: 'string' },
          required: { type: 'boolean' },
          deprecated: { type: 'boolean' },
          allowEmptyValue: { type: 'boolean' },
          style: { type: 'string' },
          explode: { type: 'boolean' },
          allowReserved: { type: 'boolean' },
          schema: ref('schema'),
          content: mapOf(ref('mediaType')),
          example: {},
          examples: mapOf(orRef('example')),
        },
        ['name', 'in'],
      ),
      oneOf: [{ required: ['schema'] }, { required: ['content'] }],
      if: { properties: { in: { const: 'path' } } },
      then: { properties: { required: { const: true } }, required: ['required'] },
    },
    requestBody: strict({ description: { type: 'string' }, content: mapOf(ref('mediaType')), required: { type: 'boolean' } }, ['content']),
    mediaType: strict({ schema: ref('schema'), example: {}, examples: mapOf(orRef('example')), encoding: mapOf({ type: 'object' }) }),
    example: { ...strict({ summary: { type: 'string' }, description: { type: 'string' }, value: {}, externalValue: { type: 'string' } }), not: { required: ['value', 'externalValue'] } },
    response: strict({ description: { type: 'string' }, headers: mapOf(orRef('header')), content: mapOf(ref('mediaType')), links: mapOf({ type: 'object' }) }, ['description']),
    header: strict({ description: { type: 'string' }, required: { type: 'boolean' }, deprecated: { type: 'boolean' }, schema: ref('schema'), content: mapOf(ref('mediaType')), example: {}, examples: mapOf(orRef('example')), style: { type: 'string' }, explode: { type: 'boolean' } }),
    securityScheme: {
      type: 'object',
      required: ['type'],
      oneOf: [
        strict({ type: { const: 'apiKey' }, description: { type: 'string' }, name: { type: 'string' }, in: { enum: ['query', 'header', 'cookie'] } }, ['type', 'name', 'in']),
        strict({ type: { const: 'http' }, description: { type: 'string' }, scheme: { type: 'string' }, bearerFormat: { type: 'string' } }, ['type', 'scheme']),
        strict({ type: { const: 'mutualTLS' }, description: { type: 'string' } }, ['type']),
        strict({ type: { const: 'oauth2' }, description: { type: 'string' }, flows: { type: 'object' } }, ['type', 'flows']),
        strict({ type: { const: 'openIdConnect' }, description: { type: 'string' }, openIdConnectUrl: { type: 'string' } }, ['type', 'openIdConnectUrl']),
      ],
    },
  },
};

export interface ValidationProblem {
  where: string;
  error: string;
}

export function validateJson(schema: unknown, value: unknown): ValidationProblem[] {
  const result = new Validator(schema as never, '2020-12', false).validate(value);
  return result.valid ? [] : result.errors.map((e) => ({ where: e.instanceLocation, error: e.error }));
}

/** Validators of a document's schemas, built once per schema object (building one walks the whole document). */
const validators = new WeakMap<object, Validator>();

/** `value` against `schema`, a schema of `document` (its `#/components/...` refs resolved in the document). */
export function validateAgainstDocument(document: Json, schema: Json, value: unknown): ValidationProblem[] {
  let validator = validators.get(schema);
  if (!validator) {
    const root = { $schema: 'https://json-schema.org/draft/2020-12/schema', components: document.components, ...schema };
    validator = new Validator(root as never, '2020-12', false);
    validators.set(schema, validator);
  }
  const result = validator.validate(value);
  return result.valid ? [] : result.errors.map((e) => ({ where: e.instanceLocation, error: e.error }));
}

type DocOperation = { responses: Record<string, { content?: Record<string, { schema?: Json }> }> };

/**
 * Whether an answer of the route `key` (`METHOD /path/:param`) is one the document describes: its
 * status, its content type, and (for JSON) its body against the schema. An empty list when it is.
 */
export function undocumentedAnswer(document: Json, key: string, answer: { status: number; contentType: string; body: unknown; empty: boolean }): string[] {
  const [method, template] = key.split(' ') as [string, string];
  const docPath = template.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
  const op = (document.paths as Record<string, Record<string, DocOperation>>)[docPath]?.[method.toLowerCase()];
  if (!op) return ['no such operation in the document'];
  const response = op.responses[String(answer.status)];
  if (!response) return [`status ${answer.status} is not documented (${Object.keys(op.responses).join(', ')})`];
  if (!response.content) return answer.empty ? [] : [`documented without a body, answered ${answer.contentType}`];
  const media = response.content[answer.contentType] ?? response.content['*/*'];
  if (!media) return [`content type ${answer.contentType} is not documented (${Object.keys(response.content).join(', ')})`];
  if (answer.contentType !== 'application/json' || !media.schema) return [];
  return validateAgainstDocument(document, media.schema, answer.body).map((p) => `${p.where}: ${p.error}`);
}

/** The node at a local `$ref` (`#/components/schemas/X`), or undefined. */
export function resolveRef(document: Json, pointer: string): unknown {
  if (!pointer.startsWith('#/')) return undefined;
  let node: unknown = document;
  for (const raw of pointer.slice(2).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (typeof node !== 'object' || node === null || !(key in node)) return undefined;
    node = (node as Json)[key];
  }
  return node;
}

/** What the structure schema cannot see. */
export function semanticProblems(document: Json): string[] {
  const problems: string[] = [];
  const walk = (node: unknown, at: string): void => {
    if (Array.isArray(node)) return node.forEach((child, i) => walk(child, `${at}/${i}`));
    if (typeof node !== 'object' || node === null) return;
    for (const [key, child] of Object.entries(node)) {
      if (key === '$ref' && typeof child === 'string' && resolveRef(document, child) === undefined) problems.push(`${at}: $ref ${child} resolves to nothing`);
      walk(child, `${at}/${key}`);
    }
  };
  walk(document, '#');
  const ids = new Map<string, string>();
  for (const [path, item] of Object.entries((document.paths ?? {}) as Record<string, Json>)) {
    const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] as string).sort();
    for (const [method, operation] of Object.entries(item)) {
      const op = operation as { operationId?: string; parameters?: Array<{ in: string; name: string }> };
      const where = `${method.toUpperCase()} ${path}`;
      if (op.operationId) {
        if (ids.has(op.operationId)) problems.push(`${where}: operationId ${op.operationId} also on ${ids.get(op.operationId)}`);
        ids.set(op.operationId, where);
      } else problems.push(`${where}: no operationId`);
      const declared = (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name).sort();
      if (JSON.stringify(declared) !== JSON.stringify(templated)) problems.push(`${where}: path params ${JSON.stringify(declared)}, template ${JSON.stringify(templated)}`);
    }
  }
  return problems;
}
