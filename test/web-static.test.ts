/**
 * Serving the dashboard (README "The dashboard"): hashed assets immutable, index.html no-cache
 * with its own Content-Security-Policy, the page for browser navigations to the app's routes,
 * the API's JSON 404 for everything else, compression and ETags. A planted WEB_DIR stands in
 * for the built one (the Chromium suites use the real build).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { useTestApp } from './helpers/app';

const webDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gensvc-web-'));
const INDEX = '<!doctype html><html><head><script type="module" src="/assets/index-AbC123.js"></script></head><body><div id="app"></div></body></html>';
const SCRIPT = `console.log(${JSON.stringify('x'.repeat(4000))});`;
fs.mkdirSync(path.join(webDir, 'assets'));
fs.writeFileSync(path.join(webDir, 'index.html'), INDEX);
fs.writeFileSync(path.join(webDir, 'assets', 'index-AbC123.js'), SCRIPT);
fs.writeFileSync(path.join(webDir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
fs.writeFileSync(path.join(webDir, 'notes.secret'), 'not a served type');
afterAll(() => fs.rmSync(webDir, { recursive: true, force: true }));

const HTML = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

describe('the dashboard files', () => {
  const t = useTestApp({ WEB_DIR: webDir, PUBLIC_BASE_URL: 'https://files.example.com' });

  it('serves the page at / with no-cache, an ETag and a strict policy of its own', async () => {
    const res = await t.app.http().get('/');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.text).toBe(INDEX);
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers.etag).toMatch(/^"[\w-]+"$/);
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("connect-src 'self'");
    // Results may come from PUBLIC_BASE_URL's origin.
    expect(csp).toContain("img-src 'self' data: blob: https://files.example.com https:");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });

  it('answers an unchanged page with 304', async () => {
    const first = await t.app.http().get('/').set('accept-encoding', 'identity');
    const again = await t.app.http().get('/').set('accept-encoding', 'identity').set('if-none-match', String(first.headers.etag));
    expect(again.status).toBe(304);
    expect(again.text).toBeFalsy();
  });

  it('serves hashed assets immutable for a year, compressed when the client takes it', async () => {
    const plain = await t.app.http().get('/assets/index-AbC123.js').set('accept-encoding', 'identity');
    expect(plain.status).toBe(200);
    expect(plain.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(plain.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.text).toBe(SCRIPT);
    // Not a page: the API's default policy (nothing may run from it as a document).
    expect(plain.headers['content-security-policy']).toBe("default-src 'none';frame-ancestors 'none'");

    const br = await t.app.http().get('/assets/index-AbC123.js').set('accept-encoding', 'br, gzip');
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.headers.vary).toContain('Accept-Encoding');
    expect(br.headers.etag).not.toBe(plain.headers.etag);
    expect(Number(br.headers['content-length'])).toBeLessThan(SCRIPT.length / 10);
    expect(br.text).toBe(SCRIPT); // supertest decodes brotli

    const gzip = await t.app.http().get('/assets/index-AbC123.js').set('accept-encoding', 'gzip');
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(gzip.text).toBe(SCRIPT); // supertest inflates gzip
  });

  it('gives the page to a browser navigating to one of the app routes, with its query', async () => {
    for (const route of ['/overview', '/history', '/reset-password?token=abc', '/some/deep/link']) {
      const res = await t.app.http().get(route).set('accept', HTML);
      expect(res.status).toBe(200);
      expect(res.text).toBe(INDEX);
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.headers['content-security-policy']).toContain("script-src 'self'");
    }
    const head = await t.app.http().head('/playground').set('accept', HTML);
    expect(head.status).toBe(200);
    expect(head.headers['content-type']).toBe('text/html; charset=utf-8');
  });

  it('leaves the API, files, other clients and missing assets to the JSON 404', async () => {
    const cases: Array<[string, string]> = [
      ['/api/v2/nope', HTML],
      ['/api', HTML],
      ['/v1/nope', HTML],
      ['/files/results/2026/01/x.png', HTML],
      ['/health/nope', HTML],
      ['/overview', 'application/json'],
      ['/assets/index-OLD.js', HTML],
      ['/missing.js', HTML],
      ['/notes.secret', HTML],
    ];
    for (const [url, accept] of cases) {
      const res = await t.app.http().get(url).set('accept', accept);
      expect({ url, status: res.status, type: res.headers['content-type'] }).toEqual({ url, status: 404, type: 'application/json; charset=utf-8' });
      // /v1 answers in OpenAI's dialect, the rest in ours.
      expect(res.text).toContain('not_found');
    }
  });

  it('never reads a file it did not list at boot', async () => {
    for (const url of ['/%2e%2e/%2e%2e/etc/passwd', '/assets/%2e%2e/%2e%2e/package.json', '/..%2fpackage.json', '/assets/..%2f..%2fpackage.json']) {
      const res = await t.app.http().get(url).set('accept', HTML);
      // At most the page itself (a route the app shows as "no page here"), or the JSON 404.
      expect([url, res.status === 404 || res.text === INDEX]).toEqual([url, true]);
      expect(res.text).not.toContain('root:');
      expect(res.text).not.toContain('"dependencies"');
    }
  });

  it('does not take over other methods or the API routes themselves', async () => {
    const post = await t.app.http().post('/overview').set('accept', HTML).send({});
    expect(post.status).toBe(404);
    const health = await t.app.http().get('/health').set('accept', HTML);
    expect(health.status).toBe(200);
    expect(health.body.status).toBeDefined();
    const models = await t.app.http().get('/api/v2/models').set('accept', HTML);
    expect(models.status).toBe(200);
    expect(models.headers['content-type']).toMatch(/^application\/json/);
  });
});

describe('without a built dashboard', () => {
  const t = useTestApp({ WEB_DIR: path.join(os.tmpdir(), 'gensvc-no-such-web-dir') });

  it('the API runs and / is the JSON 404', async () => {
    const res = await t.app.http().get('/').set('accept', HTML);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: 'Not found', code: 'not_found' });
  });
});
