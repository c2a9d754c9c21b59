/**
 * The OpenAPI document (GET /api/v2/openapi.json) against the real app (issue #16): it is a
 * structurally valid OpenAPI 3.1 document; it describes exactly the routes the app's routers hold
 * (a route added without a RouteDoc, or a RouteDoc left after its route went, fails here); every
 * example in it validates against its own schema; and the answers of the real app to a broad set
 * of real requests (accounts, every generation shape, history, models, keys, assistants,
 * schedules, webhooks, billing, /v1, streams, refusals) validate against the document's schema
 * for their path, method, status and content type.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Response } from 'supertest';
import { errorCatalogue } from '../shared/errors';
import { startTestApp, TestApp } from './helpers/app';
import { downProvider, FakeProvider } from './helpers/fake-provider';
import { MediaSink } from './helpers/fuzz/media-sink';
import { isApiPath, OPENAPI_31_STRUCTURE, resolveRef, semanticProblems, validateAgainstDocument, validateJson } from './helpers/openapi-check';
import { routeTable } from './helpers/route-table';
import { refreshCookieFrom, registerUser, TestUser, userOnPlan } from './helpers/users';

type Json = Record<string, unknown>;

const fixtures = path.join(__dirname, 'fixtures');
const fake = new FakeProvider('fake');
/** A webhook receiver on 127.0.0.1 (allowed by URL_FETCH_ALLOW), so deliveries really happen. */
const sink = new MediaSink();
const METRICS_TOKEN = 'docs-test-metrics-token-0123456789';
const holder: { doc?: Json; app?: TestApp } = {};
const t = {
  get app(): TestApp {
    if (!holder.app) throw new Error('app not started');
    return holder.app;
  },
};


function doc(): Json {
  if (!holder.doc) throw new Error('document not fetched');
  return holder.doc;
}

beforeAll(async () => {
  await sink.start();
  holder.app = await startTestApp(
    { CATALOG_PATH: path.join(fixtures, 'catalog.json'), ASSISTANTS_PATH: path.join(fixtures, 'assistants.json'), URL_FETCH_ALLOW: sink.hostPort, METRICS_TOKEN: METRICS_TOKEN },
    { providers: [fake.adapter(), downProvider('down')], worker: true },
  );
  const res = await t.app.http().get('/api/v2/openapi.json');
  expect(res.status).toBe(200);
  holder.doc = res.body as Json;
}, 60_000);

afterAll(async () => {
  await holder.app?.close();
  await sink.close();
});

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
type Operation = { responses: Record<string, { content?: Record<string, { schema?: Json; example?: unknown; examples?: Record<string, Json> }> }>; requestBody?: { content: Record<string, { schema?: Json; example?: unknown }> } };

function operations(): Array<{ key: string; path: string; method: string; op: Operation }> {
  const found = [];
  for (const [docPath, item] of Object.entries(doc().paths as Record<string, Record<string, Operation>>)) {
    for (const method of METHODS) {
      const op = item[method];
      if (op) found.push({ key: `${method.toUpperCase()} ${docPath.replace(/\{([^}]+)\}/g, ':$1')}`, path: docPath, method, op });
    }
  }
  return found;
}

