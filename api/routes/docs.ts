/**
 * GET /docs (the interactive API reference) and its assets under /docs/assets/: swagger-ui's
 * files read from the installed `swagger-ui-dist` package, and the page's own stylesheet and init
 * script (api/openapi/docs-page.ts). Assets are kept in memory with their gzip and brotli forms,
 * answered with an ETag (304 when it matches) and a day of caching; anything not on the list is 404.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import Router from '@koa/router';
import { AppError } from '../../shared/errors';
import type { AppContext, AppCustom, AppState } from '../context';
import { DOCS_ASSETS_PATH, DOCS_CSP, DOCS_CSS, DOCS_HTML, DOCS_INIT_JS, DOCS_PATH } from '../openapi/docs-page';

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

/** What /docs/assets/ serves: swagger-ui's files by name in the package, or the page's own text. */
const ASSETS: Record<string, { type: string; packageFile?: string; text?: string }> = {
  'swagger-ui-bundle.js': { type: JS, packageFile: 'swagger-ui-bundle.js' },
  'swagger-ui.css': { type: CSS, packageFile: 'swagger-ui.css' },
  'favicon-32x32.png': { type: 'image/png', packageFile: 'favicon-32x32.png' },
  'favicon-16x16.png': { type: 'image/png', packageFile: 'favicon-16x16.png' },
  'docs-init.js': { type: JS, text: DOCS_INIT_JS },
  'docs.css': { type: CSS, text: DOCS_CSS },
};

/** A day: the files change only with a deploy, and the ETag revalidates them after. */
const ASSET_CACHE = 'public, max-age=86400';

interface LoadedAsset {
  type: string;
  etag: string;
  identity: Buffer;
  gzip: Buffer;
  br: Buffer;
}

function packageDir(): string {
  return path.dirname(require.resolve('swagger-ui-dist/package.json'));
}

function load(name: string): LoadedAsset | null {
  const spec = ASSETS[name];
  if (!spec) return null;
  const identity = spec.packageFile ? fs.readFileSync(path.join(packageDir(), spec.packageFile)) : Buffer.from(spec.text ?? '', 'utf8');
  return {
    type: spec.type,
    etag: `"${crypto.createHash('sha256').update(identity).digest('base64url').slice(0, 27)}"`,
    identity,
    gzip: zlib.gzipSync(identity, { level: 9 }),
    br: zlib.brotliCompressSync(identity, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 9 } }),
  };
}

function setPagePolicy(ctx: AppContext): void {
  ctx.set('Content-Security-Policy', DOCS_CSP);
}

export function docsRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>();
  const loaded = new Map<string, LoadedAsset>();

  router.get(DOCS_PATH, async (ctx) => {
    setPagePolicy(ctx);
    ctx.set('Cache-Control', 'no-cache');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = DOCS_HTML;
  });

  router.get(`${DOCS_ASSETS_PATH}/:file`, async (ctx) => {
    const name = ctx.params.file ?? '';
    const asset = loaded.get(name) ?? load(name);
    if (!asset) throw new AppError('not_found');
    loaded.set(name, asset);
    ctx.set('Cache-Control', ASSET_CACHE);
    ctx.set('ETag', asset.etag);
    ctx.vary('Accept-Encoding');
    ctx.type = asset.type;
    if (ctx.get('if-none-match') === asset.etag) {
      ctx.status = 304;
      return;
    }
    const encoding = ctx.acceptsEncodings('br', 'gzip', 'identity');
    if (encoding === 'br' || encoding === 'gzip') ctx.set('Content-Encoding', encoding);
    ctx.body = encoding === 'br' ? asset.br : encoding === 'gzip' ? asset.gzip : asset.identity;
  });

  return router;
}
