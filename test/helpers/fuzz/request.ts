/**
 * Turns a generated case into an HTTP request against the fuzz world, sends it, and checks what
 * every answer must satisfy:
 * - never a 5xx (no store is down in these tests);
 * - every 4xx is the catalogue's JSON `{detail, code}` with the code's own status;
 * - a refused request (>= 400) leaves every balance bucket of every user, the ledger and the
 *   generations exactly as they were;
 * - another user's id never gets a 2xx.
 */
import crypto from 'node:crypto';
import { errorDialectOf } from '../../../api/presenters/errors';
import { bombPng } from '../bomb-png';
import fc from 'fast-check';
import type { Response } from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { signWebhook } from '../../../shared/providers/replicate/webhook';
import { errorCatalogue } from '../../../shared/errors';
import type { RouteEntry } from '../route-table';
import { authArb, AuthChoice, BodyChoice, deepJson, IdForm, incidentalHeaders, METHODS, methodArb, noBody, ParamChoice, queryArb, RequestCase, SampleName } from './arbitraries';
import type { RouteDriver } from './drivers';
import { PNG_8, WAV } from './media-sink';
import type { Account, FuzzWorld } from './world';
import { FUZZ_REPLICATE_SECRET, FUZZ_STRIPE_WEBHOOK_SECRET } from './world';

/** Requests for one route; `routedMethods` are the methods any route of its path answers. */
export function caseArb(driver: RouteDriver, route: RouteEntry, routedMethods: string[]): fc.Arbitrary<RequestCase> {
  const routed = new Set(routedMethods.flatMap((m) => (m === 'GET' ? ['GET', 'HEAD'] : [m])));
  // HEAD runs a GET route's own handler: as harmless, and as much the route's, as GET.
  const alternatives = METHODS.filter((m) => !routed.has(m) || (route.method === 'GET' && m === 'HEAD'));
  return fc.record({
    method: methodArb(alternatives),
    auth: authArb(driver.callers, { anonymousWeight: driver.anonymousWeight }),
    params: driver.params ?? fc.constant({}),
    query: queryArb(driver.query ?? {}),
    body: driver.body ?? noBody,
    headers: fc.tuple(driver.headers ?? fc.constant({}), incidentalHeaders).map(([a, b]) => ({ ...b, ...a })),
  });
}

// Samples for uploads -----------------------------------------------------------------------------

export const SAMPLES: Record<SampleName, Buffer> = {
  png: PNG_8,
  wav: WAV,
  pngTruncated: PNG_8.subarray(0, PNG_8.length - 20),
  pngHeaderOnly: PNG_8.subarray(0, 8),
  jpegHeaderOnly: Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46]),
  gif: Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;', 'latin1'),
  text: Buffer.from('just some text, not media'),
  empty: Buffer.alloc(0),
  bombPng: bombPng(),
};

// Building ----------------------------------------------------------------------------------------

export interface BuiltRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: BodyChoice;
  /** The exact bytes sent, for the report (and the provider webhook's signature). */
  payload: Buffer | null;
  /** A path param (or a body placeholder) named another user's resource, and the request went to that route's handler. */
  othersId: boolean;
}

function mangle(token: string, how: Extract<AuthChoice, { kind: 'mangled' }>['how']): string {
  switch (how) {
    case 'suffix':
      return `Bearer ${token}x`;
    case 'truncate':
      return `Bearer ${token.slice(0, -3)}`;
    case 'flip': {
      const i = Math.floor(token.length / 2);
      return `Bearer ${token.slice(0, i)}${token[i] === 'A' ? 'B' : 'A'}${token.slice(i + 1)}`;
    }
    case 'twice':
      return `Bearer ${token} ${token}`;
    case 'noScheme':
      return token;
    case 'basic':
      return `Basic ${Buffer.from(`${token}:`).toString('base64')}`;
    case 'tokenScheme':
      return `Token ${token}`;
    case 'quoted':
      return `Bearer "${token}"`;
  }
}

