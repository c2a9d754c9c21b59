/**
 * The OpenAPI 3.1 document of the API, generated from the route modules' RouteDocs (the zod
 * schemas their handlers validate with, and the response schemas of api/openapi/schemas/) by
 * zod-openapi. Served at GET /api/v2/openapi.json and rendered at /docs.
 */
import { z } from 'zod';
import { createDocument, ZodOpenApiOperationObject, ZodOpenApiPathsObject, ZodOpenApiResponseObject } from 'zod-openapi';
import { errorExamples, errorResponses } from './error-responses';
import { openApiPath, pathParams, RouteAuth, RouteDoc } from './registry';
import { AnthropicErrorBody, ErrorBody, OpenAIErrorBody } from './schemas/errors';
import { StreamDelta, StreamEnd, StreamStart } from './schemas/generation';

export type OpenApiDocument = ReturnType<typeof createDocument>;

const SECURITY: Record<RouteAuth, Array<Record<string, string[]>>> = {
  none: [],
  optional: [{}, { session: [] }, { apiKey: [] }, { apiKeyHeader: [] }],
  user: [{ session: [] }, { apiKey: [] }, { apiKeyHeader: [] }],
  session: [{ session: [] }],
  // The body's `refresh_token` works as well as the cookie.
  refresh: [{ refreshCookie: [] }, {}],
  signature: [],
  operator: [{ metricsToken: [] }],
};

const RATE_LIMIT_HEADERS = z.object({
  'X-RateLimit-Limit-Hour': z.string().optional().meta({ description: "The plan's generations per hour (0: unlimited)" }),
  'X-RateLimit-Remaining-Hour': z.string().optional(),
  'X-RateLimit-Limit-Day': z.string().optional().meta({ description: "The plan's generations per day (0: unlimited)" }),
  'X-RateLimit-Remaining-Day': z.string().optional(),
  'X-Request-Id': z.string().optional(),
});
const REQUEST_ID_HEADER = z.object({ 'X-Request-Id': z.string().optional().meta({ description: 'Quote it when reporting a problem' }) });

function operationId(doc: RouteDoc): string {
  const words = doc.path.split(/[^A-Za-z0-9]+/).filter(Boolean).map((w) => w[0]?.toUpperCase() + w.slice(1));
  return `${doc.method}${words.join('')}`;
}

function successResponses(doc: RouteDoc): Record<string, ZodOpenApiResponseObject> {
  const headers = doc.auth === 'user' || doc.auth === 'session' || doc.auth === 'optional' ? RATE_LIMIT_HEADERS : REQUEST_ID_HEADER;
  const responses: Record<string, ZodOpenApiResponseObject> = {};
  for (const [status, response] of Object.entries(doc.responses)) {
    const content: NonNullable<ZodOpenApiResponseObject['content']> = {};
    if (response.schema) content['application/json'] = { schema: response.schema, ...(response.example !== undefined ? { example: response.example } : {}) };
    for (const [type, other] of Object.entries(response.content ?? {})) content[type] = { schema: other.schema ?? z.string() };
    responses[status] = { description: response.description, headers, ...(Object.keys(content).length > 0 ? { content } : {}) };
  }
  return responses;
}

function operation(doc: RouteDoc): ZodOpenApiOperationObject {
  const names = pathParams(doc.path);
  const params = doc.params ?? z.object(Object.fromEntries(names.map((name) => [name, z.string()])));
  const bodyRequired = doc.body ? !doc.body.safeParse({}).success : false;
  return {
    operationId: operationId(doc),
    summary: doc.summary,
    ...(doc.description ? { description: doc.description } : {}),
    tags: [doc.tag],
    security: SECURITY[doc.auth],
    requestParams: {
      ...(names.length > 0 ? { path: params } : {}),
      ...(doc.query ? { query: doc.query } : {}),
      ...(doc.headers ? { header: doc.headers } : {}),
    },
    ...(doc.body || doc.multipart
      ? {
          requestBody: {
            required: doc.multipart !== undefined || bodyRequired,
            content: {
              ...(doc.body ? { 'application/json': { schema: doc.body, ...(doc.bodyExample !== undefined ? { example: doc.bodyExample } : {}) } } : {}),
              ...(doc.multipart ? { 'multipart/form-data': { schema: doc.multipart } } : {}),
            },
          },
        }
      : {}),
    responses: { ...successResponses(doc), ...errorResponses(doc) },
  };
}