describe('the document', () => {
  it('is a structurally valid OpenAPI 3.1 document whose $refs, operation ids and path params hold together', () => {
    expect(doc().openapi).toBe('3.1.0');
    expect(validateJson(OPENAPI_31_STRUCTURE, doc())).toEqual([]);
    expect(semanticProblems(doc())).toEqual([]);
  });

  it('describes every route of the app, and no route the app does not have', () => {
    const routes = routeTable(t.app.container);
    const api = routes.filter((r) => isApiPath(r.path)).map((r) => r.key).sort();
    const documented = operations().map((o) => o.key).sort();
    expect(documented).toEqual(api);
    expect(api.length).toBeGreaterThan(70);
    // What is left out serves pages (the /docs page and its assets among them).
    expect(routes.filter((r) => !isApiPath(r.path)).map((r) => r.key)).toEqual(expect.arrayContaining(['GET /docs', 'GET /docs/assets/:file']));
  });

  it('documents the error body of every code of the catalogue, in our shape under its own status', () => {
    const seen = new Set<string>();
    const statusesOfOurs = new Map<string, Set<string>>();
    for (const { op } of operations()) {
      for (const [status, response] of Object.entries(op.responses)) {
        for (const name of Object.keys(response.content?.['application/json']?.examples ?? {})) {
          const code = name.replace(/^(openai|anthropic)_/, '');
          if (!(code in errorCatalogue)) continue;
          seen.add(code);
          if (code === name) statusesOfOurs.set(code, (statusesOfOurs.get(code) ?? new Set()).add(status));
        }
      }
    }
    // 405 is the router's answer to a method no route has: it belongs to no operation.
    const expected = Object.keys(errorCatalogue).filter((code) => code !== 'method_not_allowed').sort();
    expect([...seen].sort()).toEqual(expected);
    for (const [code, statuses] of statusesOfOurs) expect({ code, statuses: [...statuses] }).toEqual({ code, statuses: [String(errorCatalogue[code as keyof typeof errorCatalogue].status)] });
    expect(statusesOfOurs.size).toBeGreaterThan(25);
  });

  it('declares the auth schemes: an access token, an API key as Bearer or x-api-key, the refresh cookie', () => {
    const schemes = (doc().components as { securitySchemes: Json }).securitySchemes;
    expect(schemes).toMatchObject({
      session: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      apiKey: { type: 'http', scheme: 'bearer' },
      apiKeyHeader: { type: 'apiKey', in: 'header', name: 'x-api-key' },
      refreshCookie: { type: 'apiKey', in: 'cookie', name: 'refresh_token' },
    });
    const security = (key: string) => (operations().find((o) => o.key === key)?.op as { security?: unknown }).security;
    expect(security('POST /api/v2/keys')).toEqual([{ session: [] }]);
    expect(security('GET /api/v2/user/me')).toEqual([{ session: [] }, { apiKey: [] }, { apiKeyHeader: [] }]);
    expect(security('GET /api/v2/models')).toEqual([{}, { session: [] }, { apiKey: [] }, { apiKeyHeader: [] }]);
    expect(security('POST /api/v2/auth/login')).toEqual([]);
  });

  it('has examples that are valid for their own schemas', () => {
    const problems: string[] = [];
    let checked = 0;
    const check = (where: string, schema: Json | undefined, value: unknown) => {
      if (!schema || value === undefined) return;
      checked++;
      for (const p of validateAgainstDocument(doc(), schema, value)) problems.push(`${where} ${p.where}: ${p.error}`);
    };
    for (const { key, op } of operations()) {
      for (const [type, media] of Object.entries(op.requestBody?.content ?? {})) check(`${key} request ${type}`, media.schema, media.example);
      for (const [status, response] of Object.entries(op.responses)) {
        const media = response.content?.['application/json'];
        for (const [name, example] of Object.entries(media?.examples ?? {})) {
          const value = typeof example.$ref === 'string' ? (resolveRef(doc(), example.$ref) as Json).value : example.value;
          check(`${key} ${status} ${name}`, media?.schema, value);
        }
      }
    }
    const schemas = (doc().components as { schemas: Record<string, Json> }).schemas;
    for (const [name, schema] of Object.entries(schemas)) check(`components.schemas.${name}`, { $ref: `#/components/schemas/${name}` }, schema.example);
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(300);
  });
});

// Recording real answers ------------------------------------------------------------------------

interface Recorded {
  key: string;
  status: number;
  contentType: string;
  body: unknown;
  text: string;
}
const recorded: Recorded[] = [];

function auth(user: TestUser | string): [string, string] {
  return ['authorization', `Bearer ${typeof user === 'string' ? user : user.accessToken}`];
}

/** One request to `route` (`METHOD /path/:param`), recorded for validation. */
async function call(route: string, options: { params?: Record<string, string | number>; auth?: [string, string]; body?: unknown; query?: Record<string, string>; headers?: Record<string, string>; build?: (r: import('supertest').Test) => import('supertest').Test } = {}): Promise<Response> {
  const [method, template] = route.split(' ') as [string, string];
  const url = template.replace(/:([A-Za-z0-9_]+)/g, (_, name: string) => encodeURIComponent(String(options.params?.[name] ?? '')));
  let req = t.app.http()[method.toLowerCase() as 'get'](url);
  if (options.auth) req = req.set(...options.auth);
  for (const [name, value] of Object.entries(options.headers ?? {})) req = req.set(name, value);
  if (options.query) req = req.query(options.query);
  if (options.build) req = options.build(req);
  else if (options.body !== undefined) req = req.send(options.body as object);
  const res = await req.buffer(true).parse((response, done) => {
    const chunks: Buffer[] = [];
    response.on('data', (chunk: Buffer) => chunks.push(chunk));
    response.on('end', () => done(null, Buffer.concat(chunks)));
  });
  const raw = res.body as Buffer;
  const contentType = String(res.headers['content-type'] ?? '').split(';')[0] ?? '';
  const text = raw.toString('utf8');
  const body = contentType === 'application/json' ? (JSON.parse(text) as unknown) : undefined;
  recorded.push({ key: route, status: res.status, contentType, body, text });
  // Handlers below read the JSON as usual.
  (res as unknown as { body: unknown }).body = body ?? text;
  return res;
}

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');