/** encodeURIComponent, with lone surrogates (which it cannot encode) as U+FFFD. */
function encodeComponent(value: string): string {
  return encodeURIComponent(value.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd'));
}

function pick<T>(values: T[], index: number): T | undefined {
  return values.length === 0 ? undefined : values[index % values.length];
}

const ID_PREFIX: Record<IdForm, string> = { plain: '', gen: 'gen_', resp: 'resp_' };

export class RequestBuilder {
  /** A body placeholder named another user's resource (`$RESPONSE_OTHER`) while building this request. */
  private bodyNamedOthers = false;

  constructor(private readonly world: FuzzWorld) {}

  async build(route: RouteEntry, driver: RouteDriver, c: RequestCase): Promise<BuiltRequest> {
    const world = this.world;
    world.disposable = null;
    this.bodyNamedOthers = false;
    const headers: Record<string, string> = {};
    let caller: Account | null = null;
    const auth = c.auth;
    if (auth.kind === 'caller') {
      const credential = await world.credentialOf(auth.caller);
      caller = credential.account;
      headers.authorization = `${auth.scheme} ${credential.token}${auth.trailing}`;
    } else if (auth.kind === 'mangled') {
      const credential = await world.credentialOf(auth.caller);
      caller = credential.account;
      headers.authorization = mangle(credential.token, auth.how);
    } else if (auth.kind === 'special') {
      headers.authorization = `Bearer ${world.special.get(auth.which) ?? ''}`;
    } else if (auth.kind === 'raw') {
      headers.authorization = auth.value;
    }
    // Whose ids are "own", and whose password or tokens the placeholders name.
    const subject = caller ?? (driver.disposable ? await world.freshDisposable() : world.account('elite'));

    let othersId = false;
    const resolveParam = (choice: ParamChoice): string => {
      if (choice.kind === 'literal') return choice.raw ? choice.value : encodeComponent(choice.value);
      const ids = choice.kind === 'own' ? subject.owned[choice.idKind] : world.othersIds(subject, choice.idKind);
      const id = pick(ids, choice.index);
      if (id === undefined) return '1';
      if (choice.kind === 'other') othersId = true;
      return `${ID_PREFIX[choice.form]}${id}`;
    };
    const path = route.path.replace(/:([A-Za-z0-9_]+)/g, (_, name: string) => {
      const choice = c.params[name];
      return choice ? resolveParam(choice) : '1';
    });
    const query = c.query.map(([k, v, raw]) => (raw ? `${k}=${v}` : `${encodeComponent(k)}=${encodeComponent(v)}`)).join('&');
    const url = query ? `${path}?${query}` : path;

    const body = await this.resolveBody(c.body, subject);
    const payload = this.payloadOf(body);
    for (const [name, value] of Object.entries(c.headers)) headers[name] = this.resolveHeader(value, subject);
    const method = c.method ?? route.method;
    const reachesHandler = method === route.method || (route.method === 'GET' && method === 'HEAD');
    const built: BuiltRequest = { method, url, headers, body, payload, othersId: (othersId || this.bodyNamedOthers) && reachesHandler };
    this.sign(built);
    this.signStripe(built);
    return built;
  }

  private async placeholder(value: string, subject: Account): Promise<unknown> {
    const world = this.world;
    const publicBase = world.app.container.config.publicBaseUrl;
    switch (value) {
      case '$PASSWORD':
        return subject.password;
      case '$EMAIL':
        return subject.email;
      case '$OTHER_EMAIL':
        return world.account('other').email;
      case '$REFRESH':
        return subject.refreshToken;
      case '$OTHER_REFRESH_SHAPED':
        return `${subject.refreshToken.slice(0, -2)}xx`;
      case '$RESET_TOKEN':
        return world.resetToken(subject);
      case '$LINK_CODE':
        return world.linkCode();
      case '$REDEEM_CODE':
        return world.redemptionCode();
      case '$ID_TOKEN':
        return world.idToken();
      case '$FOREIGN_ID_TOKEN':
        return world.idToken({ foreignKey: true });
      case '$OWN_ACCESS_TOKEN':
        return subject.accessToken;
      case '$NOW':
        return world.nowSeconds;
      case '$ELITE_USER_ID':
        return String(world.account('elite').userId);
      case '$STRIPE_ID':
        return `fz_${crypto.randomBytes(8).toString('hex')}`;
      case '$NOW_STRING':
        return String(world.nowSeconds);
      case '$FILE_OWN':
        return `${publicBase}/files/${subject.owned.resultKeys[0] ?? 'results/none'}`;
      case '$RESPONSE_OWN':
        return `resp_${subject.owned.response[0] ?? 2_147_000_001}`;
      case '$RESPONSE_OWN_CALL':
        // The world's second response of an account called a tool (world.ts, callingResponse).
        return `resp_${subject.owned.response[1] ?? 2_147_000_001}`;
      case '$RESPONSE_OTHER': {
        const theirs = world.othersIds(subject, 'response')[0];
        if (theirs !== undefined) this.bodyNamedOthers = true;
        return `resp_${theirs ?? 2_147_000_001}`;
      }
      case '$FILE_OTHER':
        return `${publicBase}/files/${world.account('other').owned.resultKeys[0] ?? 'results/none'}`;
    }
    if (value.startsWith('$SINK/')) return `${world.sink.baseUrl}${value.slice('$SINK'.length)}`;
    if (value.startsWith('$PUBLIC/')) return `${publicBase}${value.slice('$PUBLIC'.length)}`;
    return value;
  }

  private async resolveValue(value: unknown, subject: Account): Promise<unknown> {
    if (typeof value === 'string') return value.startsWith('$') ? this.placeholder(value, subject) : value;
    if (Array.isArray(value)) return Promise.all(value.map((v) => this.resolveValue(v, subject)));
    if (value === null || typeof value !== 'object') return value;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) Object.defineProperty(out, k, { value: await this.resolveValue(v, subject), enumerable: true, writable: true, configurable: true });
    if (out.hash === '$WIDGET_HASH') {
      const fields = Object.fromEntries(Object.entries(out).filter(([k]) => k !== 'hash'));
      const primitive = Object.values(fields).every((v) => ['string', 'number', 'boolean'].includes(typeof v));
      out.hash = primitive ? this.world.widgetHash(fields as Record<string, string | number | boolean>) : 'f'.repeat(64);
    }
    if (out.code === '$OIDC_CODE') out.code = this.world.oidc.issueCode(String(out.redirect_uri), await this.world.idToken());
    return out;
  }

  private async resolveBody(body: BodyChoice, subject: Account): Promise<BodyChoice> {
    if (body.kind === 'json') return { ...body, value: await this.resolveValue(body.value, subject) };
    if (body.kind === 'multipart') return { ...body, fields: await Promise.all(body.fields.map(async ([k, v]): Promise<[string, string]> => [k, String(await this.resolveValue(v, subject))])) };
    return body;
  }

  private resolveHeader(value: string, subject: Account): string {
    if (!value.includes('$')) return value;
    const nowSeconds = Math.floor(Date.now() / 1000);
    switch (value) {
      case '$NOW':
        return String(nowSeconds);
      case '$STALE':
        return String(nowSeconds - 600);
      case '$FUTURE':
        return String(nowSeconds + 600);
    }
    if (value.startsWith('$SIGN')) return value; // signed once the other webhook headers are known
    return value.replace(/\$REFRESH/g, subject.refreshToken);
  }

  private payloadOf(body: BodyChoice): Buffer | null {
    switch (body.kind) {
      case 'none':
      case 'multipart':
        return null;
      case 'json':
        return Buffer.from((JSON.stringify(body.value) ?? 'null').replace(/"\$DEEP:(\d+):(array|object)"/g, (_, depth: string, shape: 'array' | 'object') => deepJson(Number(depth), shape)));
      case 'text':
        return Buffer.from(body.payload);
      case 'bytes':
        return Buffer.from(body.payload);
      case 'deep':
        return Buffer.from(deepJson(body.depth, body.shape));
      case 'huge':
        return Buffer.from(`{"prompt":"${'x'.repeat(1_100_000)}"}`);
    }
  }

  /** Signs a provider webhook over the bytes actually sent, as its `webhook-signature` placeholder says. */
  private sign(request: BuiltRequest): void {
    const signature = request.headers['webhook-signature'];
    if (!signature?.startsWith('$SIGN')) return;
    const id = request.headers['webhook-id'] ?? '';
    const timestamp = request.headers['webhook-timestamp'] ?? '';
    const body = request.payload ?? Buffer.alloc(0);
    const good = signWebhook(FUZZ_REPLICATE_SECRET, id, timestamp, body);
    if (signature === '$SIGN') request.headers['webhook-signature'] = good;
    else if (signature === '$SIGN_AMONG_OTHERS') request.headers['webhook-signature'] = `v1,AAAA v2,${good.slice(3)} ${good}`;
    else request.headers['webhook-signature'] = signWebhook(`whsec_${Buffer.from('another secret entirely').toString('base64')}`, id, timestamp, body);
  }

  /** Stripe's signature of the bytes actually sent, at the app clock's time, as the `stripe-signature` placeholder says. */
  private signStripe(request: BuiltRequest): void {
    const placeholder = request.headers['stripe-signature'];
    if (!placeholder?.startsWith('$STRIPE_SIGN')) return;
    const payload = (request.payload ?? Buffer.alloc(0)).toString('utf8');
    const now = this.world.nowSeconds;
    const { stripe } = this.world;
    if (placeholder === '$STRIPE_SIGN') request.headers['stripe-signature'] = stripe.sign(payload, FUZZ_STRIPE_WEBHOOK_SECRET, now);
    else if (placeholder === '$STRIPE_SIGN_STALE') request.headers['stripe-signature'] = stripe.sign(payload, FUZZ_STRIPE_WEBHOOK_SECRET, now - 3600);
    else request.headers['stripe-signature'] = stripe.sign(payload, 'whsec_anothersecretentirely000000', now);
  }
}

