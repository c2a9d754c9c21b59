/**
 * What a fuzzed request is made of, as fast-check arbitraries: who calls (valid credentials in
 * several spellings, mangled ones, tokens that must be refused, garbage), the path params (the
 * caller's ids, other users' ids, garbage, huge numbers, unicode, `..`), the query (known keys with
 * wrong types and ranges, unknown keys, duplicates, broken percent-encoding), the body (valid
 * shapes with mutated fields, wrong types, nulls, huge strings, deep nesting, arrays instead of
 * objects, text that is not JSON under a JSON content type, other content types) and headers.
 *
 * A case is data: `request.ts` turns it into an HTTP request against the world, resolving the
 * ids and the `$PLACEHOLDER` strings (tokens, codes, signatures) at that moment.
 */
import fc from 'fast-check';
import type { IdKind } from './seed';
import type { CallerName, SpecialToken } from './world';
import { SPECIAL_TOKENS } from './world';

/** How an id is spelled in a path: `123`, `gen_123`, or a Responses API id `resp_123`. */
export type IdForm = 'plain' | 'gen' | 'resp';

export type ParamChoice =
  | { kind: 'own'; idKind: IdKind; index: number; form: IdForm }
  | { kind: 'other'; idKind: IdKind; index: number; form: IdForm }
  | { kind: 'literal'; value: string; raw: boolean };

export type AuthChoice =
  | { kind: 'none' }
  | { kind: 'caller'; caller: CallerName; scheme: string; trailing: string }
  | { kind: 'mangled'; caller: CallerName; how: Mangle }
  | { kind: 'special'; which: SpecialToken }
  | { kind: 'raw'; value: string };

export type Mangle = 'suffix' | 'truncate' | 'flip' | 'twice' | 'noScheme' | 'basic' | 'tokenScheme' | 'quoted';

export interface FilePart {
  field: string;
  bytes: SampleName | Uint8Array;
  filename: string;
  contentType?: string;
}

export type SampleName = 'png' | 'wav' | 'pngTruncated' | 'pngHeaderOnly' | 'jpegHeaderOnly' | 'gif' | 'text' | 'empty' | 'bombPng';

export type BodyChoice =
  | { kind: 'none' }
  | { kind: 'json'; value: unknown; contentType?: string }
  | { kind: 'text'; payload: string; contentType: string | null; contentEncoding?: string }
  | { kind: 'bytes'; payload: Uint8Array; contentType: string | null; contentEncoding?: string }
  | { kind: 'multipart'; fields: Array<[string, string]>; files: FilePart[] }
  | { kind: 'deep'; depth: number; shape: 'array' | 'object' }
  | { kind: 'huge' };

export interface RequestCase {
  /** Another method than the route's, now and then (405, or another route). */
  method: string | null;
  auth: AuthChoice;
  params: Record<string, ParamChoice>;
  query: Array<[string, string, boolean]>;
  body: BodyChoice;
  headers: Record<string, string>;
}

// Strings -----------------------------------------------------------------------------------------

const charOf = (min: number, max: number) => fc.integer({ min, max }).map((c) => String.fromCharCode(c));

/** Visible ASCII and spaces: what a header value may hold (Node refuses control characters). */
export function printable(maxLength: number): fc.Arbitrary<string> {
  return fc.string({ unit: charOf(0x20, 0x7e), maxLength });
}

/** Header-safe, latin-1 included (0x80–0xff reach the server as such). */
export function latin1(maxLength: number): fc.Arbitrary<string> {
  return fc.string({ unit: fc.oneof(charOf(0x20, 0x7e), charOf(0x80, 0xff)), maxLength });
}