/** A second of 8 kHz 16-bit mono silence as a WAV file. */
function wav(): Buffer {
  const samples = Buffer.alloc(16_000);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0);
  header.writeUInt32LE(36 + samples.length, 4);
  header.write('WAVEfmt ', 8);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(8000, 24);
  header.writeUInt32LE(16_000, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36);
  header.writeUInt32LE(samples.length, 40);
  return Buffer.concat([header, samples]);
}

async function poll(user: TestUser, id: number): Promise<Json> {
  for (let i = 0; i < 500; i++) {
    const res = await call('GET /api/v2/generate/:id', { params: { id }, auth: auth(user) });
    if ((res.body as Json).status !== 'pending') return res.body as Json;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`generation ${id} still pending`);
}

/** The schema the document gives for `answer`, or why there is none. */
function schemaFor(answer: Recorded): { schema?: Json; problem?: string } {
  const [method, template] = answer.key.split(' ') as [string, string];
  const docPath = template.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
  const op = (doc().paths as Record<string, Record<string, Operation>>)[docPath]?.[method.toLowerCase()];
  if (!op) return { problem: 'no such operation in the document' };
  const response = op.responses[String(answer.status)];
  if (!response) return { problem: `status ${answer.status} is not documented (${Object.keys(op.responses).join(', ')})` };
  if (!response.content) return answer.text === '' ? {} : { problem: `documented without a body, answered ${answer.contentType}` };
  const media = response.content[answer.contentType] ?? response.content['*/*'];
  if (!media) return { problem: `content type ${answer.contentType} is not documented (${Object.keys(response.content).join(', ')})` };
  return { schema: media.schema };
}