// Sending -----------------------------------------------------------------------------------------

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete' | 'options' | 'head';

export async function send(agent: TestAgent, request: BuiltRequest): Promise<Response> {
  const method = request.method.toLowerCase() as Method;
  let req = agent[method](request.url).timeout({ response: 20_000, deadline: 40_000 });
  for (const [name, value] of Object.entries(request.headers)) req = req.set(name, value);
  const body = request.body;
  if (body.kind === 'multipart') {
    for (const [name, value] of body.fields) req = req.field(name, value);
    for (const file of body.files) {
      const bytes = typeof file.bytes === 'string' ? SAMPLES[file.bytes] : Buffer.from(file.bytes);
      req = req.attach(file.field, bytes, { filename: file.filename, contentType: file.contentType ?? 'application/octet-stream' });
    }
    return req;
  }
  if (request.payload === null) return req;
  const contentType = body.kind === 'json' ? (body.contentType ?? 'application/json') : body.kind === 'text' || body.kind === 'bytes' ? body.contentType : 'application/json';
  if (contentType !== null) req = req.set('content-type', contentType);
  if ((body.kind === 'text' || body.kind === 'bytes') && body.contentEncoding) req = req.set('content-encoding', body.contentEncoding);
  // Sent as these bytes: superagent would otherwise JSON-encode a Buffer under a JSON content type.
  return req.serialize((data: unknown) => data as string).send(request.payload);
}

