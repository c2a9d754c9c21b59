/**
 * The error catalogue and its mapping (decisions.md "Errors", spec 7): every code's status and
 * body, plumbing errors (unknown route, wrong method), bugs (500 with an id, no stack) and stores
 * that are down (503). Then bad bodies of every type on the auth endpoints: 4xx, never 5xx.
 */
import http from 'node:http';
import zlib from 'node:zlib';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import supertest from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import type { AppCustom, AppState } from '../api/context';
import { errorMiddleware, toAppError } from '../api/middleware/errors';
import { AppError, ErrorCode, errorCatalogue, isAppError } from '../shared/errors';
import { createLogger } from '../shared/log';
import type { TestApp } from './helpers/app';
import { startTestApp, useTestApp } from './helpers/app';
import { FakeOidcProvider, startFakeOidc } from './helpers/fake-oidc';

type Thrower = () => unknown;

/** A tiny Koa app: the error middleware, then a handler that throws whatever `next` is set to. */
function useThrowingApp(): { throwing(thrower: Thrower): TestAgent } {
  const holder: { server?: http.Server; thrower?: Thrower } = {};
  beforeAll(async () => {
    const app = new Koa<AppState, AppCustom>();
    app.silent = true;
    app.use(errorMiddleware(createLogger('silent')));
    app.use(async (ctx) => {
      ctx.set('X-Handler', 'reached');
      const value = holder.thrower?.();
      ctx.body = { ok: true, value: value === undefined ? null : String(value) };
    });
    const server = http.createServer(app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    holder.server = server;
  });
  afterAll(async () => {
    const server = holder.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return {
    throwing(thrower: Thrower): TestAgent {
      if (!holder.server) throw new Error('throwing app not started');
      holder.thrower = thrower;
      return supertest(`http://127.0.0.1:${(holder.server.address() as AddressInfo).port}`);
    },
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const codes = Object.keys(errorCatalogue) as ErrorCode[];

describe('the error catalogue through errorMiddleware', () => {
  const tiny = useThrowingApp();

  it('uses snake_case codes and the texts the spec fixes', () => {
    for (const code of codes) expect(code).toMatch(/^[a-z]+(_[a-z]+)*$/);
    expect(errorCatalogue.not_authenticated).toEqual({ status: 401, detail: 'Not authenticated' });
    expect(errorCatalogue.invalid_token).toEqual({ status: 401, detail: 'Invalid or expired token' });
    expect(errorCatalogue.insufficient_plan).toEqual({ status: 403, detail: 'Insufficient plan' });
    expect(errorCatalogue.rate_limited).toEqual({ status: 429, detail: 'Rate limit exceeded' });
    expect(errorCatalogue.insufficient_tokens).toEqual({ status: 402, detail: 'Insufficient tokens' });
    expect(errorCatalogue.service_unavailable).toEqual({ status: 503, detail: 'Service unavailable' });
    expect(errorCatalogue.malformed_request.status).toBe(400);
    expect(errorCatalogue.not_found.status).toBe(404);
    expect(errorCatalogue.email_taken.status).toBe(409);
    expect(errorCatalogue.payload_too_large.status).toBe(413);
    expect(errorCatalogue.unsupported_media_type.status).toBe(415);
    expect(errorCatalogue.validation_failed.status).toBe(422);
  });

  it.each(codes)('answers AppError(%s) with its status and {detail, code}', async (code) => {
    const { status, detail } = errorCatalogue[code];
    const res = await tiny.throwing(() => {
      throw new AppError(code);
    }).get('/anything');
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['x-request-id']).toMatch(UUID);
    if (status === 500) {
      expect(res.body).toEqual({ detail, code, error_id: res.headers['x-request-id'] });
    } else {
      expect(res.body).toEqual({ detail, code });
    }
  });

  it('builds AppError from the catalogue', () => {
    for (const code of codes) {
      const error = new AppError(code);
      expect(error).toBeInstanceOf(Error);
      expect(isAppError(error)).toBe(true);
      expect(error).toMatchObject({ code, status: errorCatalogue[code].status, detail: errorCatalogue[code].detail, extra: {}, headers: {} });
      expect(error.message).toBe(errorCatalogue[code].detail);
    }
    expect(isAppError(new Error('x'))).toBe(false);
  });

  it('puts field errors in the body of a 422', async () => {
    const res = await tiny.throwing(() => {
      throw new AppError('validation_failed', { errors: [{ field: 'email', message: 'must be a valid email address' }, { field: 'params.seed', message: 'too big' }] });
    }).post('/x');
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: 'Validation failed',
      code: 'validation_failed',
      errors: [
        { field: 'email', message: 'must be a valid email address' },
        { field: 'params.seed', message: 'too big' },
      ],
    });
    const single = await tiny.throwing(() => {
      throw AppError.validation('prompt', 'is required');
    }).post('/x');
    expect(single.body).toEqual({ detail: 'Validation failed', code: 'validation_failed', errors: [{ field: 'prompt', message: 'is required' }] });
  });

  it('puts retry_after in a 429 body and its Retry-After header', async () => {
    const res = await tiny.throwing(() => {
      throw new AppError('rate_limited', { extra: { retry_after: 42 }, headers: { 'Retry-After': '42' } });
    }).get('/x');
    expect(res.status).toBe(429);
    expect(res.body).toEqual({ detail: 'Rate limit exceeded', code: 'rate_limited', retry_after: 42 });
    expect(res.headers['retry-after']).toBe('42');
  });

  it('puts price and available in a 402 body', async () => {
    const res = await tiny.throwing(() => {
      throw new AppError('insufficient_tokens', { extra: { price: 30, available: 12 } });
    }).post('/x');
    expect(res.status).toBe(402);
    expect(res.body).toEqual({ detail: 'Insufficient tokens', code: 'insufficient_tokens', price: 30, available: 12 });
  });

  it('lets a specific detail override the catalogue text, keeping the code and status', async () => {
    const res = await tiny.throwing(() => {
      throw new AppError('feature_disabled', { detail: 'Messenger login is not configured on this server' });
    }).get('/x');
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ detail: 'Messenger login is not configured on this server', code: 'feature_disabled' });
  });

  it('answers a plain Error with 500, an error_id and nothing of the error itself', async () => {
    const res = await tiny.throwing(() => {
      throw new Error('secret internals at /srv/app/shared/thing.ts:12');
    }).get('/x');
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ detail: 'Internal server error', code: 'internal_error', error_id: res.headers['x-request-id'] });
    expect(res.body.error_id).toMatch(UUID);
    expect(res.text).not.toMatch(/secret internals|stack|\.ts:/);
  });

  it('gives each failed request its own error_id', async () => {
    const boom = () => {
      throw new TypeError('boom');
    };
    const a = await tiny.throwing(boom).get('/x');
    const b = await tiny.throwing(boom).get('/x');
    expect(a.body.error_id).not.toBe(b.body.error_id);
  });

  it.each(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'PROTOCOL_CONNECTION_LOST', 'SQLITE_BUSY'])(
    'answers a store error with code %s as 503 Service unavailable',
    async (errno) => {
      const res = await tiny.throwing(() => {
        throw Object.assign(new Error(`connect ${errno} 127.0.0.1:3306`), { code: errno });
      }).get('/x');
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ detail: 'Service unavailable', code: 'service_unavailable' });
    },
  );

  it('answers a closed Redis connection as 503', async () => {
    const res = await tiny.throwing(() => {
      throw new Error('Connection is closed.');
    }).get('/x');
    expect(res.status).toBe(503);
    expect(res.body.code).toBe('service_unavailable');
  });

  it('maps the HTTP plumbing errors by status', () => {
    const plumbing = (status: number, expose = status < 500) => Object.assign(new Error('plumbing'), { status, expose });
    expect(toAppError(plumbing(400))?.code).toBe('malformed_request');
    expect(toAppError(plumbing(404))?.code).toBe('not_found');
    expect(toAppError(plumbing(405))?.code).toBe('method_not_allowed');
    expect(toAppError(plumbing(413))?.code).toBe('payload_too_large');
    expect(toAppError(plumbing(415))?.code).toBe('unsupported_media_type');
    expect(toAppError(Object.assign(new Error('x'), { statusCode: 413 }))?.code).toBe('payload_too_large');
    // A status that is not meant for the client is a bug, not a plumbing error.
    expect(toAppError(plumbing(400, false))).toBeNull();
    expect(toAppError(new Error('x'))).toBeNull();
  });

  it('answers a handler that sets nothing with 404', async () => {
    const res = await tiny.throwing(() => {
      throw Object.assign(new Error('Not Found'), { status: 404, expose: true });
    }).get('/x');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: 'Not found', code: 'not_found' });
  });

  it('leaves successful responses alone', async () => {
    const res = await tiny.throwing(() => 'fine').get('/x');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, value: 'fine' });
    expect(res.headers['x-request-id']).toMatch(UUID);
  });
});