export const NASTY_STRINGS = [
  '',
  ' ',
  '\u0000',
  '\t\r\n',
  'null',
  'undefined',
  'true',
  '0',
  '-1',
  '1e3',
  'NaN',
  'Infinity',
  "' OR '1'='1",
  "'; DROP TABLE users; --",
  '" OR ""="',
  '${7*7}',
  '{{7*7}}',
  '<script>alert(1)</script>',
  '%s%s%n',
  '../../../../etc/passwd',
  '..',
  '\\\\server\\share',
  '\ud800',
  '\udfff',
  '\ud83d',
  '\u202eevil',
  '\ufeffbom',
  'ﷺ',
  'Z̷̢̛͎͈a̴l̵g̵o̸',
  '🙂'.repeat(300),
  '東京'.repeat(200),
  'a'.repeat(5_000),
  'b'.repeat(70_000),
  '__proto__',
  'constructor',
  'gen_1',
  'gen_2147483648',
  '2147483648',
  '9007199254740993',
  'data:,',
  'forbidden',
  'bad word',
];

export const stringNasty: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...NASTY_STRINGS) },
  { weight: 2, arbitrary: fc.string({ maxLength: 60 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 60 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
);

// JSON values -------------------------------------------------------------------------------------

export const NASTY_NUMBERS = [0, -0, -1, 1, 1.5, 0.1, -2.5, 255, 256, 1e308, -1e308, 5e-324, 2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 53, 2 ** 53 + 2, -(2 ** 53), 1e21];

/**
 * A value nested `depth` levels deep, written into the JSON text where this marker string stands
 * (the test's own JSON.stringify could not write it: the stack would overflow).
 */
export function deepMarker(depth: number, shape: 'array' | 'object'): string {
  return `$DEEP:${depth}:${shape}`;
}

export function deepJson(depth: number, shape: 'array' | 'object'): string {
  return shape === 'array' ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

/** A JSON value that is wrong almost everywhere. */
export const jsonNasty: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom(40, 100, 5_000, 20_000, 60_000), fc.constantFrom<'array' | 'object'>('array', 'object')).map(([d, s]) => deepMarker(d, s)) },
  { weight: 3, arbitrary: fc.constantFrom<unknown>(null, true, false, [], {}, [null], [[[]]], { '': '' }, { $gt: '' }, ['a', 1, null], { a: { b: { c: null } } }) },
  { weight: 3, arbitrary: fc.constantFrom(...NASTY_NUMBERS) },
  { weight: 2, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.double() },
  { weight: 5, arbitrary: stringNasty },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.array(stringNasty, { maxLength: 5 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 5 }) },
);

/** Keys a client should not be able to smuggle in, and random ones. */
export const extraKey: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'id', 'user_id', 'userId', 'price', 'tokens_spent', 'status', 'plan', 'is_admin', 'role', 'balance', '$where', ''),
  fc.string({ maxLength: 12 }),
);

/** An object with `key` as an own property, even `__proto__` (JSON.stringify then writes it). */
export function withOwnKey(target: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(target)) Object.defineProperty(copy, k, { value: v, enumerable: true, writable: true, configurable: true });
  Object.defineProperty(copy, key, { value, enumerable: true, writable: true, configurable: true });
  return copy;
}

function withoutKey(target: Record<string, unknown>, key: string): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(target)) if (k !== key) Object.defineProperty(copy, k, { value: v, enumerable: true, writable: true, configurable: true });
  return copy;
}

function keyAt(target: Record<string, unknown>, index: number): string | undefined {
  const keys = Object.keys(target);
  return keys.length === 0 ? undefined : keys[index % keys.length];
}