// Checking ----------------------------------------------------------------------------------------

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

interface MoneyState {
  users: Array<[number, number, number, number]>;
  ledger: [number, number];
  generations: [number, number];
}

/** What differs between two `FuzzWorld.moneyState()` snapshots, in words. */
function moneyDiff(before: string, after: string): string {
  const a = JSON.parse(before) as MoneyState;
  const b = JSON.parse(after) as MoneyState;
  const changes: string[] = [];
  const users = new Map(a.users.map((u) => [u[0], u]));
  for (const u of b.users) {
    const was = users.get(u[0]);
    if (!was) changes.push(`user ${u[0]} appeared`);
    else if (JSON.stringify(was) !== JSON.stringify(u)) changes.push(`user ${u[0]} subscription/bonus/held ${was.slice(1).join('/')} → ${u.slice(1).join('/')}`);
    users.delete(u[0]);
  }
  for (const id of users.keys()) changes.push(`user ${id} disappeared`);
  if (JSON.stringify(a.ledger) !== JSON.stringify(b.ledger)) changes.push(`ledger rows (count, last id) ${a.ledger.join(', ')} → ${b.ledger.join(', ')}`);
  if (JSON.stringify(a.generations) !== JSON.stringify(b.generations)) changes.push(`generations (count, last id) ${a.generations.join(', ')} → ${b.generations.join(', ')}`);
  return changes.join('; ');
}

