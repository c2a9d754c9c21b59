/**
 * The built dashboard itself (README "The dashboard"): the first load stays under 200 kB of
 * compressed JavaScript, every asset name carries its content hash (served immutable), and the
 * page has no inline script or style for its Content-Security-Policy to refuse.
 */
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { builtDashboard } from './helpers/browser';

const FIRST_LOAD_BUDGET = 200 * 1024;

describe('the built dashboard', () => {
  const web = builtDashboard();
  afterAll(() => web.cleanup());
  const index = fs.readFileSync(path.join(web.dir, 'index.html'), 'utf8');

  it('loads under 200 kB of compressed JavaScript at first', () => {
    // What the page asks for before anything runs: its module scripts and their preloads.
    const first = [...index.matchAll(/<(?:script[^>]+src|link[^>]+rel="modulepreload"[^>]+href)="([^"]+\.js)"/g)].map((m) => m[1] as string);
    expect(first.length).toBeGreaterThan(0);
    const gzip = first.reduce((sum, src) => sum + zlib.gzipSync(fs.readFileSync(path.join(web.dir, src)), { level: 9 }).length, 0);
    expect(gzip).toBeLessThan(FIRST_LOAD_BUDGET);
  });

  it('names every asset by its content hash and inlines nothing', () => {
    const assets = fs.readdirSync(path.join(web.dir, 'assets'));
    expect(assets.length).toBeGreaterThan(0);
    for (const name of assets) expect(name).toMatch(/-[\w-]{8}\.(js|css)$/);
    expect(index).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(index).not.toMatch(/<style|style="/);
    expect(index).not.toMatch(/https?:\/\//); // no CDN
  });
});