describe('errors of the real app', () => {
  const t = useTestApp({ CATALOG_PATH: `${__dirname}/fixtures/catalog.json` });

  it.each(['/api/v2/nope', '/nope', '/api/v2/auth/nope', '/api/v2/user/me/extra'])('answers GET %s with 404 {detail, code}', async (path) => {
    const res = await t.app.http().get(path);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: 'Not found', code: 'not_found' });
  });

  it('answers a POST to an unknown path with 404', async () => {
    const res = await t.app.http().post('/api/v2/nope').send({ a: 1 });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: 'Not found', code: 'not_found' });
  });

  it.each([
    ['put', '/api/v2/auth/login'],
    ['get', '/api/v2/auth/login'],
    ['delete', '/api/v2/auth/register'],
    ['post', '/health'],
    ['patch', '/api/v2/auth/forgot-password'],
  ] as const)('answers %s %s with 405 and an Allow header', async (method, path) => {
    const res = await t.app.http()[method](path);
    expect(res.status).toBe(405);
    expect(res.body).toEqual({ detail: 'Method not allowed', code: 'method_not_allowed' });
    expect(res.headers.allow).toBeDefined();
  });

  it('lists POST in the Allow header of a POST-only route', async () => {
    const res = await t.app.http().put('/api/v2/auth/login').send({});
    expect(res.headers.allow?.split(/,\s*/)).toContain('POST');
  });

  it('answers OPTIONS with the Allow header', async () => {
    const res = await t.app.http().options('/api/v2/auth/login');
    expect(res.status).toBe(200);
    expect(res.headers.allow?.split(/,\s*/)).toContain('POST');
  });

  it.each(['PROPFIND', 'PURGE', 'MKCOL'])('answers a method no route implements (%s) with 405, not a 5xx', async (method) => {
    const address = t.app.server.address() as AddressInfo;
    const res = await new Promise<{ status: number; allow: string | undefined; body: string }>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: address.port, method, path: '/api/v2/auth/login' }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (c: Buffer) => chunks.push(c));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, allow: response.headers.allow, body: Buffer.concat(chunks).toString('utf8') }),
        );
      });
      req.on('error', reject);
      req.end();
    });
    expect(res.status).toBe(405);
    expect(JSON.parse(res.body)).toEqual({ detail: 'Method not allowed', code: 'method_not_allowed' });
    expect(res.allow).toBeDefined();
  });

  it('answers 401 without a token', async () => {
    const res = await t.app.http().get('/api/v2/user/me');
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: 'Not authenticated', code: 'not_authenticated' });
    const bad = await t.app.http().get('/api/v2/user/me').set('authorization', 'Bearer not-a-token');
    expect(bad.status).toBe(401);
    expect(bad.body).toEqual({ detail: 'Invalid or expired token', code: 'invalid_token' });
  });
});