/** What is wrong with an answer, as sentences (empty when nothing is). */
export function answerViolations(request: BuiltRequest, res: Response, moneyBefore: string, moneyAfter: string): string[] {
  const problems: string[] = [];
  if (res.status >= 500) problems.push(`answered ${res.status} (a 5xx for a client's input is a bug)`);
  if (res.status >= 400 && request.method !== 'HEAD') {
    const body: unknown = res.body;
    if (!/^application\/json/.test(String(res.headers['content-type'] ?? ''))) problems.push(`a ${res.status} that is not JSON (content-type ${String(res.headers['content-type'])})`);
    const dialect = errorDialectOf(new URL(request.url, 'http://x').pathname, request.headers['anthropic-version']);
    if (dialect === 'openai') {
      const error = isRecord(body) && isRecord(body.error) ? body.error : null;
      if (!error || typeof error.message !== 'string' || error.message === '' || typeof error.type !== 'string' || !('param' in error) || typeof error.code !== 'string') {
        problems.push(`a ${res.status} without OpenAI's {error: {message, type, param, code}}`);
      }
    } else if (dialect === 'anthropic') {
      const error = isRecord(body) && body.type === 'error' && isRecord(body.error) ? body.error : null;
      if (!error || typeof error.message !== 'string' || typeof error.type !== 'string') problems.push(`a ${res.status} without Anthropic's {type: "error", error: {type, message}}`);
    } else if (!isRecord(body) || typeof body.detail !== 'string' || body.detail === '' || typeof body.code !== 'string') {
      problems.push(`a ${res.status} without the catalogue's {detail, code}`);
    } else if (!(body.code in errorCatalogue)) {
      problems.push(`a ${res.status} with a code outside the catalogue: ${body.code}`);
    } else if (errorCatalogue[body.code as keyof typeof errorCatalogue].status !== res.status) {
      problems.push(`code ${body.code} answered with ${res.status}, the catalogue says ${errorCatalogue[body.code as keyof typeof errorCatalogue].status}`);
    }
  }
  if (res.status >= 400 && moneyBefore !== moneyAfter) problems.push(`a refused request (${res.status}) changed ${moneyDiff(moneyBefore, moneyAfter)}`);
  if (request.othersId && res.status < 300) problems.push(`another user's id got ${res.status}`);
  return problems;
}

function preview(value: string, max = 600): string {
  return value.length > max ? `${value.slice(0, max)}… (${value.length} chars)` : value;
}

export function describeExchange(request: BuiltRequest, res: Response | null): string {
  const lines = [`${request.method} ${preview(request.url, 300)}`];
  for (const [name, value] of Object.entries(request.headers)) lines.push(`${name}: ${preview(value, 200)}`);
  if (request.body.kind === 'multipart') {
    lines.push(`multipart fields ${preview(JSON.stringify(request.body.fields))}`);
    lines.push(`files ${JSON.stringify(request.body.files.map((f) => ({ field: f.field, filename: f.filename, bytes: typeof f.bytes === 'string' ? f.bytes : `${f.bytes.length} random bytes` })))}`);
  } else if (request.payload) {
    lines.push(`body (${request.body.kind}) ${preview(request.payload.toString('utf8'))}`);
  }
  if (res) lines.push(`→ ${res.status} ${preview(JSON.stringify(res.body) ?? res.text ?? '')}`);
  return lines.join('\n');
}