describe('answers of the real app', () => {
  it('match the document: status, content type and body schema, for every route driven', async () => {
    // Accounts and sessions
    const registered = await call('POST /api/v2/auth/register', { body: { email: 'docs-reader@example.test', password: 'a long password', name: 'Reader' } });
    const reader: TestUser = { id: (registered.body as { user: { id: number } }).user.id, email: 'docs-reader@example.test', password: 'a long password', accessToken: (registered.body as { access_token: string }).access_token, refreshToken: refreshCookieFrom(registered.headers['set-cookie']) ?? '' };
    await call('POST /api/v2/auth/register', { body: { email: 'docs-reader@example.test', password: 'a long password' } });
    await call('POST /api/v2/auth/register', { body: { email: 'not an address', password: 'short' } });
    await call('POST /api/v2/auth/login', { body: { email: 'docs-reader@example.test', password: 'a long password' } });
    await call('POST /api/v2/auth/login', { body: { email: 'docs-reader@example.test', password: 'wrong password' } });
    await call('POST /api/v2/auth/login', { build: (r) => r.set('content-type', 'application/json').send('{"email":') });
    await call('POST /api/v2/auth/login', { build: (r) => r.set('content-type', 'text/plain').send('hello') });
    const refreshed = await call('POST /api/v2/auth/refresh', { body: { refresh_token: reader.refreshToken } });
    const nextRefresh = (refreshed.body as { refresh_token: string }).refresh_token;
    await call('POST /api/v2/auth/refresh', { body: {} });
    await call('GET /api/v2/auth/providers');
    await call('POST /api/v2/auth/messenger', { body: { id: 1, first_name: 'A', auth_date: 1, hash: 'a'.repeat(64) } });
    await call('POST /api/v2/auth/identity-provider', { body: { id_token: 'x' } });
    await call('POST /api/v2/auth/forgot-password', { body: { email: 'docs-reader@example.test' } });
    await call('POST /api/v2/auth/reset-password', { body: { token: 'nope', password: 'another long password' } });
    await call('POST /api/v2/auth/change-password', { auth: auth(reader), body: { current_password: 'wrong', new_password: 'another long password' } });
    await call('POST /api/v2/auth/link', { auth: auth(reader), body: { code: 'NOPE1234' } });
    const sessions = await call('GET /api/v2/auth/sessions', { auth: auth(reader) });
    await call('DELETE /api/v2/auth/sessions/:id', { params: { id: 2_000_000_000 }, auth: auth(reader) });
    await call('GET /api/v2/user/me', { auth: auth(reader) });
    await call('GET /api/v2/user/me');
    await call('GET /api/v2/user/me', { auth: auth('not-a-token') });
    await call('PATCH /api/v2/user/me', { auth: auth(reader), body: { name: 'Ada', avatar_url: null } });
    await call('GET /api/v2/user/balance', { auth: auth(reader) });
    await call('GET /api/v2/user/settings', { auth: auth(reader) });
    await call('PATCH /api/v2/user/settings', { auth: auth(reader), body: { language: 'ru', default_image_size: '1024x1024' } });
    await call('PATCH /api/v2/user/settings', { auth: auth(reader), body: { language: 'fr' } });
    expect((sessions.body as { sessions: unknown[] }).sessions.length).toBeGreaterThan(0);

    // Models and prices (open, and with credentials)
    await call('GET /api/v2/models');
    await call('GET /api/v2/models', { query: { category: 'text', min_plan: 'free' }, auth: auth(reader) });
    await call('GET /api/v2/models', { query: { category: 'nope' } });
    await call('GET /api/v2/models/:slug', { params: { slug: 'fake-video' } });
    await call('GET /api/v2/models/:slug', { params: { slug: 'nope' } });
    await call('GET /api/v2/models/:slug/avg-time', { params: { slug: 'fake-text' } });
    await call('POST /api/v2/models/:slug/calculate-price', { params: { slug: 'fake-video' }, body: { duration: 10 } });
    await call('POST /api/v2/models/:slug/calculate-price', { params: { slug: 'fake-video' }, body: { duration: 3 } });
    await call('GET /api/v2/billing/products');

    // Generations: both shapes, sync and async, a stream, refusals
    const vip = await userOnPlan(t.app, 'vip', 500);
    const text = await call('POST /api/v2/generate', { auth: auth(vip), body: { model: 'fake-text', prompt: 'Say hello' } });
    expect(text.body).toMatchObject({ id: expect.stringMatching(/^gen_/), status: 'completed' });
    const image = await call('POST /api/v2/generate', { auth: auth(vip), body: { model: 'fake-image', prompt: 'a lighthouse', seed: 7 } });
    expect(image.body).toMatchObject({ id: expect.any(Number), status: 'completed' });
    const video = await call('POST /api/v2/generate', { auth: auth(vip), headers: { 'Idempotency-Key': 'docs-video-1' }, body: { model: 'fake-video', prompt: 'waves', duration: 5 } });
    expect(video.body).toMatchObject({ status: 'pending' });
    const videoId = (video.body as { id: number }).id;
    await call('GET /api/v2/generate/status/:id', { params: { id: `gen_${videoId}` }, auth: auth(vip) });
    expect(await poll(vip, videoId)).toMatchObject({ status: 'completed' });
    await call('GET /api/v2/generate/status/:id', { params: { id: `gen_${videoId}` }, auth: auth(vip) });
    await call('POST /api/v2/generate/:id/cancel', { params: { id: videoId }, auth: auth(vip) });
    await call('POST /api/v2/generate', { auth: auth(vip), body: { model: 'fake-tts', text: 'Hello there' } });
    fake.next({ kind: 'refuse', message: 'Content policy violation' });
    await call('POST /api/v2/generate', { auth: auth(vip), body: { model: 'fake-text', prompt: 'refused' } });
    const streamed = await call('POST /api/v2/generate', { auth: auth(vip), body: { model: 'fake-text', messages: [{ role: 'user', content: 'hi' }], stream: true } });
    expect(streamed.headers['content-type']).toMatch(/^text\/event-stream/);
    await call('POST /api/v2/generate', { auth: auth(vip), body: { model: 'fake-text', prompt: 42 } });
    await call('POST /api/v2/generate', { auth: auth(vip), body: { model: 'nope', prompt: 'x' } });
    await call('POST /api/v2/generate', { auth: auth(reader), body: { model: 'fake-premium', prompt: 'x' } });
    await call('POST /api/v2/generate', { auth: auth(reader), body: { model: 'fake-expensive', prompt: 'x' } });
    await call('GET /api/v2/generate/:id', { params: { id: 2_000_000_000 }, auth: auth(vip) });
    const resultUrl = String((image.body as { result_url: string }).result_url);
    await call('GET /files/:a/:b/:c/:name', { params: Object.fromEntries(['a', 'b', 'c', 'name'].map((k, i) => [k, new URL(resultUrl).pathname.split('/').slice(2)[i] ?? ''])) });
    await call('GET /files/:a/:b/:c/:name', { params: { a: 'results', b: '2026', c: '11', name: 'missing.png' } });

    // Uploads
    await call('POST /api/v2/tools', { auth: auth(vip), build: (r) => r.field('model', 'fake-upscale').field('scale', '2').attach('source_image', PNG, 'in.png') });
    const ocr = await call('POST /api/v2/tools', { auth: auth(vip), build: (r) => r.field('model', 'fake-ocr').attach('source_image', PNG, 'in.png') });
    await call('GET /api/v2/tools/:id', { params: { id: (ocr.body as { id: number }).id }, auth: auth(vip) });
    const inpaint = await call('POST /api/v2/inpaint', { auth: auth(vip), build: (r) => r.field('prompt', 'a boat').attach('image', PNG, 'image.png').attach('mask', PNG, 'mask.png') });
    await call('GET /api/v2/inpaint/:id', { params: { id: (inpaint.body as { id: number }).id }, auth: auth(vip) });
    const stt = await call('POST /api/v2/stt', { auth: auth(vip), build: (r) => r.field('model', 'fake-stt').attach('audio', wav(), 'a.wav') });
    await call('GET /api/v2/stt/:id', { params: { id: (stt.body as { id: number }).id }, auth: auth(vip) });
    await call('POST /api/v2/stt', { auth: auth(vip), build: (r) => r.field('model', 'fake-stt').attach('audio', Buffer.from('not audio at all'), 'a.wav') });

    // History and the ledger
    await call('GET /api/v2/user/history', { auth: auth(vip), query: { limit: '5' } });
    await call('GET /api/v2/user/history', { auth: auth(vip), query: { type: 'audio', favorites_only: 'true' } });
    await call('POST /api/v2/user/history/:id/favorite', { params: { id: videoId }, auth: auth(vip) });
    await call('POST /api/v2/user/history/:id/rate', { params: { id: videoId }, auth: auth(vip), body: { rating: 5 } });
    await call('POST /api/v2/user/history/:id/rate', { params: { id: videoId }, auth: auth(vip), body: { rating: 9 } });
    await call('GET /api/v2/user/transactions', { auth: auth(vip) });
    await call('DELETE /api/v2/user/history/:id', { params: { id: (image.body as { id: number }).id }, auth: auth(vip) });

    // API keys: made with a session, refused to a key, used by a key
    await call('POST /api/v2/keys', { auth: auth(reader), body: { name: 'free plan' } });
    const key = await call('POST /api/v2/keys', { auth: auth(vip), body: { name: 'server' } });
    const secret = (key.body as { key: string }).key;
    await call('GET /api/v2/keys', { auth: auth(vip) });
    await call('GET /api/v2/keys', { auth: auth(secret) });
    await call('GET /api/v2/user/me', { auth: auth(secret) });
    await call('GET /api/v2/user/balance', { headers: { 'x-api-key': secret } });
    await call('DELETE /api/v2/keys/:id', { params: { id: 2_000_000_000 }, auth: auth(vip) });

    // Assistants, schedules, webhooks
    await call('GET /api/v2/assistants/marketplace', { auth: auth(vip), query: { search: 'poet' } });
    await call('POST /api/v2/assistants/marketplace/:id/install', { params: { id: 'poet' }, auth: auth(vip) });
    await call('POST /api/v2/assistants/marketplace/:id/install', { params: { id: 'poet' }, auth: auth(vip) });
    await call('GET /api/v2/assistants', { auth: auth(vip) });
    await call('POST /api/v2/assistants/:id/rate', { params: { id: 'poet' }, auth: auth(vip), body: { rating: 4 } });
    await call('DELETE /api/v2/assistants/:id', { params: { id: 'poet' }, auth: auth(vip) });
    const schedule = await call('POST /api/v2/scheduled', { auth: auth(vip), body: { name: 'Morning', cron: '0 8 * * *', model: 'fake-text', prompt: 'A poem' } });
    const scheduleId = (schedule.body as { id: number }).id;
    await call('POST /api/v2/scheduled', { auth: auth(vip), body: { name: 'Bad', cron: 'a b c', model: 'fake-text' } });
    await call('GET /api/v2/scheduled', { auth: auth(vip) });
    await call('GET /api/v2/scheduled/:id', { params: { id: scheduleId }, auth: auth(vip) });
    await call('PUT /api/v2/scheduled/:id', { params: { id: scheduleId }, auth: auth(vip), body: { is_active: false } });
    await call('DELETE /api/v2/scheduled/:id', { params: { id: scheduleId }, auth: auth(vip) });
    const hook = await call('POST /api/v2/webhooks', { auth: auth(vip), body: { url: `${sink.baseUrl}/hook` } });
    const hookId = (hook.body as { id: number }).id;
    await call('GET /api/v2/webhooks', { auth: auth(vip) });
    await call('POST /api/v2/webhooks/:id/test', { params: { id: hookId }, auth: auth(vip) });
    await call('GET /api/v2/webhooks/:id/deliveries', { params: { id: hookId }, auth: auth(vip) });
    await call('POST /api/v2/webhooks/:id/enable', { params: { id: hookId }, auth: auth(vip) });
    await call('DELETE /api/v2/webhooks/:id', { params: { id: hookId }, auth: auth(vip) });

    // Billing
    const { codes } = await t.app.container.redemptionCodes.createBatch({ grant: { kind: 'tokens', tokens: 25 }, count: 1, usesPerCode: 1, expiresAt: null });
    await call('POST /api/v2/billing/redeem', { auth: auth(vip), body: { code: codes[0] } });
    await call('POST /api/v2/billing/redeem', { auth: auth(vip), body: { code: codes[0] } });
    await call('POST /api/v2/billing/redeem', { auth: auth(vip), body: { code: 'NOPE-NOPE-NOPE' } });
    await call('POST /api/v2/billing/redeem', { auth: auth(secret), body: { code: 'NOPE-NOPE-NOPE' } });

    // Service routes
    await call('GET /health');
    await call('GET /ready');
    await call('GET /metrics', { auth: auth(METRICS_TOKEN) });
    await call('GET /metrics', { auth: auth('wrong-token') });
    await call('POST /api/v2/billing/checkout', { auth: auth(vip), body: { product: 'tokens-500' } });
    await call('POST /api/v2/providers/stripe/webhook', { headers: { 'stripe-signature': 't=1,v1=00' }, body: { id: 'evt_1', type: 'checkout.session.completed' } });
    await call('GET /api/v2/openapi.json');
    await call('POST /api/v2/providers/replicate/webhook', { body: { id: 'pred_1' } });

    // /v1: OpenAI's and Anthropic's shapes
    await call('GET /v1/models', { auth: auth(secret) });
    await call('GET /v1/models', { auth: auth(secret), headers: { 'anthropic-version': '2023-06-01' }, query: { limit: '2' } });
    await call('GET /v1/models/:id', { params: { id: 'fake-text' }, auth: auth(secret) });
    await call('GET /v1/models/:id', { params: { id: 'fake-text' }, auth: auth(secret), headers: { 'anthropic-version': '2023-06-01' } });
    await call('GET /v1/models/:id', { params: { id: 'nope' }, auth: auth(secret) });
    await call('GET /v1/models');
    await call('POST /v1/chat/completions', { auth: auth(secret), body: { model: 'fake-text', messages: [{ role: 'user', content: 'Hello' }] } });
    await call('POST /v1/chat/completions', { auth: auth(secret), body: { model: 'fake-text', messages: [] } });
    await call('POST /v1/chat/completions', { auth: auth(secret), body: { model: 'fake-text', messages: [{ role: 'user', content: 'Hello' }], stream: true } });
    await call('POST /v1/messages', { auth: auth(secret), headers: { 'anthropic-version': '2023-06-01' }, body: { model: 'fake-text', max_tokens: 50, messages: [{ role: 'user', content: 'Hello' }] } });
    await call('POST /v1/messages', { auth: auth(secret), body: { model: 'fake-text', messages: [] } });
    const response = await call('POST /v1/responses', { auth: auth(secret), body: { model: 'fake-text', input: 'Hello' } });
    await call('GET /v1/responses/:id', { params: { id: String((response.body as { id: string }).id) }, auth: auth(secret) });
    await call('GET /v1/responses/:id', { params: { id: 'resp_2000000000' }, auth: auth(secret) });
    await call('POST /v1/images/generations', { auth: auth(secret), body: { model: 'fake-image', prompt: 'a lighthouse' } });
    await call('POST /v1/images/generations', { auth: auth(secret), body: { model: 'fake-image', prompt: 'a lighthouse', response_format: 'b64_json' } });
    await call('POST /v1/audio/speech', { auth: auth(secret), body: { model: 'fake-tts', input: 'Hello there', voice: 'alloy', response_format: 'wav' } });
    await call('POST /v1/audio/transcriptions', { auth: auth(secret), build: (r) => r.field('model', 'fake-stt').attach('file', wav(), 'a.wav') });
    await call('POST /v1/audio/transcriptions', { auth: auth(secret), build: (r) => r.field('model', 'fake-stt').field('response_format', 'verbose_json').attach('file', wav(), 'a.wav') });
    await call('POST /v1/audio/transcriptions', { auth: auth(secret), build: (r) => r.field('model', 'fake-stt').field('response_format', 'vtt').attach('file', wav(), 'a.wav') });
    const job = await call('POST /v1/videos', { auth: auth(secret), body: { model: 'fake-video', prompt: 'waves', seconds: '5' } });
    const jobId = String((job.body as { id: string }).id);
    await poll(vip, Number(jobId.replace('video_', '')));
    await call('GET /v1/videos', { auth: auth(secret) });
    await call('GET /v1/videos/:id', { params: { id: jobId }, auth: auth(secret) });
    await call('GET /v1/videos/:id/content', { params: { id: jobId }, auth: auth(secret) });
    await call('DELETE /v1/videos/:id', { params: { id: jobId }, auth: auth(secret) });
    await call('GET /v1/videos/:id', { params: { id: jobId }, auth: auth(secret) });

    // Signing out last
    await call('POST /api/v2/auth/logout', { auth: auth(secret) });
    await call('POST /api/v2/auth/logout', { body: { refresh_token: nextRefresh } });
    await call('DELETE /api/v2/user/me', { auth: auth(await registerUser(t.app)) });

    const problems: string[] = [];
    let validated = 0;
    for (const answer of recorded) {
      const { schema, problem } = schemaFor(answer);
      const where = `${answer.key} → ${answer.status} ${answer.contentType}`;
      if (problem) {
        problems.push(`${where}: ${problem} ${answer.text.slice(0, 200)}`);
        continue;
      }
      if (!schema) continue;
      if (answer.contentType === 'application/json') {
        validated++;
        for (const p of validateAgainstDocument(doc(), schema, answer.body)) problems.push(`${where} ${p.where}: ${p.error} ${answer.text.slice(0, 300)}`);
      }
    }
    expect(problems).toEqual([]);
    expect(validated).toBeGreaterThan(100);
    if (process.env.OPENAPI_STATS) console.log(recorded.map((r) => `${r.key} ${r.status} ${r.contentType}`).join('\n'));
    // Nearly every operation of the document was driven at least once, with a documented answer.
    const driven = new Set(recorded.map((r) => r.key));
    const missed = operations().map((o) => o.key).filter((key) => !driven.has(key));
    expect(missed).toEqual([]);
  }, 120_000);

  it('streams events whose data match the documented event schemas', async () => {
    const user = await userOnPlan(t.app, 'vip', 100);
    const res = await call('POST /api/v2/generate', { auth: auth(user), body: { model: 'fake-text', messages: [{ role: 'user', content: 'hi' }], stream: true } });
    const events = String(res.body)
      .split('\n\n')
      .filter(Boolean)
      .map((block) => ({ event: /^event: (.+)$/m.exec(block)?.[1], data: JSON.parse(/^data: (.+)$/m.exec(block)?.[1] ?? 'null') as unknown }));
    const schemaOf: Record<string, string> = { generation_start: 'StreamStart', content_delta: 'StreamDelta', generation_end: 'StreamEnd' };
    expect(events.map((e) => e.event)).toEqual(expect.arrayContaining(['generation_start', 'content_delta', 'generation_end']));
    for (const { event, data } of events) {
      expect({ event, problems: validateAgainstDocument(doc(), { $ref: `#/components/schemas/${schemaOf[event ?? '']}` }, data) }).toEqual({ event, problems: [] });
    }
  });
});

