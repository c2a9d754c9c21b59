/**
 * The web dashboard's files (README "The dashboard"): the single-page app that `npm run build`
 * compiles into WEB_DIR (dist/web), served at `/` by every process that serves the API.
 *
 * - Only the files found in WEB_DIR when the app is built are served (the list is read once), so
 *   no request path ever reaches the file system: no traversal, no symlinks followed.
 * - `assets/*` carry a content hash in their names (Vite's output): cached for a year,
 *   `immutable`. Everything else (index.html above all) is `no-cache` with an ETag, so a deploy
 *   is picked up on the next load and an unchanged page costs a 304.
 * - A browser navigation to a path the app routes itself (`/history`, `/reset-password?token=…`)
 *   gets index.html: any GET that asks for HTML, outside the API's own prefixes. Other clients
 *   (no `text/html` in Accept) still get the API's JSON 404 for unknown paths; `/` is always the
 *   page.
 * - The page's Content-Security-Policy replaces the API's `default-src 'none'` (see
 *   security-headers.ts): scripts, styles, fonts and API calls from this origin only, no inline
 *   script or style element, results (`/files/…`) from this origin or PUBLIC_BASE_URL's.
 * - Text files are compressed (brotli, else gzip) on first request and kept.
 * This is not an API route: it is mounted after every router (not in the route table).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import type { Next } from 'koa';
import type { AppContext } from '../context';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json; charset=utf-8',
  '.webmanifest': 'application/manifest+json',
  '.txt': 'text/plain; charset=utf-8',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
};
const COMPRESSIBLE = new Set(['.html', '.js', '.css', '.svg', '.json', '.webmanifest', '.txt']);
const IMMUTABLE = 'public, max-age=31536000, immutable';
/** Paths the API, its files and other pages own: never answered with the dashboard. */
const RESERVED_PREFIXES = ['/api/', '/files/', '/v1/', '/docs/', '/health/'];
const RESERVED_PATHS = new Set(['/api', '/v1', '/docs', '/health', '/metrics']);

interface WebFile {
  bytes: Buffer;
  type: string;
  etag: string;
  cacheControl: string;
  compressed: Map<'br' | 'gzip', Buffer>;
  compressible: boolean;
}

/**
 * The page's policy: only this origin (and where result files are served from), nothing inline.
 * Images may also come from any https address: a person's avatar is a URL of their choice (the
 * API's `avatar_url`); pictures cannot run code, and plain http is still refused.
 */
export function dashboardCsp(publicBaseUrl: string): string {
  const files = new URL(publicBaseUrl).origin;
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src 'self' data: blob: ${files} https:`,
    `media-src 'self' blob: ${files}`,
    "connect-src 'self'",
    "font-src 'self'",
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

function listFiles(root: string): Map<string, WebFile> {
  const files = new Map<string, WebFile>();
  const walk = (dir: string, depth: number): void => {
    if (depth > 4) return;
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full, depth + 1);
      if (!entry.isFile()) continue;
      const ext = path.extname(entry.name).toLowerCase();
      const type = TYPES[ext];
      if (!type) continue;
      const urlPath = '/' + path.relative(root, full).split(path.sep).join('/');
      const bytes = fs.readFileSync(full);
      files.set(urlPath, {
        bytes,
        type,
        etag: `"${crypto.createHash('sha256').update(bytes).digest('base64url').slice(0, 27)}"`,
        cacheControl: urlPath.startsWith('/assets/') ? IMMUTABLE : 'no-cache',
        compressed: new Map(),
        compressible: COMPRESSIBLE.has(ext) && bytes.length > 512,
      });
    }
  };
  walk(root, 0);
  return files;
}

function isReserved(urlPath: string): boolean {
  return RESERVED_PATHS.has(urlPath) || RESERVED_PREFIXES.some((prefix) => urlPath.startsWith(prefix));
}

function encodingFor(ctx: AppContext, file: WebFile): 'br' | 'gzip' | null {
  if (!file.compressible) return null;
  const accepted = ctx.acceptsEncodings('br', 'gzip', 'identity');
  return accepted === 'br' || accepted === 'gzip' ? accepted : null;
}

function compressed(file: WebFile, encoding: 'br' | 'gzip'): Buffer {
  let bytes = file.compressed.get(encoding);
  if (!bytes) {
    bytes =
      encoding === 'br'
        ? zlib.brotliCompressSync(file.bytes, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } })
        : zlib.gzipSync(file.bytes, { level: 9 });
    file.compressed.set(encoding, bytes);
  }
  return bytes;
}

/**
 * The middleware serving the dashboard from `webDir`, or null when it holds no index.html (not
 * built: the API runs without it).
 */
export function dashboardFiles(webDir: string, publicBaseUrl: string): ((ctx: AppContext, next: Next) => Promise<void>) | null {
  if (!fs.existsSync(path.join(webDir, 'index.html'))) return null;
  const files = listFiles(webDir);
  const index = files.get('/index.html');
  if (!index) return null;
  const csp = dashboardCsp(publicBaseUrl);

  return async (ctx, next) => {
    if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || isReserved(ctx.path)) return next();
    let file = files.get(ctx.path);
    if (!file) {
      const wantsPage = ctx.path === '/' || ctx.get('accept').includes('text/html');
      // A missing asset (an old hashed name) is a plain 404, never the page.
      if (!wantsPage || path.extname(ctx.path) !== '' || ctx.path.startsWith('/assets/')) return next();
      file = index;
    }
    const encoding = encodingFor(ctx, file);
    // Each encoding is its own representation, with its own validator.
    const etag = encoding ? `${file.etag.slice(0, -1)}-${encoding}"` : file.etag;
    ctx.set('Cache-Control', file.cacheControl);
    ctx.set('ETag', etag);
    ctx.set('Vary', 'Accept-Encoding');
    if (file.type.startsWith('text/html')) ctx.set('Content-Security-Policy', csp);
    ctx.type = file.type;
    if (ctx.get('if-none-match').split(',').some((tag) => tag.trim() === etag)) {
      ctx.status = 304;
      return;
    }
    ctx.status = 200;
    if (encoding) {
      ctx.set('Content-Encoding', encoding);
      ctx.body = compressed(file, encoding);
    } else {
      ctx.body = file.bytes;
    }
  };
}
