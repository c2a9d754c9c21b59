/**
 * The server-side fetcher for URLs users give us (`image_url`, `audio_url`, webhook URLs):
 * decisions.md "URL inputs". Only http(s) (and `data:` URLs, decoded here), a size limit, one
 * timeout for the whole fetch, at most 3 redirects, and never to loopback, private, link-local or
 * metadata addresses.
 *
 * The address check is made on the address actually connected to: the host name is resolved once,
 * every address is vetted, and the socket is opened through a `lookup` that hands Node exactly
 * those vetted addresses, so there is no second DNS lookup to rebind. Each redirect target is
 * checked from scratch. `allow` (config URL_FETCH_ALLOW) exempts `host:port` entries, matched on
 * the URL's host name and port before resolution.
 *
 * URLs the operator configures (upstream base URLs, the identity provider, TELEGRAM_API_ROOT) do
 * not go through here.
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { LookupFunction } from 'node:net';

export interface FetchedFile {
  bytes: Buffer;
  contentType: string | null;
  finalUrl: string;
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export interface UrlFetcherOptions {
  /** `host:port` entries exempt from the private-address rule (config URL_FETCH_ALLOW). */
  allow: string[];
  /** Size limit of the body, in bytes. */
  maxBytes: number;
  /** Whole fetch including DNS and redirects; default 10 000. */
  timeoutMs?: number;
  /** Default 3. */
  maxRedirects?: number;
  /** DNS resolution, injectable for tests: returns every address of a host name. */
  resolve?: (hostname: string) => Promise<ResolvedAddress[]>;
}

/** The URL may not be fetched: scheme, credentials, a forbidden address, too many redirects, too large, a bad data: URL. */
export class UrlRefusedError extends Error {
  constructor(
    readonly reason: string,
    detail?: string,
  ) {
    super(`URL refused: ${reason}${detail ? ` (${detail})` : ''}`);
    this.name = 'UrlRefusedError';
  }
}

/** The fetch itself failed: name resolution, connection, TLS, timeout, an HTTP status >= 400. */
export class UrlFetchError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UrlFetchError';
  }
}

export const USER_AGENT = 'gensvc-fetch/1';
const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_REDIRECTS = 3;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

// ---------------------------------------------------------------------------------------------
// Addresses
// ---------------------------------------------------------------------------------------------

/** [network, prefix length] pairs, IPv4 as 32-bit unsigned numbers. */
const FORBIDDEN_V4: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8], // "this network", incl. the unspecified 0.0.0.0
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, incl. the cloud metadata address 169.254.169.254
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation (TEST-NET-1)
  ['192.88.99.0', 24], // 6to4 relay anycast (deprecated)
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation (TEST-NET-2)
  ['203.0.113.0', 24], // documentation (TEST-NET-3)
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, incl. the broadcast 255.255.255.255
];

const FORBIDDEN_V4_RANGES = FORBIDDEN_V4.map(([network, prefix]) => {
  const base = parseIPv4(network);
  if (base === null) throw new Error(`bad range ${network}`);
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  return { base: (base & mask) >>> 0, mask };
});

/** A strict dotted quad (what resolvers and the URL parser produce) as a 32-bit unsigned number. */
function parseIPv4(text: string): number | null {
  if (!net.isIPv4(text)) return null;
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  let value = 0;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part)) return null;
    const n = Number(part);
    if (n > 255) return null;
    value = value * 256 + n;
  }
  return value;
}

