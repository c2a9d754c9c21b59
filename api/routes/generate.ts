/** POST /generate and reading generations back: spec 4.1, 4.5, 6.2; decisions.md. */
import crypto from 'node:crypto';
import { PassThrough } from 'node:stream';
import Router from '@koa/router';
import { tokenBalance } from '../../shared/billing';
import { AppError } from '../../shared/errors';
import { splitRequestBody } from '../../shared/generation/input';
import { parseGenerationId } from '../../shared/generation/service';
import { AppContext, AppCustom, AppState, callerOf } from '../context';
import { parseBody } from '../http';
import { requireAuth, setRateLimitHeaders } from '../middleware/auth';
import { idShapeForCategory, IdShape, presentWithBalance } from '../presenters/generation';
import type { Generation } from '../../shared/db/entities';
import { z } from 'zod';

const AnyObject = z.record(z.string(), z.unknown());

function idempotencyKey(ctx: AppContext): string | undefined {
  const key = ctx.get('idempotency-key').trim();
  if (!key) return undefined;
  if (key.length > 128 || !/^[\x21-\x7e]+$/.test(key)) {
    throw AppError.validation('Idempotency-Key', 'must be 1–128 visible ASCII characters');
  }
  return key;
}

function present(ctx: AppContext, generation: Generation, shape: IdShape, knownBalance?: number | null) {
  return presentWithBalance(ctx.container, generation, shape, knownBalance);
}

function sse(stream: PassThrough, event: string, data: unknown): void {
  stream.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

export function generateRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>({ prefix: '/api/v2/generate' });
  router.use(requireAuth);

  router.post('/', async (ctx) => {
    const caller = callerOf(ctx);
    const body = parseBody(ctx, AnyObject);
    const request = await ctx.container.generations.prepare(caller.user.id, splitRequestBody(body));
    const { generations } = ctx.container;
    const key = idempotencyKey(ctx);
    const options = {
      idempotencyKey: key,
      // Only a keyed request can be replayed, so only its body needs telling apart from another.
      requestHash: key === undefined ? undefined : crypto.createHash('sha256').update(JSON.stringify(body)).digest('hex'),
      source: 'api' as const,
    };

    const wantsStream = request.stream === true;
    if (wantsStream) {
      const model = generations.model(request.model);
      if (model.category !== 'text' || !model.supportsStreaming) throw AppError.validation('stream', 'this model does not stream');
      const accepted = await generations.accept(caller, request, options);
      if (accepted.limits) setRateLimitHeaders(ctx, accepted.limits);
      if (accepted.replay || accepted.generation.status !== 'pending') {
        ctx.body = await present(ctx, accepted.generation, 'B');
        return;
      }
      const generation = accepted.generation;
      const disconnected = new AbortController();
      ctx.res.on('close', () => {
        if (!ctx.res.writableFinished) disconnected.abort(new Error('client disconnected'));
      });
      const stream = new PassThrough();
      ctx.status = 200;
      ctx.set('Content-Type', 'text/event-stream; charset=utf-8');
      ctx.set('Cache-Control', 'no-cache, no-transform');
      ctx.set('X-Accel-Buffering', 'no');
      ctx.body = stream;
      const id = `gen_${generation.id}`;
      sse(stream, 'generation_start', { id, model: generation.modelSlug, created_at: generation.createdAt.toISOString() });
      void (async () => {
        const iterator = generations.runner.streamText(generation, accepted.model, disconnected.signal);
        let next = await iterator.next();
        while (!next.done) {
          sse(stream, 'content_delta', { id, delta: next.value });
          next = await iterator.next();
        }
        const ended = next.value;
        const presented = await present(ctx, ended, 'B');
        sse(stream, 'generation_end', {
          id,
          status: ended.status,
          content: ended.resultText ?? '',
          tokens_used: ended.tokensSpent,
          balance_remaining: presented.balance_remaining,
          usage: presented.usage ?? null,
          ...(ended.error ? { error: ended.error } : {}),
        });
        stream.end();
      })().catch((error: unknown) => {
        ctx.container.log.error({ err: error }, 'stream writer failed');
        stream.end();
      });
      return;
    }

    // A synchronous generation runs to its end even if the client goes away: it is charged only
    // when it completes, and its result stays in history.
    const accepted = await generations.start(caller, request, options);
    if (accepted.limits) setRateLimitHeaders(ctx, accepted.limits);
    ctx.status = 200;
    // Unless this request charged it, the balance is as authentication read it moments ago.
    ctx.body = await present(ctx, accepted.generation, idShapeForCategory(accepted.model.category), accepted.balance ?? tokenBalance(caller.user));
  });

  router.get('/status/:id', async (ctx) => {
    const generation = await ctx.container.generations.get(callerOf(ctx).user.id, parseGenerationId(ctx.params.id));
    ctx.body = await present(ctx, generation, 'B');
  });

  router.get('/:id', async (ctx) => {
    const generation = await ctx.container.generations.get(callerOf(ctx).user.id, parseGenerationId(ctx.params.id));
    ctx.body = await present(ctx, generation, 'A');
  });

  router.post('/:id/cancel', async (ctx) => {
    const generation = await ctx.container.generations.cancel(callerOf(ctx).user.id, parseGenerationId(ctx.params.id));
    ctx.body = await present(ctx, generation, 'A');
  });

  return router;
}