/** Values of the wrong type for any field. */
const BIG = 'x'.repeat(100 * 1024);
function deep(depth: number): unknown {
  let value: unknown = 'leaf';
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? { a: value } : [value];
  return value;
}
const wrongTypes: Array<[string, unknown]> = [
  ['an array', ['a', 1]],
  ['an empty array', []],
  ['a number', 12345],
  ['a negative float', -1.5],
  ['a huge number', 1e308],
  ['a boolean', true],
  ['null', null],
  ['an object', { $gt: '' }],
  ['a nested object', deep(200)],
  ['a 100 KB string', BIG],
  ['a 100 KB string of an e-mail shape', `${BIG}@example.test`],
];
/** Strings that may be valid for some fields: never a 5xx. */
const oddStrings: Array<[string, unknown]> = [
  ['an empty string', ''],
  ['a blank string', '   '],
  ['control characters', 'a\u0000b\u0007\uffff'],
  ['lone surrogates', '\ud800x\udfff'],
  ['SQL', "' OR 1=1; --"],
];

/** Raw bodies that are not objects. */
const wrongBodies: Array<[string, string]> = [
  ['an array', '[1, 2, 3]'],
  ['an empty array', '[]'],
  ['a number', '42'],
  ['a string', '"hello"'],
  ['null', 'null'],
  ['true', 'true'],
  ['an empty object', '{}'],
  ['a 100 KB string', JSON.stringify(BIG)],
  ['an array of objects', JSON.stringify([{ email: 'a@b.io', password: 'password1' }])],
  ['a deeply nested value', JSON.stringify(deep(2000))],
  ['truncated JSON', '{"email": "a@b.io", "password": '],
  ['JSON with a trailing comma', '{"email": "a@b.io",}'],
  ['a body of NUL bytes', '\u0000\u0000\u0000'],
];

/** Valid-looking fields of each endpoint, so that one wrong field at a time is what gets checked. */
const endpoints: Record<string, Record<string, unknown>> = {
  register: { email: 'fuzz-register@example.test', password: 'password123', name: 'Fuzz' },
  login: { email: 'fuzz-login@example.test', password: 'password123' },
  refresh: { refresh_token: 'a'.repeat(43) },
  'forgot-password': { email: 'fuzz-forgot@example.test' },
  'reset-password': { token: 'b'.repeat(43), password: 'password123' },
  messenger: { id: 12345, first_name: 'Fuzz', last_name: 'Er', username: 'fuzz', photo_url: 'https://t.me/p.jpg', auth_date: 1_790_000_000, hash: 'c'.repeat(64), extra: 'x' },
  'identity-provider': { id_token: 'eyJhbGciOiJSUzI1NiJ9.e30.sig', code: 'code-1', redirect_uri: 'https://app.example.test/cb' },
};