/** An IPv6 address (zone id already removed) as its eight 16-bit groups. */
function parseIPv6(text: string): number[] | null {
  if (!net.isIPv6(text)) return null;
  let source = text;
  // A trailing dotted quad (::ffff:1.2.3.4, 64:ff9b::1.2.3.4) becomes two hex groups.
  const lastColon = source.lastIndexOf(':');
  const tail = source.slice(lastColon + 1);
  if (tail.includes('.')) {
    const v4 = parseIPv4(tail);
    if (v4 === null) return null;
    source = `${source.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const halves = source.split('::');
  if (halves.length > 2) return null;
  const groupsOf = (s: string): number[] | null => {
    if (s === '') return [];
    const out: number[] = [];
    for (const g of s.split(':')) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  const head = groupsOf(halves[0]);
  if (head === null) return null;
  if (halves.length === 1) return head.length === 8 ? head : null;
  const rest = groupsOf(halves[1]);
  if (rest === null) return null;
  const fill = 8 - head.length - rest.length;
  if (fill < 1) return null;
  return [...head, ...new Array<number>(fill).fill(0), ...rest];
}

function isForbiddenV4(value: number): boolean {
  return FORBIDDEN_V4_RANGES.some(({ base, mask }) => ((value & mask) >>> 0) === base);
}

function v4From(high: number, low: number): number {
  return high * 0x10000 + low;
}

function isForbiddenV6(g: number[]): boolean {
  // IPv4-mapped ::ffff:a.b.c.d — the connection goes to the IPv4 address.
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
    return isForbiddenV4(v4From(g[6], g[7]));
  }
  // NAT64 well-known prefix 64:ff9b::/96 — translated to the embedded IPv4 address.
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0) {
    return isForbiddenV4(v4From(g[6], g[7]));
  }
  // Only global unicast (2000::/3) may be reached. This refuses ::, ::1, IPv4-compatible ::/96,
  // 64:ff9b:1::/48 (local NAT64), 100::/64 (discard), fc00::/7 (unique-local, incl. the EC2
  // metadata address fd00:ec2::254), fe80::/10 (link-local), fec0::/10 (site-local), ff00::/8
  // (multicast), and everything unassigned.
  if ((g[0] & 0xe000) !== 0x2000) return true;
  // 6to4 2002::/16 carries an IPv4 address in its next 32 bits.
  if (g[0] === 0x2002) return isForbiddenV4(v4From(g[1], g[2]));
  // 2001::/23 IETF protocol assignments (incl. Teredo 2001::/32, benchmarking 2001:2::/48).
  if (g[0] === 0x2001 && g[1] < 0x0200) return true;
  // Documentation: 2001:db8::/32, 3fff::/20.
  if (g[0] === 0x2001 && g[1] === 0x0db8) return true;
  if (g[0] === 0x3fff && g[1] < 0x1000) return true;
  return false;
}

/**
 * Whether a user-supplied URL may never be fetched from this address: loopback, private,
 * link-local, CGNAT, unique-local, unspecified, multicast, broadcast, reserved and documentation
 * ranges, the metadata addresses, and IPv4 embedded in IPv6 (mapped, NAT64, 6to4) judged by its
 * IPv4 address. Accepts `[v6]` brackets and a `%zone`. Anything that does not parse is forbidden.
 */
export function isForbiddenAddress(address: string): boolean {
  let text = address.trim();
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  const v4 = parseIPv4(text);
  if (v4 !== null) return isForbiddenV4(v4);
  const v6 = parseIPv6(text);
  if (v6 !== null) return isForbiddenV6(v6);
  return true;
}

// ---------------------------------------------------------------------------------------------
// data: URLs
// ---------------------------------------------------------------------------------------------

const DATA_URL_DEFAULT_TYPE = 'text/plain;charset=US-ASCII';
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const MEDIA_TYPE = new RegExp(`^(${TOKEN})/(${TOKEN})((?:\\s*;\\s*${TOKEN}=(?:${TOKEN}|"[^"]*"))*)\\s*$`);

function isHex(code: number): boolean {
  return (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x46) || (code >= 0x61 && code <= 0x66);
}

/** Percent-decodes to bytes (invalid escapes stay as they are); refuses past `limit` bytes. */
function percentDecode(text: string, limit: number): Buffer {
  const raw = Buffer.from(text, 'utf8');
  const out = Buffer.allocUnsafe(Math.min(raw.length, limit + 1));
  let length = 0;
  for (let i = 0; i < raw.length; i++) {
    let byte = raw[i];
    if (byte === 0x25 && i + 2 < raw.length && isHex(raw[i + 1]) && isHex(raw[i + 2])) {
      byte = parseInt(String.fromCharCode(raw[i + 1], raw[i + 2]), 16);
      i += 2;
    }
    if (length >= limit) throw new UrlRefusedError('too large');
    out[length++] = byte;
  }
  return out.subarray(0, length);
}

/** RFC 2397 / the fetch standard's data: URL processor, with the fetcher's size limit. */
function decodeDataUrl(url: URL, maxBytes: number): FetchedFile {
  const href = url.href;
  let body = href.slice('data:'.length);
  const hash = body.indexOf('#');
  if (hash >= 0) body = body.slice(0, hash);
  const comma = body.indexOf(',');
  if (comma < 0) throw new UrlRefusedError('bad data: URL', 'no comma');
  let meta = body.slice(0, comma).trim();
  const payload = body.slice(comma + 1);

  const base64Suffix = /;\s*base64\s*$/i.exec(meta);
  if (base64Suffix) meta = meta.slice(0, base64Suffix.index).trim();
  if (meta.startsWith(';')) meta = `text/plain${meta}`;
  const media = MEDIA_TYPE.exec(meta);
  const contentType = media
    ? `${media[1].toLowerCase()}/${media[2].toLowerCase()}${media[3].replace(/\s*;\s*/g, ';')}`
    : DATA_URL_DEFAULT_TYPE;

  if (!base64Suffix) {
    return { bytes: percentDecode(payload, maxBytes), contentType, finalUrl: href };
  }
  // Forgiving base64: percent-decode, drop ASCII whitespace, at most two '=' at the end.
  let text = percentDecode(payload, Number.MAX_SAFE_INTEGER).toString('latin1').replace(/[\t\n\f\r ]/g, '');
  if (text.length % 4 === 0) text = text.replace(/={1,2}$/, '');
  if (text.length % 4 === 1 || !/^[A-Za-z0-9+/]*$/.test(text)) {
    throw new UrlRefusedError('bad data: URL', 'invalid base64');
  }
  const decodedLength = Math.floor((text.length * 6) / 8);
  if (decodedLength > maxBytes) throw new UrlRefusedError('too large');
  return { bytes: Buffer.from(text, 'base64'), contentType, finalUrl: href };
}

// ---------------------------------------------------------------------------------------------
// The fetcher
// ---------------------------------------------------------------------------------------------

function defaultPort(protocol: string): string {
  return protocol === 'https:' ? '443' : '80';
}

/** `host:port` as the allow list spells it: lower-case host, IPv6 in brackets, port always given. */
function allowKey(url: URL): string {
  return `${url.hostname}:${url.port || defaultPort(url.protocol)}`;
}

function normalizeAllowEntry(entry: string): string {
  const trimmed = entry.trim();
  let parsed: URL;
  try {
    parsed = new URL(`http://${trimmed}`);
  } catch {
    throw new Error(`URL_FETCH_ALLOW entry "${entry}" is not host:port`);
  }
  const explicitPort = /:(\d{1,5})$/.exec(trimmed);
  if (!explicitPort || parsed.pathname !== '/' || parsed.search || parsed.hash || parsed.username || parsed.password) {
    throw new Error(`URL_FETCH_ALLOW entry "${entry}" is not host:port`);
  }
  return `${parsed.hostname}:${Number(explicitPort[1])}`;
}

function parseUrl(input: string | URL, base?: URL): URL {
  try {
    return new URL(input, base);
  } catch {
    throw new UrlRefusedError('invalid URL');
  }
}

/** Refusals that depend only on the URL text. */
function checkUrlShape(url: URL): void {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UrlRefusedError('scheme', url.protocol);
  }
  if (url.username !== '' || url.password !== '') throw new UrlRefusedError('userinfo');
  if (url.hostname === '') throw new UrlRefusedError('invalid URL');
}

/** A `lookup` for net/tls that answers only with the addresses already vetted for this host. */
function pinnedLookup(hostname: string, addresses: readonly ResolvedAddress[]): LookupFunction {
  return (host, options, callback) => {
    const wanted =
      options.family === 4 || options.family === 'IPv4' ? 4 : options.family === 6 || options.family === 'IPv6' ? 6 : 0;
    const candidates = addresses.filter((a) => wanted === 0 || a.family === wanted);
    process.nextTick(() => {
      if (host !== hostname || candidates.length === 0) {
        const err: NodeJS.ErrnoException = new Error(`no vetted address for ${host}`);
        err.code = 'ENOTFOUND';
        callback(err, '');
      } else if (options.all) {
        callback(
          null,
          candidates.map((a) => ({ address: a.address, family: a.family })),
        );
      } else {
        callback(null, candidates[0].address, candidates[0].family);
      }
    });
  };
}

async function systemResolve(hostname: string): Promise<ResolvedAddress[]> {
  const results = await dns.promises.lookup(hostname, { all: true, verbatim: true });
  return results.map((r) => ({ address: r.address, family: r.family === 6 ? 6 : 4 }));
}

/** Where one hop goes: the URL and, for a host name, the vetted addresses to connect to. */
interface Target {
  url: URL;
  /** The host as net.connect sees it (IPv6 without brackets). */
  host: string;
  addresses: ResolvedAddress[];
}

/** Races a promise against the signal; the abort reason is mapped by `onAbort`. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal, onAbort: () => Error): Promise<T> {
  if (signal.aborted) return Promise.reject(onAbort());
  return new Promise<T>((resolve, reject) => {
    const abort = (): void => reject(onAbort());
    signal.addEventListener('abort', abort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', abort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', abort);
        reject(err);
      },
    );
  });
}

export class UrlFetcher {
  private readonly allow: ReadonlySet<string>;
  private readonly maxBytes: number;
  private readonly timeoutMs: number;
  private readonly maxRedirects: number;
  private readonly resolve: (hostname: string) => Promise<ResolvedAddress[]>;

  constructor(options: UrlFetcherOptions) {
    this.allow = new Set(options.allow.filter((e) => e.trim() !== '').map(normalizeAllowEntry));
    this.maxBytes = options.maxBytes;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.maxRedirects = options.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
    this.resolve = options.resolve ?? systemResolve;
  }

  /**
   * Fetches a user-supplied URL. Throws UrlRefusedError when the URL may not be fetched and
   * UrlFetchError when the fetch fails (including the timeout and the caller's abort).
   */
  async fetch(input: string, signal?: AbortSignal): Promise<FetchedFile> {
    const first = parseUrl(input);
    if (first.protocol === 'data:') return decodeDataUrl(first, this.maxBytes);
    checkUrlShape(first);

    // One deadline for the whole fetch (DNS, every hop, the body), combined with the caller's
    // signal. A controller of our own, so the timer and the listener go away with the fetch.
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.timeoutMs);
    const onCallerAbort = (): void => controller.abort();
    if (signal?.aborted) onCallerAbort();
    else signal?.addEventListener('abort', onCallerAbort, { once: true });
    const onAbort = (): Error =>
      timedOut
        ? new UrlFetchError(`timed out after ${this.timeoutMs} ms`)
        : new UrlFetchError('aborted', { cause: signal?.reason });
    try {
      return await this.follow(first, controller.signal, onAbort);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onCallerAbort);
    }
  }

  /**
   * Checks a URL the way `fetch` does before it connects (scheme, userinfo, every resolved
   * address; a `data:` URL is decoded) without sending anything, so a request can be refused
   * up front. Throws UrlRefusedError, or UrlFetchError when the name does not resolve.
   */
  async check(input: string): Promise<void> {
    const url = parseUrl(input);
    if (url.protocol === 'data:') {
      decodeDataUrl(url, this.maxBytes);
      return;
    }
    checkUrlShape(url);
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    try {
      await this.vet(url, controller.signal, () => new UrlFetchError(`timed out after ${this.timeoutMs} ms`));
    } finally {
      clearTimeout(timer);
    }
  }

  private async follow(first: URL, signal: AbortSignal, onAbort: () => Error): Promise<FetchedFile> {
    let url = first;
    for (let redirects = 0; ; redirects++) {
      const target = await this.vet(url, signal, onAbort);
      const res = await this.request(target, signal, onAbort);
      const status = res.statusCode ?? 0;

      if (REDIRECT_STATUSES.has(status)) {
        res.destroy();
        const location = res.headers.location;
        if (!location) throw new UrlFetchError(`HTTP ${status} without a Location from ${url.host}`);
        if (redirects >= this.maxRedirects) {
          throw new UrlRefusedError('too many redirects', `more than ${this.maxRedirects}`);
        }
        const next = parseUrl(location, url);
        checkUrlShape(next); // a redirect to data:, file:, ... is refused too
        url = next;
        continue;
      }
      if (status >= 400) {
        res.destroy();
        throw new UrlFetchError(`HTTP ${status} from ${url.host}`);
      }
      if (status < 200 || status >= 300) {
        res.destroy();
        throw new UrlFetchError(`unexpected HTTP ${status} from ${url.host}`);
      }
      const declared = res.headers['content-length'];
      if (declared !== undefined && /^\d+$/.test(declared) && Number(declared) > this.maxBytes) {
        res.destroy();
        throw new UrlRefusedError('too large');
      }
      const bytes = await this.readBody(res, signal, onAbort);
      return { bytes, contentType: res.headers['content-type'] ?? null, finalUrl: url.href };
    }
  }

  /** Resolves the host once and checks every address (unless `host:port` is allowed). */
  private async vet(url: URL, signal: AbortSignal, onAbort: () => Error): Promise<Target> {
    const allowed = this.allow.has(allowKey(url));
    const literal = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    const family = net.isIP(literal);
    if (family !== 0) {
      if (!allowed && isForbiddenAddress(literal)) throw new UrlRefusedError('private address', url.hostname);
      return { url, host: literal, addresses: [{ address: literal, family: family === 6 ? 6 : 4 }] };
    }
    let addresses: ResolvedAddress[];
    try {
      addresses = await untilAborted(this.resolve(url.hostname), signal, onAbort);
    } catch (err) {
      if (err instanceof UrlFetchError) throw err;
      throw new UrlFetchError(`could not resolve ${url.hostname}`, { cause: err });
    }
    if (addresses.length === 0) throw new UrlFetchError(`could not resolve ${url.hostname}`);
    // Any forbidden address refuses the whole name (an unparseable answer counts as forbidden).
    if (!allowed && addresses.some((a) => isForbiddenAddress(a.address))) {
      throw new UrlRefusedError('private address', url.hostname);
    }
    for (const a of addresses) {
      if (net.isIP(a.address) !== a.family) throw new UrlFetchError(`bad address for ${url.hostname}`);
    }
    return { url, host: url.hostname, addresses };
  }

  /**
   * POSTs a body to a user's URL under the same rules (webhook deliveries): the address is
   * vetted and pinned, redirects are not followed (a 3xx is an answer like any other), the
   * response body is read up to the size limit and dropped. Resolves with the status code.
   */
  async post(input: string, body: Buffer, headers: Record<string, string>, signal?: AbortSignal): Promise<{ status: number }> {
    const url = parseUrl(input);
    checkUrlShape(url);
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.timeoutMs);
    const onCallerAbort = (): void => controller.abort();
    if (signal?.aborted) onCallerAbort();
    else signal?.addEventListener('abort', onCallerAbort, { once: true });
    const onAbort = (): Error => (timedOut ? new UrlFetchError(`timed out after ${this.timeoutMs} ms`) : new UrlFetchError('aborted', { cause: signal?.reason }));
    try {
      const target = await this.vet(url, controller.signal, onAbort);
      const res = await this.request(target, controller.signal, onAbort, { method: 'POST', body, headers });
      await this.readBody(res, controller.signal, onAbort).catch(() => undefined);
      return { status: res.statusCode ?? 0 };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onCallerAbort);
    }
  }

  /** One request to the vetted addresses (GET unless told otherwise); resolves with the response head. */
  private request(
    target: Target,
    signal: AbortSignal,
    onAbort: () => Error,
    send_: { method: 'GET' | 'POST'; body?: Buffer; headers?: Record<string, string> } = { method: 'GET' },
  ): Promise<http.IncomingMessage> {
    const { url } = target;
    const options: https.RequestOptions = {
      protocol: url.protocol,
      hostname: target.host,
      port: Number(url.port || defaultPort(url.protocol)),
      path: `${url.pathname}${url.search}`,
      method: send_.method,
      headers: {
        ...(send_.headers ?? {}),
        host: url.host,
        'user-agent': USER_AGENT,
        accept: '*/*',
        'accept-encoding': 'identity',
        ...(send_.body ? { 'content-length': String(send_.body.length) } : {}),
      },
      // A fresh connection per hop: a pooled socket would bypass the address check.
      agent: false,
      lookup: pinnedLookup(target.host, target.addresses),
    };
    if (url.protocol === 'https:' && net.isIP(target.host) === 0) options.servername = target.host;
    const send = url.protocol === 'https:' ? https.request : http.request;

    return new Promise<http.IncomingMessage>((resolve, reject) => {
      if (signal.aborted) {
        reject(onAbort());
        return;
      }
      let req: http.ClientRequest;
      try {
        req = send(options);
      } catch (err) {
        reject(new UrlFetchError(`could not fetch from ${url.host}`, { cause: err }));
        return;
      }
      const abort = (): void => {
        req.destroy();
        reject(onAbort());
      };
      signal.addEventListener('abort', abort, { once: true });
      req.on('response', (res) => {
        signal.removeEventListener('abort', abort);
        resolve(res);
      });
      req.on('error', (err: NodeJS.ErrnoException) => {
        signal.removeEventListener('abort', abort);
        if (signal.aborted) reject(onAbort());
        else reject(new UrlFetchError(`could not fetch from ${url.host}: ${err.code ?? err.message}`, { cause: err }));
      });
      req.end(send_.body);
    });
  }

  /** Reads the body, stopping as soon as it passes the size limit. */
  private readBody(res: http.IncomingMessage, signal: AbortSignal, onAbort: () => Error): Promise<Buffer> {
    return new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      let total = 0;
      let settled = false;
      const settle = (err: Error | null, value?: Buffer): void => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', abort);
        if (err) {
          res.destroy();
          reject(err);
        } else {
          resolve(value ?? Buffer.alloc(0));
        }
      };
      const abort = (): void => settle(onAbort());
      if (signal.aborted) {
        abort();
        return;
      }
      signal.addEventListener('abort', abort, { once: true });
      res.on('data', (chunk: Buffer) => {
        total += chunk.length;
        if (total > this.maxBytes) {
          settle(new UrlRefusedError('too large'));
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => settle(null, Buffer.concat(chunks, total)));
      res.on('error', (err) => settle(signal.aborted ? onAbort() : new UrlFetchError('connection broken while reading the body', { cause: err })));
      res.on('close', () => {
        if (!res.complete) settle(new UrlFetchError('connection closed before the body was complete'));
      });
    });
  }
}
