/**
 * The fetcher for user-supplied URLs (decisions.md "URL inputs"): schemes, credentials, the
 * private-address rule on the address actually connected to, redirects, size limit, timeout,
 * data: URLs, and the address table.
 *
 * Network rule: these tests bind and send only on loopback. Servers listen on 127.0.0.1 (allowed
 * through `allow`) and, as traps that must stay untouched, on 127.0.0.2 and [::1] at the same
 * port. Names are resolved by an injected resolver. A guard around net.Socket#connect records
 * every address a socket is about to connect to and blocks anything off loopback, so even a
 * broken fetcher could not send traffic to a private or public address from this file.
 */
import dns from 'node:dns';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import {
  isForbiddenAddress,
  UrlFetchError,
  UrlFetcher,
  UrlRefusedError,
  type ResolvedAddress,
  type UrlFetcherOptions,
} from '../shared/net/url-fetch';

const MAX = 1024;
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3, 4, 5]);

// ---------------------------------------------------------------------------------------------
// The loopback guard
// ---------------------------------------------------------------------------------------------

/** Every address a socket was about to connect to, in order. */
const attempts: string[] = [];
/** Connection attempts off loopback (or name lookups the guard could not see): must stay empty. */
const violations: string[] = [];

function isLoopback(address: string): boolean {
  return /^127\./.test(address) || address === '::1' || /^::ffff:127\./i.test(address);
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;
type Lookup = (hostname: string, options: dns.LookupOptions, callback: LookupCallback) => void;

const originalConnect = net.Socket.prototype.connect;

function guardedConnect(this: net.Socket, ...args: unknown[]): net.Socket {
  const first = args[0];
  const options: unknown = Array.isArray(first) ? first[0] : first;
  if (options !== null && typeof options === 'object' && !('path' in options && options.path)) {
    const o = options as { host?: unknown; lookup?: unknown };
    const host = typeof o.host === 'string' ? o.host : 'localhost';
    if (net.isIP(host) !== 0) {
      attempts.push(host);
      if (!isLoopback(host)) {
        violations.push(host);
        throw new Error(`test guard: connection to ${host} blocked`);
      }
    } else if (typeof o.lookup === 'function') {
      const lookup = o.lookup as Lookup;
      o.lookup = ((hostname, lookupOptions, callback) => {
        lookup(hostname, lookupOptions, (err, address, family) => {
          if (err) return callback(err, address, family);
          const list = typeof address === 'string' ? [address] : address.map((a) => a.address);
          attempts.push(...list);
          const off = list.filter((a) => !isLoopback(a));
          if (off.length > 0) {
            violations.push(...off);
            return callback(Object.assign(new Error('test guard: blocked'), { code: 'EGUARD' }), '');
          }
          callback(null, address, family);
        });
      }) satisfies Lookup;
    } else if (host !== 'localhost') {
      // A system DNS lookup of a made-up name would leave this machine.
      violations.push(`dns:${host}`);
      throw new Error(`test guard: system lookup of ${host} blocked`);
    }
  }
  return Reflect.apply(originalConnect, this, args) as net.Socket;
}

beforeAll(() => {
  net.Socket.prototype.connect = guardedConnect as typeof originalConnect;
});
afterAll(() => {
  net.Socket.prototype.connect = originalConnect;
});
beforeEach(() => {
  attempts.length = 0;
});
afterEach(() => {
  const seen = violations.splice(0);
  expect(seen).toEqual([]);
});

// ---------------------------------------------------------------------------------------------
// Loopback servers
// ---------------------------------------------------------------------------------------------

interface Hit {
  url: string;
  headers: http.IncomingHttpHeaders;
  localAddress: string | undefined;
}

interface TestServer {
  server: http.Server;
  port: number;
  hits: Hit[];
  connections: number;
  close(): Promise<void>;
}

async function listen(handler: http.RequestListener, host: string, port = 0): Promise<TestServer> {
  const server = http.createServer(handler);
  const state: TestServer = {
    server,
    port: 0,
    hits: [],
    connections: 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server.on('connection', () => state.connections++);
  server.prependListener('request', (req: http.IncomingMessage) => {
    state.hits.push({ url: req.url ?? '', headers: req.headers, localAddress: req.socket.localAddress });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  state.port = (server.address() as AddressInfo).port;
  return state;
}

const never = (): void => undefined;

/** The allowed server on 127.0.0.1. */
function routes(req: http.IncomingMessage, res: http.ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://x');
  const path = url.pathname;
  let m: RegExpExecArray | null;
  if (path === '/file') {
    res.writeHead(200, { 'content-type': 'image/png', 'content-length': PNG.length });
    res.end(PNG);
  } else if (path === '/headers') {
    res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': 'session=secret' });
    res.end(JSON.stringify(req.headers));
  } else if ((m = /^\/redirect\/(\d+)$/.exec(path))) {
    const n = Number(m[1]);
    if (n === 0) {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('done');
    } else {
      res.writeHead(302, { location: `/redirect/${n - 1}` });
      res.end();
    }
  } else if ((m = /^\/status\/(\d+)$/.exec(path))) {
    res.writeHead(Number(m[1]), { location: '/file' });
    res.end('status body');
  } else if (path === '/to') {
    res.writeHead(302, { location: url.searchParams.get('url') ?? '' });
    res.end();
  } else if (path === '/no-location') {
    res.writeHead(302);
    res.end();
  } else if (path === '/declared-too-large') {
    // Headers only; the body never comes. Refusing must not wait for it.
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(MAX * 4) });
    res.flushHeaders();
  } else if (path === '/stream-too-large') {
    // Chunked, no Content-Length: one byte over the limit, then the response never ends.
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    res.write(Buffer.alloc(MAX / 2, 1));
    setTimeout(() => res.write(Buffer.alloc(MAX / 2 + 1, 2)), 20);
  } else if (path === '/exactly-max') {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    res.write(Buffer.alloc(MAX / 2, 1));
    res.end(Buffer.alloc(MAX / 2, 2));
  } else if (path === '/hang') {
    never(); // no answer at all
  } else if (path === '/stall-body') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('partial');
  } else if (path === '/not-modified') {
    res.writeHead(304);
    res.end();
  } else {
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found');
  }
}

let main: TestServer;
let other: TestServer; // a second server on 127.0.0.1, not allowed
let trap2: TestServer; // 127.0.0.2, same port as main
let trap6: TestServer; // [::1], same port as main
let base: string;
let allow: string[];

beforeAll(async () => {
  main = await listen(routes, '127.0.0.1');
  other = await listen(routes, '127.0.0.1');
  trap2 = await listen(routes, '127.0.0.2', main.port);
  trap6 = await listen(routes, '::1', main.port);
  base = `http://127.0.0.1:${main.port}`;
  allow = [`127.0.0.1:${main.port}`];
});

afterAll(async () => {
  await Promise.all([main, other, trap2, trap6].map((s) => s?.close()));
});

/** Connections the servers that must never be reached have seen. */
function trapConnections(): number {
  return trap2.connections + trap6.connections + other.connections;
}

function fetcher(options: Partial<UrlFetcherOptions> = {}): UrlFetcher {
  return new UrlFetcher({ allow, maxBytes: MAX, ...options });
}

/** A resolver for made-up names; anything else is a test bug. */
function fakeResolver(table: Record<string, string[] | (() => string[])>): jest.Mock<Promise<ResolvedAddress[]>, [string]> {
  return jest.fn(async (hostname: string) => {
    const entry = table[hostname];
    if (entry === undefined) throw Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    const list = typeof entry === 'function' ? entry() : entry;
    return list.map((address): ResolvedAddress => ({ address, family: net.isIP(address) === 6 ? 6 : 4 }));
  });
}

async function refusal(promise: Promise<unknown>): Promise<UrlRefusedError> {
  const err = await promise.then(
    () => {
      throw new Error('expected a refusal, got a file');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UrlRefusedError);
  return err as UrlRefusedError;
}

async function failure(promise: Promise<unknown>): Promise<UrlFetchError> {
  const err = await promise.then(
    () => {
      throw new Error('expected a fetch error, got a file');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UrlFetchError);
  return err as UrlFetchError;
}

// ---------------------------------------------------------------------------------------------
// isForbiddenAddress (the function only; nothing here is ever connected to)
// ---------------------------------------------------------------------------------------------

describe('isForbiddenAddress', () => {
  const forbidden = [
    // IPv4
    '0.0.0.0',
    '0.1.2.3',
    '10.0.0.0',
    '10.0.0.5',
    '10.255.255.255',
    '100.64.0.0',
    '100.127.255.255',
    '127.0.0.1',
    '127.0.0.2',
    '127.255.255.255',
    '169.254.0.1',
    '169.254.169.254',
    '172.16.0.0',
    '172.31.255.255',
    '192.0.0.8',
    '192.0.2.1',
    '192.168.0.0',
    '192.168.1.1',
    '192.168.255.255',
    '198.18.0.1',
    '198.19.255.255',
    '198.51.100.7',
    '203.0.113.9',
    '224.0.0.1',
    '239.255.255.250',
    '240.0.0.1',
    '255.255.255.255',
    // IPv6
    '::',
    '::1',
    '0:0:0:0:0:0:0:1',
    '::127.0.0.1', // IPv4-compatible (deprecated)
    'fe80::1',
    'fe80::1%eth0',
    'febf:ffff::1',
    'fec0::1',
    'fc00::1',
    'fd12:3456::1',
    'fd00:ec2::254',
    'ff02::1',
    'ff0e::1',
    '100::1',
    '2001:db8::1',
    '2001::1', // Teredo
    '2001:0:4136:e378:8000:63bf:3fff:fdd2',
    '3fff::1',
    '64:ff9b:1::1',
    '[::1]',
    // IPv4 inside IPv6, judged by the IPv4 address
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.0.0.5',
    '::ffff:169.254.169.254',
    '::ffff:a9fe:a9fe',
    '::ffff:0.0.0.0',
    '0:0:0:0:0:ffff:192.168.1.1',
    '64:ff9b::127.0.0.1',
    '64:ff9b::a00:5',
    '64:ff9b::169.254.169.254',
    '2002:7f00:1::1', // 6to4 of 127.0.0.1
    '2002:c0a8:101::', // 6to4 of 192.168.1.1
    // not an address: fail closed
    '',
    'localhost',
    'example.com',
    '1.2.3',
    '256.1.1.1',
    '1.2.3.4.5',
    '010.0.0.1',
    '::ffff:1.2.3.999',
    '1:2:3:4:5:6:7:8:9',
    'gggg::1',
  ];
  const allowed = [
    '1.1.1.1',
    '8.8.8.8',
    '93.184.216.34',
    '9.255.255.255', // just below 10/8
    '11.0.0.0', // just above 10/8
    '100.63.255.255', // just below 100.64/10
    '100.128.0.0', // just above
    '126.255.255.255',
    '128.0.0.0',
    '169.253.255.255',
    '169.255.0.0',
    '172.15.255.255', // just below 172.16/12
    '172.32.0.0', // just above
    '192.167.255.255',
    '192.169.0.0',
    '198.17.255.255',
    '198.20.0.0',
    '223.255.255.255', // just below multicast
    '2606:4700:4700::1111',
    '2001:4860:4860::8888',
    '2a00:1450:4001:80b::200e',
    '2001:200::1', // just past 2001::/23
    '2002:808:808::1', // 6to4 of 8.8.8.8
    '::ffff:8.8.8.8',
    '::ffff:808:808',
    '::ffff:172.15.255.255',
    '64:ff9b::8.8.8.8',
    '64:ff9b::808:808',
    '[2606:4700:4700::1111]',
  ];

  it.each(forbidden)('%s is forbidden', (address) => {
    expect(isForbiddenAddress(address)).toBe(true);
  });

  it.each(allowed)('%s is allowed', (address) => {
    expect(isForbiddenAddress(address)).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------
// Fetching
// ---------------------------------------------------------------------------------------------

describe('UrlFetcher: a plain download', () => {
  it('returns the bytes, the content type and the final URL', async () => {
    const file = await fetcher().fetch(`${base}/file`);
    expect(file.bytes.equals(PNG)).toBe(true);
    expect(file.contentType).toBe('image/png');
    expect(file.finalUrl).toBe(`${base}/file`);
    expect(attempts).toEqual(['127.0.0.1']);
  });

  it('sends its User-Agent and no cookies or credentials', async () => {
    const f = fetcher();
    await f.fetch(`${base}/headers`); // answers with a Set-Cookie
    const file = await f.fetch(`${base}/headers?again=1`);
    const headers = JSON.parse(file.bytes.toString('utf8')) as Record<string, string>;
    expect(headers['user-agent']).toBe('gensvc-fetch/1');
    expect(headers['accept-encoding']).toBe('identity');
    expect(headers.host).toBe(`127.0.0.1:${main.port}`);
    expect(headers.cookie).toBeUndefined();
    expect(headers.authorization).toBeUndefined();
  });

  it('opens a fresh connection for every fetch (no pooled socket skips the check)', async () => {
    const before = main.connections;
    const f = fetcher();
    await f.fetch(`${base}/file`);
    await f.fetch(`${base}/file`);
    expect(main.connections).toBe(before + 2);
  });

  it('accepts a body of exactly the size limit', async () => {
    const file = await fetcher().fetch(`${base}/exactly-max`);
    expect(file.bytes.length).toBe(MAX);
  });

  it('answers 404 and 500 with a UrlFetchError carrying the status', async () => {
    expect((await failure(fetcher().fetch(`${base}/missing`))).message).toMatch(/404/);
    expect((await failure(fetcher().fetch(`${base}/status/500`))).message).toMatch(/500/);
  });

  it('does not treat 304 as a file', async () => {
    await failure(fetcher().fetch(`${base}/not-modified`));
  });
});

describe('UrlFetcher: refused URLs', () => {
  it.each(['ftp://127.0.0.1/file', 'file:///etc/passwd', 'javascript:alert(1)', 'gopher://127.0.0.1:70/', 'ws://127.0.0.1/', 'blob:http://x/y'])(
    '%s: refused for its scheme, nothing connected',
    async (url) => {
      expect((await refusal(fetcher().fetch(url))).reason).toBe('scheme');
      expect(attempts).toEqual([]);
    },
  );

  it('refuses text that is not a URL', async () => {
    expect((await refusal(fetcher().fetch('not a url'))).reason).toBe('invalid URL');
  });

  it.each(['user:pass@', 'user@', ':pass@'])('refuses userinfo %s even on an allowed host', async (userinfo) => {
    const before = main.connections;
    expect((await refusal(fetcher().fetch(`http://${userinfo}127.0.0.1:${main.port}/file`))).reason).toBe('userinfo');
    expect(main.connections).toBe(before);
    expect(attempts).toEqual([]);
  });

  it.each([
    ['127.0.0.2', () => `http://127.0.0.2:${main.port}/file`],
    ['[::1]', () => `http://[::1]:${main.port}/file`],
    ['IPv4-mapped [::ffff:127.0.0.1]', () => `http://[::ffff:127.0.0.1]:${main.port}/file`],
    ['127.0.0.2 in decimal', () => `http://2130706434:${main.port}/file`],
    ['127.0.0.2 in hex', () => `http://0x7f.2:${main.port}/file`],
    ['the allowed address on another port', () => `http://127.0.0.1:${other.port}/file`],
    ['the allowed address over https (port 443)', () => `https://127.0.0.1/file`],
  ])('refuses a literal loopback address that is not allowed: %s', async (_label, url) => {
    const before = trapConnections() + main.connections;
    expect((await refusal(fetcher().fetch(url()))).reason).toBe('private address');
    expect(attempts).toEqual([]);
    expect(trapConnections() + main.connections).toBe(before);
  });

  it('refuses localhost when not allowed (the system resolver, which answers from the hosts file)', async () => {
    expect((await refusal(fetcher().fetch(`http://localhost:${main.port}/file`))).reason).toBe('private address');
    expect(attempts).toEqual([]);
  });

  it.each([
    ['a private address', ['10.0.0.5']],
    ['the metadata address', ['169.254.169.254']],
    ['the EC2 IPv6 metadata address', ['fd00:ec2::254']],
    ['an IPv4-mapped private address', ['::ffff:10.0.0.5']],
    ['a public-looking address followed by a private one', ['93.184.216.34', '10.0.0.5']],
    ['a public-looking IPv6 address followed by link-local', ['2606:4700:4700::1111', 'fe80::1']],
    ['loopback (allow matches the name, not the address)', ['127.0.0.1']],
  ])('refuses a name resolving to %s, before connecting', async (_label, addresses) => {
    const resolve = fakeResolver({ 'internal.test': addresses });
    const before = main.connections;
    const err = await refusal(fetcher({ resolve }).fetch(`http://internal.test:${main.port}/file`));
    expect(err.reason).toBe('private address');
    expect(resolve).toHaveBeenCalledTimes(1);
    expect(resolve).toHaveBeenCalledWith('internal.test');
    expect(attempts).toEqual([]);
    expect(main.connections).toBe(before);
  });

  it('reports a name that does not resolve as a fetch error', async () => {
    const resolve = fakeResolver({});
    await failure(fetcher({ resolve }).fetch(`http://nowhere.test:${main.port}/file`));
    const empty = fakeResolver({ 'empty.test': [] });
    await failure(fetcher({ resolve: empty }).fetch(`http://empty.test:${main.port}/file`));
    expect(attempts).toEqual([]);
  });
});

describe('UrlFetcher: the allow list', () => {
  it('matches host names case-insensitively, on host and port', async () => {
    const resolve = fakeResolver({ 'files.test': ['127.0.0.1'] });
    const f = fetcher({ allow: [` Files.TEST:${main.port} `, ''], resolve });
    const file = await f.fetch(`http://FILES.test:${main.port}/file`);
    expect(file.bytes.equals(PNG)).toBe(true);
    expect(main.hits.at(-1)?.headers.host).toBe(`files.test:${main.port}`);
    // The same name on another port is not allowed.
    expect((await refusal(f.fetch(`http://files.test:${other.port}/file`))).reason).toBe('private address');
  });

  it('judges the address the URL parser normalizes to (2130706433 is 127.0.0.1)', async () => {
    const file = await fetcher().fetch(`http://2130706433:${main.port}/file`);
    expect(file.finalUrl).toBe(`${base}/file`);
    expect(attempts).toEqual(['127.0.0.1']);
  });

  it('fills in the default port: 127.0.0.1:80 does not allow another port', async () => {
    const f = fetcher({ allow: ['127.0.0.1:80'] });
    expect((await refusal(f.fetch(`${base}/file`))).reason).toBe('private address');
  });

  it.each(['127.0.0.1', 'http://127.0.0.1:80', '127.0.0.1:80/path', 'user@host:80', 'host:port'])(
    'rejects the malformed entry %s at construction',
    (entry) => {
      expect(() => new UrlFetcher({ allow: [entry], maxBytes: MAX })).toThrow(/host:port/);
    },
  );
});

describe('UrlFetcher: DNS rebinding', () => {
  it('connects to the address it vetted; a second answer is never asked for', async () => {
    let calls = 0;
    // First answer 127.0.0.1 (the server), every later one 127.0.0.2 (the trap at the same port).
    const resolve = fakeResolver({ 'rebind.test': () => (calls++ === 0 ? ['127.0.0.1'] : ['127.0.0.2']) });
    const before = { main: main.connections, trap: trap2.connections };
    const file = await fetcher({ allow: [`rebind.test:${main.port}`], resolve }).fetch(`http://rebind.test:${main.port}/headers`);
    const headers = JSON.parse(file.bytes.toString('utf8')) as Record<string, string>;
    expect(headers.host).toBe(`rebind.test:${main.port}`);
    expect(resolve).toHaveBeenCalledTimes(1);
    expect(attempts).toEqual(['127.0.0.1']);
    expect(main.hits.at(-1)?.localAddress).toBe('127.0.0.1');
    expect(main.connections).toBe(before.main + 1);
    expect(trap2.connections).toBe(before.trap);
  });

  it('refuses when a private address comes after a public-looking one in the same answer', async () => {
    const resolve = fakeResolver({ 'rebind.test': ['8.8.8.8', '192.168.1.10'] });
    expect((await refusal(fetcher({ resolve }).fetch(`http://rebind.test:${main.port}/`))).reason).toBe('private address');
    expect(attempts).toEqual([]);
  });

  it('hands https the vetted address and the name for SNI', async () => {
    const hellos: Buffer[] = [];
    const tlsTrap = net.createServer((socket) => {
      socket.once('data', (chunk: Buffer) => {
        hellos.push(chunk);
        socket.destroy();
      });
    });
    await new Promise<void>((resolve) => tlsTrap.listen(0, '127.0.0.1', () => resolve()));
    const port = (tlsTrap.address() as AddressInfo).port;
    try {
      let calls = 0;
      const resolve = fakeResolver({ 'secure.test': () => (calls++ === 0 ? ['127.0.0.1'] : ['127.0.0.2']) });
      await failure(fetcher({ allow: [`secure.test:${port}`], resolve }).fetch(`https://secure.test:${port}/file`));
      expect(resolve).toHaveBeenCalledTimes(1);
      expect(attempts).toEqual(['127.0.0.1']);
      expect(hellos).toHaveLength(1);
      expect(hellos[0][0]).toBe(0x16); // a TLS handshake record
      expect(hellos[0].includes(Buffer.from('secure.test'))).toBe(true); // server name indication
    } finally {
      await new Promise<void>((resolve) => tlsTrap.close(() => resolve()));
    }
  });
});

describe('UrlFetcher: redirects', () => {
  it('follows 3 redirects', async () => {
    const file = await fetcher().fetch(`${base}/redirect/3`);
    expect(file.bytes.toString()).toBe('done');
    expect(file.finalUrl).toBe(`${base}/redirect/0`);
  });

  it('refuses a 4th redirect without following it', async () => {
    const before = main.hits.length;
    expect((await refusal(fetcher().fetch(`${base}/redirect/4`))).reason).toBe('too many redirects');
    expect(main.hits.slice(before).map((h) => h.url)).toEqual(['/redirect/4', '/redirect/3', '/redirect/2', '/redirect/1']);
  });

  it('honours maxRedirects', async () => {
    await refusal(fetcher({ maxRedirects: 0 }).fetch(`${base}/redirect/1`));
    expect((await fetcher({ maxRedirects: 5 }).fetch(`${base}/redirect/5`)).bytes.toString()).toBe('done');
  });

  it.each([301, 302, 303, 307, 308])('follows %i', async (status) => {
    const file = await fetcher().fetch(`${base}/status/${status}`);
    expect(file.bytes.equals(PNG)).toBe(true);
    expect(file.finalUrl).toBe(`${base}/file`);
  });

  it('fails on a redirect without Location', async () => {
    await failure(fetcher().fetch(`${base}/no-location`));
  });

  const to = (target: string): string => `${base}/to?url=${encodeURIComponent(target)}`;

  it.each([
    ['127.0.0.2', () => `http://127.0.0.2:${main.port}/file`],
    ['[::1]', () => `http://[::1]:${main.port}/file`],
    ['another port of the allowed address', () => `http://127.0.0.1:${other.port}/file`],
  ])('refuses a redirect to %s', async (_label, target) => {
    const before = trapConnections();
    expect((await refusal(fetcher().fetch(to(target())))).reason).toBe('private address');
    expect(attempts).toEqual(['127.0.0.1']);
    expect(trapConnections()).toBe(before);
  });

  it('refuses a redirect to a name resolving to a private address, checked from scratch', async () => {
    const resolve = fakeResolver({ 'internal.test': ['10.1.2.3'] });
    const err = await refusal(fetcher({ resolve }).fetch(to(`http://internal.test:${main.port}/file`)));
    expect(err.reason).toBe('private address');
    expect(resolve).toHaveBeenCalledWith('internal.test');
    expect(attempts).toEqual(['127.0.0.1']);
  });

  it('resolves each hop of an allowed name again', async () => {
    const resolve = fakeResolver({ 'hop.test': ['127.0.0.1'] });
    const f = fetcher({ allow: [`hop.test:${main.port}`], resolve });
    const file = await f.fetch(`http://hop.test:${main.port}/redirect/2`);
    expect(file.finalUrl).toBe(`http://hop.test:${main.port}/redirect/0`);
    expect(resolve).toHaveBeenCalledTimes(3);
    expect(attempts).toEqual(['127.0.0.1', '127.0.0.1', '127.0.0.1']);
  });

  it.each(['file:///etc/passwd', 'data:text/plain,hi', 'ftp://127.0.0.1/x', 'javascript:alert(1)'])(
    'refuses a redirect to %s',
    async (target) => {
      expect((await refusal(fetcher().fetch(to(target)))).reason).toBe('scheme');
    },
  );

  it('refuses a redirect to a URL with userinfo', async () => {
    expect((await refusal(fetcher().fetch(to(`http://u:p@127.0.0.1:${main.port}/file`)))).reason).toBe('userinfo');
  });
});

describe('UrlFetcher: size limit', () => {
  it('refuses by Content-Length without waiting for the body', async () => {
    const started = Date.now();
    expect((await refusal(fetcher({ timeoutMs: 5000 }).fetch(`${base}/declared-too-large`))).reason).toBe('too large');
    expect(Date.now() - started).toBeLessThan(4000);
  });

  it('refuses a chunked body as soon as it passes the limit, and closes the connection', async () => {
    let closed: Promise<void> | undefined;
    const onRequest = (req: http.IncomingMessage): void => {
      if (req.url === '/stream-too-large') closed = new Promise<void>((resolve) => req.socket.once('close', () => resolve()));
    };
    main.server.on('request', onRequest);
    try {
      // The response never ends, so only the size limit can end this before the timeout.
      expect((await refusal(fetcher({ timeoutMs: 5000 }).fetch(`${base}/stream-too-large`))).reason).toBe('too large');
      expect(closed).toBeDefined();
      await closed;
    } finally {
      main.server.off('request', onRequest);
    }
  });
});

describe('UrlFetcher: timeout and abort', () => {
  it('gives up on a server that never answers', async () => {
    const started = Date.now();
    const err = await failure(fetcher({ timeoutMs: 300 }).fetch(`${base}/hang`));
    expect(err.message).toMatch(/timed out/);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(250);
    expect(elapsed).toBeLessThan(3000);
  });

  it('gives up on a body that stops arriving', async () => {
    expect((await failure(fetcher({ timeoutMs: 300 }).fetch(`${base}/stall-body`))).message).toMatch(/timed out/);
  });

  it('counts name resolution in the timeout', async () => {
    const resolve = jest.fn(() => new Promise<ResolvedAddress[]>(() => undefined));
    expect((await failure(fetcher({ timeoutMs: 200, resolve }).fetch('http://slow.test/'))).message).toMatch(/timed out/);
    expect(attempts).toEqual([]);
  });

  it("stops when the caller's signal aborts", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const err = await failure(fetcher({ timeoutMs: 5000 }).fetch(`${base}/hang`, controller.signal));
    expect(err.message).toMatch(/aborted/);
    // Already aborted: nothing is connected.
    attempts.length = 0;
    await failure(fetcher().fetch(`${base}/file`, AbortSignal.abort()));
    expect(attempts).toEqual([]);
  });
});

describe('UrlFetcher: data: URLs', () => {
  it('decodes base64 with its media type', async () => {
    const file = await fetcher().fetch(`data:image/png;base64,${PNG.toString('base64')}`);
    expect(file.bytes.equals(PNG)).toBe(true);
    expect(file.contentType).toBe('image/png');
    expect(attempts).toEqual([]);
  });

  it('decodes base64 with parameters, whitespace, missing padding and percent-encoding', async () => {
    const f = fetcher();
    expect((await f.fetch('data:Text/Plain;charset=UTF-8;base64,aGVs bG8=')).bytes.toString()).toBe('hello');
    expect((await f.fetch('data:text/plain;charset=UTF-8;base64,aGVs bG8=')).contentType).toBe('text/plain;charset=UTF-8');
    expect((await f.fetch('data:application/octet-stream;base64,aGVsbG8')).bytes.toString()).toBe('hello');
    expect((await f.fetch('data:;base64,aGVsbG8%3D')).bytes.toString()).toBe('hello');
  });

  it('decodes percent-encoded data, including bytes that are not UTF-8', async () => {
    const f = fetcher();
    const text = await f.fetch('data:text/plain;charset=utf-8,Hello%2C%20World%21');
    expect(text.bytes.toString()).toBe('Hello, World!');
    expect(text.contentType).toBe('text/plain;charset=utf-8');
    const binary = await f.fetch('data:application/octet-stream,%FF%00%80a');
    expect([...binary.bytes]).toEqual([0xff, 0x00, 0x80, 0x61]);
    const svg = await f.fetch("data:image/svg+xml,<svg xmlns='http://www.w3.org/2000/svg'/>");
    expect(svg.contentType).toBe('image/svg+xml');
    expect(svg.bytes.toString()).toBe("<svg xmlns='http://www.w3.org/2000/svg'/>");
  });

  it('defaults the media type to text/plain;charset=US-ASCII', async () => {
    expect((await fetcher().fetch('data:,hi')).contentType).toBe('text/plain;charset=US-ASCII');
    expect((await fetcher().fetch('data:;base64,aGk=')).contentType).toBe('text/plain;charset=US-ASCII');
    expect((await fetcher().fetch('data:;charset=utf-8,hi')).contentType).toBe('text/plain;charset=utf-8');
    expect((await fetcher().fetch('data:not a type,hi')).contentType).toBe('text/plain;charset=US-ASCII');
  });

  it('applies the size limit to the decoded bytes', async () => {
    const f = fetcher();
    expect((await f.fetch(`data:application/octet-stream;base64,${Buffer.alloc(MAX, 7).toString('base64')}`)).bytes.length).toBe(MAX);
    expect((await refusal(f.fetch(`data:application/octet-stream;base64,${Buffer.alloc(MAX + 1, 7).toString('base64')}`))).reason).toBe('too large');
    expect((await f.fetch(`data:text/plain,${'a'.repeat(MAX)}`)).bytes.length).toBe(MAX);
    expect((await refusal(f.fetch(`data:text/plain,${'a'.repeat(MAX + 1)}`))).reason).toBe('too large');
    expect((await refusal(f.fetch(`data:text/plain,${'%41'.repeat(MAX + 1)}`))).reason).toBe('too large');
  });

  it.each(['data:text/plain;base64', 'data:image/png;base64,@@@@', 'data:image/png;base64,aGVsb', 'data:image/png;base64,aG=Vs'])(
    'refuses the bad data: URL %s',
    async (url) => {
      expect((await refusal(fetcher().fetch(url))).reason).toBe('bad data: URL');
    },
  );
});