/** Valid-shaped objects, then the same with a field wrong, missing, doubled into `params`, or extra keys. */
export function mutated(valid: fc.Arbitrary<Record<string, unknown>>): fc.Arbitrary<Record<string, unknown>> {
  return fc.oneof(
    { weight: 7, arbitrary: valid },
    {
      weight: 5,
      arbitrary: fc.tuple(valid, fc.nat(), jsonNasty).map(([obj, i, v]) => {
        const key = keyAt(obj, i);
        return key === undefined ? obj : withOwnKey(withoutKey(obj, key), key, v);
      }),
    },
    {
      weight: 2,
      arbitrary: fc.tuple(valid, fc.nat(), fc.nat(), jsonNasty, jsonNasty).map(([obj, i, j, v, w]) => {
        const a = keyAt(obj, i);
        const b = keyAt(obj, j);
        let out = obj;
        if (a !== undefined) out = withOwnKey(withoutKey(out, a), a, v);
        if (b !== undefined) out = withOwnKey(withoutKey(out, b), b, w);
        return out;
      }),
    },
    {
      weight: 2,
      arbitrary: fc.tuple(valid, fc.nat()).map(([obj, i]) => {
        const key = keyAt(obj, i);
        return key === undefined ? obj : withoutKey(obj, key);
      }),
    },
    {
      weight: 2,
      arbitrary: fc.tuple(valid, fc.array(fc.tuple(extraKey, jsonNasty), { minLength: 1, maxLength: 4 })).map(([obj, extras]) =>
        extras.reduce((acc, [k, v]) => withOwnKey(acc, k, v), obj),
      ),
    },
  );
}

// Bodies ------------------------------------------------------------------------------------------

const NOT_JSON = [
  '',
  '{',
  '}',
  '{"a":',
  '{"a":1,}',
  "{'a': 1}",
  '{a: 1}',
  '[1, 2',
  'NaN',
  '{"a": NaN}',
  '{"a": Infinity}',
  '{"a": undefined}',
  '// comment\n{}',
  '\ufeff{}',
  '{}garbage',
  '{} {}',
  '"just a string"',
  'null',
  'true',
  '123',
  '1e999',
  '{"__proto__": {"is_admin": true}, "constructor": {"prototype": {"x": 1}}}',
  '{"a": "\\ud800"}',
  '{"a": "\\u0000"}',
  '{"a": "\\x41"}',
  '{"model": "fake-text", "model": 1}',
  'model=fake-text&prompt=hi',
  '<xml/>',
  '\u0000\u0001\u0002',
];

export const JSON_CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/json; charset=latin1',
  'application/json; charset=utf-16',
  'application/json; charset=no-such-charset',
  'application/vnd.api+json',
  'application/merge-patch+json',
  'application/json;;;',
];

export const OTHER_CONTENT_TYPES = [
  'text/plain',
  'text/html',
  'application/x-www-form-urlencoded',
  'multipart/form-data',
  'multipart/form-data; boundary=xyz',
  'application/octet-stream',
  'application/xml',
  'image/png',
  '*/*',
  'json',
  '',
  'application/',
  ';',
];

