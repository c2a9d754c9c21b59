/**
 * GET /docs (the interactive API reference) and its assets under /docs/assets/: swagger-ui's
 * files read from the installed `swagger-ui-dist` package, and the page's own stylesheet and init
 * script (api/openapi/docs-page.ts). Assets are kept in memory, gzip and brotli forms made on first
 * use, answered with an ETag (304 when it matches) and a day of caching; anything not on the list is 404.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
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

const gzip = promisify(zlib.gzip);
const brotli = promisify(zlib.brotliCompress);

type Encoding = 'br' | 'gzip' | 'identity';

class LoadedAsset {
  readonly etag: string;
  private readonly encoded = new Map<Encoding, Promise<Buffer>>();

  constructor(
    readonly type: string,
    private readonly identity: Buffer,
  ) {
    this.etag = `"${crypto.createHash('sha256').update(identity).digest('base64url').slice(0, 27)}"`;
  }

  /** The bytes in `encoding`, compressed once (off the event loop) and kept. */
  bytes(encoding: Encoding): Promise<Buffer> {
    let bytes = this.encoded.get(encoding);
    if (!bytes) {
      bytes =
        encoding === 'br'
          ? brotli(this.identity, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 9 } })
          : encoding === 'gzip'
            ? gzip(this.identity, { level: 9 })
            : Promise.resolve(this.identity);
      this.encoded.set(encoding, bytes);
    }
    return bytes;
  }
}

function packageDir(): string {
  return path.dirname(require.resolve('swagger-ui-dist/package.json'));
}

function load(name: string): LoadedAsset | null {
  const spec = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
  if (!spec) return null;
  const identity = spec.packageFile ? fs.readFileSync(path.join(packageDir(), spec.packageFile)) : Buffer.from(spec.text ?? '', 'utf8');
  return new LoadedAsset(spec.type, identity);
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
    const accepted = ctx.acceptsEncodings('br', 'gzip', 'identity');
    const encoding: Encoding = accepted === 'br' || accepted === 'gzip' ? accepted : 'identity';
    if (encoding !== 'identity') ctx.set('Content-Encoding', encoding);
    ctx.body = await asset.bytes(encoding);
  });

  return router;
}
