/**
 * Generated files at their unguessable URLs: the right content type, Content-Length, and byte
 * ranges (players seek in video and audio). A deleted or expired file is 404.
 */
import Router from '@koa/router';
import { z } from 'zod';
import { AppError } from '../../shared/errors';
import { isValidKey } from '../../shared/storage';
import { AppCustom, AppState } from '../context';
import type { RouteDoc } from '../openapi/registry';

export function fileRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>();

  router.get('/files/:a/:b/:c/:name', async (ctx) => {
    const key = `${ctx.params.a}/${ctx.params.b}/${ctx.params.c}/${ctx.params.name}`;
    // Stored requests and uploaded inputs are read by the service, never served.
    if (!isValidKey(key) || !key.startsWith('results/')) throw new AppError('not_found');
    const stat = await ctx.container.storage.stat(key);
    if (!stat) throw new AppError('not_found');
    ctx.set('Accept-Ranges', 'bytes');
    ctx.set('Cache-Control', 'private, max-age=86400');
    // Results are meant to be shown anywhere (an <img> or <video> on a client's own site): the
    // unguessable URL is the access control, not the origin of the page embedding it.
    ctx.set('Cross-Origin-Resource-Policy', 'cross-origin');
    ctx.type = stat.contentType;
    const range = /^bytes=(\d*)-(\d*)$/.exec(ctx.get('range'));
    if (range && (range[1] || range[2])) {
      let start = range[1] ? Number(range[1]) : stat.size - Number(range[2]);
      let end = range[1] && range[2] ? Number(range[2]) : stat.size - 1;
      start = Math.max(0, start);
      end = Math.min(end, stat.size - 1);
      if (start > end || start >= stat.size) throw new AppError('range_not_satisfiable', { headers: { 'Content-Range': `bytes */${stat.size}` } });
      ctx.status = 206;
      ctx.set('Content-Range', `bytes ${start}-${end}/${stat.size}`);
      ctx.length = end - start + 1;
      ctx.body = ctx.container.storage.read(key, { start, end });
      return;
    }
    ctx.length = stat.size;
    ctx.body = ctx.container.storage.read(key);
  });

  return router;
}

const FileParams = z.object({
  a: z.string().meta({ example: 'results' }),
  b: z.string().meta({ example: '2026' }),
  c: z.string().meta({ example: '11' }),
  name: z.string().meta({ example: '3f9a0c1e5b7d4e2f8a6c0b1d3e5f7a9c.webp' }),
});
const FileBytes = z.string().meta({ format: 'binary' });

export const fileRouteDocs: RouteDoc[] = [
  {
    method: 'get',
    path: '/files/:a/:b/:c/:name',
    tag: 'Service',
    auth: 'none',
    summary: 'A result file at its unguessable URL (as given in result_url)',
    description: 'Served with its content type, Content-Length and byte ranges (`Range: bytes=…` → 206).',
    params: FileParams,
    responses: { 200: { description: 'The file', content: { '*/*': { schema: FileBytes } } }, 206: { description: 'The asked range', content: { '*/*': { schema: FileBytes } } } },
    errors: ['range_not_satisfiable'],
  },
];