/** A JSON-route body: the route's own shapes (mutated) most of the time, then everything else. */
export function jsonBody(valid: fc.Arbitrary<Record<string, unknown>>): fc.Arbitrary<BodyChoice> {
  return fc.oneof(
    { weight: 20, arbitrary: mutated(valid).map((value): BodyChoice => ({ kind: 'json', value })) },
    { weight: 2, arbitrary: fc.tuple(mutated(valid), fc.constantFrom(...JSON_CONTENT_TYPES)).map(([value, contentType]): BodyChoice => ({ kind: 'json', value, contentType })) },
    { weight: 2, arbitrary: jsonNasty.map((value): BodyChoice => ({ kind: 'json', value })) },
    { weight: 1, arbitrary: fc.array(valid, { maxLength: 3 }).map((value): BodyChoice => ({ kind: 'json', value })) },
    { weight: 3, arbitrary: fc.tuple(fc.oneof(fc.constantFrom(...NOT_JSON), fc.string({ maxLength: 200 })), fc.constantFrom(...JSON_CONTENT_TYPES)).map(([payload, contentType]): BodyChoice => ({ kind: 'text', payload, contentType })) },
    { weight: 2, arbitrary: fc.tuple(valid, fc.constantFrom(...OTHER_CONTENT_TYPES, null)).map(([value, contentType]): BodyChoice => ({ kind: 'text', payload: JSON.stringify(value), contentType })) },
    { weight: 1, arbitrary: fc.tuple(fc.uint8Array({ maxLength: 300 }), fc.constantFrom('application/json', 'application/octet-stream')).map(([payload, contentType]): BodyChoice => ({ kind: 'bytes', payload, contentType })) },
    {
      weight: 1,
      arbitrary: fc.tuple(valid, fc.constantFrom('gzip', 'deflate', 'br', 'identity', 'compress', 'x-nope')).map(([value, contentEncoding]): BodyChoice => ({
        // The body is NOT encoded as it claims: the server must refuse it cleanly.
        kind: 'text',
        payload: JSON.stringify(value),
        contentType: 'application/json',
        contentEncoding,
      })),
    },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom(50, 1_000, 20_000, 200_000), fc.constantFrom<'array' | 'object'>('array', 'object')).map(([depth, shape]): BodyChoice => ({ kind: 'deep', depth, shape })) },
    { weight: 1, arbitrary: fc.constant<BodyChoice>({ kind: 'huge' }) },
    { weight: 2, arbitrary: fc.constant<BodyChoice>({ kind: 'none' }) },
  );
}

/** For a route that takes no body: mostly none, sometimes junk it must ignore or refuse cleanly. */
export const noBody: fc.Arbitrary<BodyChoice> = fc.oneof(
  { weight: 6, arbitrary: fc.constant<BodyChoice>({ kind: 'none' }) },
  { weight: 1, arbitrary: jsonNasty.map((value): BodyChoice => ({ kind: 'json', value })) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...NOT_JSON), fc.constantFrom(...JSON_CONTENT_TYPES, ...OTHER_CONTENT_TYPES)).map(([payload, contentType]): BodyChoice => ({ kind: 'text', payload, contentType })) },
);

// Path params -------------------------------------------------------------------------------------

/** Ids that name nothing, or nothing an id may look like. Values marked raw are sent unencoded. */
const GARBAGE_IDS: Array<[string, boolean]> = [
  ['0', false],
  ['-1', false],
  ['01', false],
  ['1.0', false],
  ['1e3', false],
  ['0x1f', false],
  ['+1', false],
  [' 1', false],
  ['1 ', false],
  ['gen_', false],
  ['gen_0', false],
  ['gen_01', false],
  ['GEN_1', false],
  ['gen_gen_1', false],
  ['gen_-1', false],
  ['gen_1.5', false],
  ['2147483647', false],
  ['2147483648', false],
  ['gen_2147483648', false],
  ['9007199254740993', false],
  ['99999999999999999999999999999', false],
  ['gen_99999999999', false],
  ['null', false],
  ['undefined', false],
  ['NaN', false],
  ['Infinity', false],
  ['true', false],
  ['[]', false],
  ['{}', false],
  ['２', false],
  ['١٢', false],
  ['🙂', false],
  ['\u0000', false],
  ["1' OR '1'='1", false],
  ['1;DROP TABLE users', false],
  ['..', true],
  ['.', true],
  ['%', true],
  ['%zz', true],
  ['%E0%A4%A', true],
  ['%C0%AE%C0%AE', true],
  ['%2e%2e', true],
  ['%2F', true],
  ['%252F', true],
  ['%00', true],
  ['%FF', true],
  ['a%2Fb', true],
  ['..%2F..%2Fetc%2Fpasswd', true],
];