describe('/docs', () => {
  const assetUrls = (html: string): string[] => [...html.matchAll(/\s(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string);

  it('serves a page that loads only this server\'s files, under a policy that runs only scripts of this origin', async () => {
    const res = await t.app.http().get('/docs');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    const csp = String(res.headers['content-security-policy']);
    const directives = Object.fromEntries(csp.split(';').map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name, values.join(' ')]));
    expect(directives).toMatchObject({ 'default-src': "'none'", 'script-src': "'self'", 'connect-src': "'self'", 'img-src': "'self' data:", 'frame-ancestors': "'none'", 'base-uri': "'none'" });
    expect(csp).not.toMatch(/unsafe-eval|https?:|\*/);
    expect(res.headers['x-frame-options']).toBe('DENY');
    // No inline script (the policy would block it), and nothing from another host.
    expect(res.text).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
    expect(res.text).not.toMatch(/\son[a-z]+=/i);
    const urls = assetUrls(res.text);
    expect(urls.length).toBeGreaterThanOrEqual(5);
    for (const url of urls) expect(url).toMatch(/^\/(?!\/)/);
    expect(urls).toEqual(expect.arrayContaining(['/docs/assets/swagger-ui-bundle.js', '/docs/assets/docs-init.js', '/docs/assets/swagger-ui.css', '/api/v2/openapi.json']));
  });

  it('serves the assets from the swagger-ui-dist package, with caching headers, ETag revalidation and compression', async () => {
    const bundle = fs.readFileSync(path.join(path.dirname(require.resolve('swagger-ui-dist/package.json')), 'swagger-ui-bundle.js'));
    const page = await t.app.http().get('/docs');
    for (const url of assetUrls(page.text).filter((u) => u.startsWith('/docs/assets/'))) {
      const res = await t.app.http().get(url);
      expect({ url, status: res.status }).toEqual({ url, status: 200 });
      expect(res.headers['cache-control']).toBe('public, max-age=86400');
      expect(res.headers.etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      const revalidated = await t.app.http().get(url).set('if-none-match', String(res.headers.etag));
      expect(revalidated.status).toBe(304);
    }
    const js = await t.app.http().get('/docs/assets/swagger-ui-bundle.js').set('accept-encoding', 'gzip').buffer(true).parse((response, done) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => done(null, Buffer.concat(chunks)));
    });
    expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(js.headers['content-encoding']).toBe('gzip');
    expect(Buffer.compare(js.body as Buffer, bundle)).toBe(0);
    const css = await t.app.http().get('/docs/assets/swagger-ui.css');
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
    for (const name of ['index.html', 'package.json', 'swagger-ui-bundle.js.map', '..%2Fpackage.json', '__proto__']) {
      const res = await t.app.http().get(`/docs/assets/${name}`);
      expect({ name, status: res.status, body: res.body }).toEqual({ name, status: 404, body: { detail: 'Not found', code: 'not_found' } });
    }
  });

  it('signs "Try it out" in with the session: the init script refreshes with the cookie and pre-authorizes swagger-ui', async () => {
    const init = await t.app.http().get('/docs/assets/docs-init.js');
    expect(init.text).toContain("fetch('/api/v2/auth/refresh', { method: 'POST', credentials: 'same-origin'");
    // Under the dashboard's lock: two tabs refreshing with one cookie would end the session.
    expect(init.text).toContain("navigator.locks.request('gensvc-refresh'");
    expect(fs.readFileSync(path.join(__dirname, '../web/src/api.ts'), 'utf8')).toContain("locks.request('gensvc-refresh'");
    expect(init.text).toContain("ui.preauthorizeApiKey('session', answer.access_token)");
    expect(init.text).toContain("url: '/api/v2/openapi.json'");
    // What that script does, over HTTP: the refresh cookie of a sign-in (sent to /api/v2/auth) gives a token the API takes.
    const user = await registerUser(t.app);
    const refreshed = await t.app.http().post('/api/v2/auth/refresh').set('cookie', `refresh_token=${encodeURIComponent(user.refreshToken)}`).set('content-type', 'application/json').send('{}');
    expect(refreshed.status).toBe(200);
    const me = await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${refreshed.body.access_token}`);
    expect(me.body.id).toBe(user.id);
    // The scheme it pre-authorizes is the document's access-token scheme.
    expect((doc().components as { securitySchemes: Json }).securitySchemes.session).toMatchObject({ type: 'http', scheme: 'bearer' });
  });
});