const DESCRIPTION = `Self-hostable AI generation: one endpoint, \`POST /api/v2/generate\`, for text, images, video, speech, transcripts, music and image tools, billed in tokens charged only when a generation completes; and the OpenAI- and Anthropic-compatible front door under \`/v1\`.

**Credentials.** An access token (\`POST /api/v2/auth/login\` or \`/register\`, valid 15 minutes, renewed by \`POST /api/v2/auth/refresh\` with the httpOnly \`refresh_token\` cookie) or an API key (\`gsk_…\`, vip and elite plans), both as \`Authorization: Bearer …\`; a key may also come as \`x-api-key\`. A key may use the account but not administer it: routes marked session-only answer it 403 \`api_key_not_allowed\`.

**Errors** under \`/api/v2\` are \`{"detail", "code"}\` with the codes of the catalogue (422 adds \`errors: [{field, message}]\`, 429 \`retry_after\`, 402 \`price\` and \`available\`); under \`/v1\` they take OpenAI's shape, or Anthropic's on \`/v1/messages\` and for clients that send \`anthropic-version\`.

**Generations** answer in two shapes that differ only in \`id\`: shape A (an integer) and shape B (\`gen_<n>\`); both carry the union of the two shapes' field names.`;

export function buildOpenApiDocument(docs: RouteDoc[], options: { version: string; serverUrl: string }): OpenApiDocument {
  const paths: ZodOpenApiPathsObject = {};
  for (const doc of docs) {
    const path = openApiPath(doc.path);
    const item = (paths[path] ??= {});
    if (item[doc.method]) throw new Error(`${doc.method.toUpperCase()} ${doc.path} is documented twice`);
    item[doc.method] = operation(doc);
  }
  const tags = [...new Set(docs.map((d) => d.tag))].map((name) => ({ name }));
  return createDocument({
    openapi: '3.1.0',
    info: { title: 'gensvc API', version: options.version, description: DESCRIPTION, license: { name: 'MIT', identifier: 'MIT' } },
    servers: [{ url: options.serverUrl, description: 'This server' }],
    tags,
    paths,
    components: {
      // The stream's events are data lines of text/event-stream, which no schema reaches: listed here.
      schemas: { Error: ErrorBody, OpenAIError: OpenAIErrorBody, AnthropicError: AnthropicErrorBody, StreamStart, StreamDelta, StreamEnd },
      examples: errorExamples(docs),
      securitySchemes: {
        session: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'An access token from /api/v2/auth/login, /register or /refresh (15 minutes)' },
        apiKey: { type: 'http', scheme: 'bearer', bearerFormat: 'gsk_…', description: 'An API key (vip and elite plans), made with POST /api/v2/keys' },
        apiKeyHeader: { type: 'apiKey', in: 'header', name: 'x-api-key', description: "An API key (or access token) in `x-api-key`, as Anthropic's clients send it (used when there is no Authorization header)" },
        metricsToken: { type: 'http', scheme: 'bearer', description: 'The operator\'s METRICS_TOKEN (GET /metrics only)' },
        refreshCookie: { type: 'apiKey', in: 'cookie', name: 'refresh_token', description: 'The httpOnly refresh cookie set by login, register and refresh (Path=/api/v2/auth)' },
      },
    },
  }, { override: dropSafeIntegerBounds });
}

/** zod writes `.int()` as the safe-integer range; that is noise to a reader (JSON numbers are that anyway). */
function dropSafeIntegerBounds({ jsonSchema }: { jsonSchema: { minimum?: unknown; maximum?: unknown } }): void {
  if (jsonSchema.minimum === Number.MIN_SAFE_INTEGER) delete jsonSchema.minimum;
  if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
}