export const garbageParam: fc.Arbitrary<ParamChoice> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...GARBAGE_IDS).map(([value, raw]): ParamChoice => ({ kind: 'literal', value, raw })) },
  { weight: 2, arbitrary: fc.bigInt({ min: 0n, max: 10n ** 30n }).map((n): ParamChoice => ({ kind: 'literal', value: String(n), raw: false })) },
  { weight: 2, arbitrary: fc.integer({ min: 1, max: 5_000 }).map((n): ParamChoice => ({ kind: 'literal', value: String(n), raw: false })) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 5_000 }).map((n): ParamChoice => ({ kind: 'literal', value: `gen_${n}`, raw: false })) },
  { weight: 2, arbitrary: stringNasty.filter((s) => s.length < 200).map((value): ParamChoice => ({ kind: 'literal', value, raw: false })) },
);

const idForm: fc.Arbitrary<IdForm> = fc.constantFrom<IdForm>('plain', 'gen');

/** An id path param: the caller's own ids, other users' ids (both forms), garbage. */
export function idParam(idKind: IdKind): fc.Arbitrary<ParamChoice> {
  const form =
    idKind === 'generation' ? idForm : idKind === 'response' ? fc.constantFrom<IdForm>('resp', 'resp', 'resp', 'plain', 'gen') : fc.constantFrom<IdForm>('plain', 'plain', 'plain', 'gen');
  return fc.oneof(
    { weight: 4, arbitrary: fc.tuple(fc.nat(), form).map(([index, f]): ParamChoice => ({ kind: 'own', idKind, index, form: f })) },
    { weight: 4, arbitrary: fc.tuple(fc.nat(), form).map(([index, f]): ParamChoice => ({ kind: 'other', idKind, index, form: f })) },
    { weight: 4, arbitrary: garbageParam },
  );
}

/** A string path param (a slug, a marketplace id): known values, or garbage. */
export function wordParam(known: string[]): fc.Arbitrary<ParamChoice> {
  return fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...known).map((value): ParamChoice => ({ kind: 'literal', value, raw: false })) },
    { weight: 1, arbitrary: fc.constantFrom(...known).map((value): ParamChoice => ({ kind: 'literal', value: value.toUpperCase(), raw: false })) },
    { weight: 4, arbitrary: garbageParam },
  );
}

// Query -------------------------------------------------------------------------------------------

const QUERY_GARBAGE = ['', '-1', '0', '1.5', '1e309', '99999999999999999999', 'abc', 'true', 'null', '[]', '__proto__', 'ü', '🙂', ' 1', '0x10', 'Infinity', 'NaN', 'a'.repeat(1_000)];
const RAW_QUERY: Array<[string, string]> = [
  ['page', '%'],
  ['limit', '%zz'],
  ['page', '%E0%A4%A'],
  ['a[b]', '1'],
  ['page[]', '1'],
  ['limit[x]', '2'],
  ['__proto__[x]', '1'],
  ['', ''],
  ['=', '='],
  ['page', '1&page=2&page=3'],
];

export const queryValue: fc.Arbitrary<string> = fc.oneof(fc.constantFrom(...QUERY_GARBAGE), fc.string({ maxLength: 30 }), fc.string({ unit: 'binary', maxLength: 20 }));

/** The query: known keys with valid and wrong values (some twice), unknown keys, broken encoding. */
export function queryArb(known: Record<string, fc.Arbitrary<string>>): fc.Arbitrary<Array<[string, string, boolean]>> {
  const keys = Object.keys(known);
  const entry: fc.Arbitrary<[string, string, boolean]> = fc.oneof(
    ...(keys.length > 0
      ? [
          { weight: 6, arbitrary: fc.constantFrom(...keys).chain((k) => (known[k] as fc.Arbitrary<string>).map((v): [string, string, boolean] => [k, v, false])) },
          { weight: 3, arbitrary: fc.tuple(fc.constantFrom(...keys), queryValue).map(([k, v]): [string, string, boolean] => [k, v, false]) },
        ]
      : []),
    { weight: 1, arbitrary: fc.tuple(fc.string({ maxLength: 10 }), queryValue).map(([k, v]): [string, string, boolean] => [k, v, false]) },
    { weight: 1, arbitrary: fc.constantFrom(...RAW_QUERY).map(([k, v]): [string, string, boolean] => [k, v, true]) },
  );
  return fc.array(entry, { maxLength: 6 });
}

