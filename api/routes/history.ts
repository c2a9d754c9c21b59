/** History and the ledger: spec 4.8; decisions.md "Both shapes", "Generations and billing". */
import Router from '@koa/router';
import { z } from 'zod';
import { iso } from '../presenters/dates';
import type { Category } from '../../shared/catalog/types';
import { CATEGORIES } from '../../shared/catalog/types';
import { parseGenerationId } from '../../shared/generation/service';
import { AppCustom, AppState, callerOf } from '../context';
import { parseBody, validate } from '../http';
import { requireAuth } from '../middleware/auth';
import { presentHistoryItem } from '../presenters/generation';
import type { RouteDoc } from '../openapi/registry';
import { Favorite, HistoryPage, LedgerPage, Rating } from '../openapi/schemas/generation';
import { GenerationIdParam } from '../openapi/schemas/params';

const booleanQuery = z
  .enum(['true', 'false', '1', '0'])
  .optional()
  .transform((v) => v === 'true' || v === '1');
const pageQuery = {
  page: z.coerce.number().int().min(1).max(1_000_000).default(1),
  limit: z.coerce.number().int().min(1).max(100).default(20),
};
const kind = z.enum([...CATEGORIES, 'audio']);
const HistoryQuery = z.object({
  ...pageQuery,
  category: kind.optional(),
  type: kind.optional(),
  model_slug: z.string().max(100).optional(),
  model: z.string().max(100).optional(),
  status: z.enum(['pending', 'completed', 'failed']).optional(),
  favorites_only: booleanQuery,
});
const PageQuery = z.object(pageQuery);
const RateBody = z.object({ rating: z.number().int('must be an integer').min(1, 'must be 1 to 5').max(5, 'must be 1 to 5') });

function categoriesFor(value: string | undefined): Category[] | undefined {
  if (!value) return undefined;
  return value === 'audio' ? ['tts', 'stt', 'music'] : [value as Category];
}

export function historyRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>({ prefix: '/api/v2/user' });
  router.use(requireAuth);

  router.get('/history', async (ctx) => {
    const q = validate(HistoryQuery, ctx.query);
    const { history, catalog, config } = ctx.container;
    const page = await history.list(callerOf(ctx).user.id, {
      page: q.page,
      limit: q.limit,
      categories: categoriesFor(q.category ?? q.type),
      modelSlug: q.model_slug ?? q.model,
      status: q.status,
      favoritesOnly: q.favorites_only,
    });
    ctx.body = { ...page, items: page.items.map((g) => presentHistoryItem(g, catalog, config.publicBaseUrl)) };
  });

  router.post('/history/:id/favorite', async (ctx) => {
    const result = await ctx.container.history.toggleFavorite(callerOf(ctx).user.id, parseGenerationId(ctx.params.id));
    ctx.body = { id: result.id, is_favorited: result.isFavorited };
  });

  router.post('/history/:id/rate', async (ctx) => {
    const id = parseGenerationId(ctx.params.id);
    const body = parseBody(ctx, RateBody);
    const result = await ctx.container.history.rate(callerOf(ctx).user.id, id, body.rating);
    ctx.body = { id: result.id, user_rating: result.userRating };
  });

  router.delete('/history/:id', async (ctx) => {
    await ctx.container.history.delete(callerOf(ctx).user.id, parseGenerationId(ctx.params.id));
    ctx.status = 204;
  });

  router.get('/transactions', async (ctx) => {
    const q = validate(PageQuery, ctx.query);
    const page = await ctx.container.history.ledger(callerOf(ctx).user.id, q.page, q.limit);
    ctx.body = {
      ...page,
      items: page.items.map((e) => ({
        id: e.id,
        amount: e.amount,
        reason: e.reason,
        generation_id: e.generationId,
        balance_after: e.subscriptionAfter + e.bonusAfter,
        created_at: iso(e.createdAt),
      })),
    };
  });

  return router;
}

const tag = 'History';

export const historyRouteDocs: RouteDoc[] = [
  { method: 'get', path: '/api/v2/user/history', tag, auth: 'user', summary: "The caller's generations, newest first", description: '`audio` covers tts, stt and music.', query: HistoryQuery, responses: { 200: { description: 'A page of history', schema: HistoryPage } } },
  { method: 'post', path: '/api/v2/user/history/:id/favorite', tag, auth: 'user', summary: 'Toggle the favorite mark', params: GenerationIdParam, responses: { 200: { description: 'The mark as it now is', schema: Favorite } } },
  { method: 'post', path: '/api/v2/user/history/:id/rate', tag, auth: 'user', summary: 'Rate a generation 1–5', params: GenerationIdParam, body: RateBody, bodyExample: { rating: 5 }, responses: { 200: { description: 'The rating', schema: Rating } } },
  { method: 'delete', path: '/api/v2/user/history/:id', tag, auth: 'user', summary: 'Hide a generation and remove its files', params: GenerationIdParam, responses: { 204: { description: 'Deleted' } } },
  { method: 'get', path: '/api/v2/user/transactions', tag, auth: 'user', summary: 'The ledger: every change of the balance, newest first', query: PageQuery, responses: { 200: { description: 'A page of the ledger', schema: LedgerPage } } },
];