describe('bad bodies on the auth endpoints', () => {
  const holder: { app?: TestApp; oidc?: FakeOidcProvider } = {};
  beforeAll(async () => {
    holder.oidc = await startFakeOidc();
    holder.app = await startTestApp({
      CATALOG_PATH: `${__dirname}/fixtures/catalog.json`,
      TELEGRAM_BOT_TOKEN: '7000000001:AAH-fuzz-bot-token_for-gensvc',
      OIDC_ISSUER: holder.oidc.issuer,
      OIDC_CLIENT_ID: holder.oidc.clientId,
      OIDC_CLIENT_SECRET: holder.oidc.clientSecret,
    });
  });
  afterAll(async () => {
    await holder.app?.close();
    await holder.oidc?.close();
  });
  function app(): TestApp {
    if (!holder.app) throw new Error('app not started');
    return holder.app;
  }

  async function expectClientError(endpoint: string, raw: string, label: string, options: { mayPass?: boolean } = {}): Promise<void> {
    const res = await app().http().post(`/api/v2/auth/${endpoint}`).set('content-type', 'application/json').send(raw);
    const acceptable = res.status < 500 && (options.mayPass === true || res.status >= 400);
    if (!acceptable) throw new Error(`${endpoint} with ${label}: ${res.status} ${res.text.slice(0, 300)}`);
    if (res.status >= 400) {
      expect(typeof res.body.code).toBe('string');
      expect(typeof res.body.detail).toBe('string');
    }
  }

  describe.each(Object.keys(endpoints))('POST /api/v2/auth/%s', (endpoint) => {
    it.each(wrongBodies)('answers a body that is %s with 4xx', async (label, raw) => {
      await expectClientError(endpoint, raw, label);
    });

    it('answers every field of a wrong type with 4xx', async () => {
      const valid = endpoints[endpoint] ?? {};
      for (const field of Object.keys(valid)) {
        for (const [label, value] of wrongTypes) {
          await expectClientError(endpoint, JSON.stringify({ ...valid, [field]: value }), `${field} = ${label}`);
        }
        for (const [label, value] of oddStrings) {
          await expectClientError(endpoint, JSON.stringify({ ...valid, [field]: value }), `${field} = ${label}`, { mayPass: true });
        }
        const { [field]: _omitted, ...without } = valid;
        await expectClientError(endpoint, JSON.stringify({ ...without, [field]: undefined, [`${field}\u0000`]: 'x' }), `${field} missing`);
      }
    });

    it('answers a form body with 415 and a truncated one with 400', async () => {
      const form = await app().http().post(`/api/v2/auth/${endpoint}`).type('form').send({ email: 'a@b.io' });
      expect(form.status).toBe(415);
      expect(form.body.code).toBe('unsupported_media_type');
      const truncated = await app().http().post(`/api/v2/auth/${endpoint}`).set('content-type', 'application/json').send('{"a":');
      expect(truncated.status).toBe(400);
      expect(truncated.body).toEqual({ detail: 'Malformed request body', code: 'malformed_request' });
    });
  });

  it('answers a JSON body in an unknown charset with 4xx', async () => {
    const res = await app()
      .http()
      .post('/api/v2/auth/login')
      .set('content-type', 'application/json; charset=x-klingon')
      .send('{"email":"a@b.io","password":"password1"}');
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
  });

  it.each(['gzip', 'deflate', 'br'])('answers a body that is not in its Content-Encoding %s with 400', async (encoding) => {
    const res = await app()
      .http()
      .post('/api/v2/auth/login')
      .set('content-type', 'application/json')
      .set('content-encoding', encoding)
      .send('{"email":"a@b.io","password":"password1"}');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: 'Malformed request body', code: 'malformed_request' });
  });

  it('answers an unknown Content-Encoding with 415', async () => {
    const res = await app()
      .http()
      .post('/api/v2/auth/login')
      .set('content-type', 'application/json')
      .set('content-encoding', 'x-squash')
      .send('{"email":"a@b.io","password":"password1"}');
    expect(res.status).toBe(415);
  });

  it('reads a correctly gzipped body', async () => {
    const address = app().server.address() as AddressInfo;
    const res = await fetch(`http://127.0.0.1:${address.port}/api/v2/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: zlib.gzipSync(JSON.stringify({ email: 'nobody@example.test', password: 'password1' })),
    });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { code: string }).code).toBe('invalid_credentials');
  });
});