// Authorization -----------------------------------------------------------------------------------

const SCHEMES = ['Bearer', 'Bearer', 'Bearer', 'bearer', 'BEARER', 'Bearer  '];

/** Who calls: one of `callers` (several spellings), mangled credentials, refused tokens, garbage, nobody. */
export function authArb(callers: readonly CallerName[], options: { anonymousWeight?: number } = {}): fc.Arbitrary<AuthChoice> {
  const caller = fc.constantFrom(...callers);
  return fc.oneof(
    { weight: 26, arbitrary: fc.tuple(caller, fc.constantFrom(...SCHEMES), fc.constantFrom('', '', '', ' ', '  ')).map(([c, scheme, trailing]): AuthChoice => ({ kind: 'caller', caller: c, scheme, trailing })) },
    { weight: options.anonymousWeight ?? 2, arbitrary: fc.constant<AuthChoice>({ kind: 'none' }) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(caller, fc.constantFrom<Mangle>('suffix', 'truncate', 'flip', 'twice', 'noScheme', 'basic', 'tokenScheme', 'quoted'))
        .map(([c, how]): AuthChoice => ({ kind: 'mangled', caller: c, how })),
    },
    { weight: 2, arbitrary: fc.constantFrom(...SPECIAL_TOKENS).map((which): AuthChoice => ({ kind: 'special', which })) },
    {
      weight: 1,
      arbitrary: fc
        .oneof(fc.constantFrom('Bearer', 'Bearer ', 'Basic', 'Basic Og==', 'Bearer gsk_', 'Bearer gsk_x', 'Bearer eyJ', 'Bearer a.b.c', 'Bearer ..', 'Bearer null', 'Negotiate abc'), printable(120), latin1(40).map((s) => `Bearer ${s}`))
        .map((value): AuthChoice => ({ kind: 'raw', value })),
    },
  );
}

/** An Idempotency-Key header: absent mostly; a few reused keys (replays, a different body: 422); garbage. */
export const idempotencyHeader: fc.Arbitrary<Record<string, string>> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({}) },
  { weight: 3, arbitrary: fc.constantFrom('fuzz-key-1', 'fuzz-key-2', 'fuzz-key-3').map((k) => ({ 'idempotency-key': k })) },
  { weight: 1, arbitrary: fc.uuid().map((k) => ({ 'idempotency-key': k })) },
  { weight: 2, arbitrary: fc.oneof(printable(200), latin1(30), fc.constantFrom(' ', 'x'.repeat(129), 'x'.repeat(128), 'a b', '\t')).map((k) => ({ 'idempotency-key': k })) },
);

/** Headers every request may carry that must not matter: forwarding headers, odd Accept values. */
export const incidentalHeaders: fc.Arbitrary<Record<string, string>> = fc.oneof(
  { weight: 8, arbitrary: fc.constant({}) },
  { weight: 1, arbitrary: printable(60).map((v) => ({ 'x-forwarded-for': v, 'x-forwarded-proto': 'https' })) },
  { weight: 1, arbitrary: fc.constantFrom('text/event-stream', '*/*', 'application/xml', 'garbage').map((v) => ({ accept: v })) },
  { weight: 1, arbitrary: fc.constantFrom('https://evil.example', 'null').map((v) => ({ origin: v })) },
);

export const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'];

/**
 * The route's own method, now and then one no route of its path answers (405, or OPTIONS). A
 * method another route of the path has is that route's business (DELETE /user/me is not a
 * misspelt PATCH), so it is left out.
 */
export function methodArb(unrouted: string[]): fc.Arbitrary<string | null> {
  if (unrouted.length === 0) return fc.constant(null);
  return fc.oneof({ weight: 19, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom(...unrouted) });
}
