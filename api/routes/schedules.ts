/** Scheduled generations: spec 2.8, 4.11; decisions.md "Other records". */
import Router from '@koa/router';
import { ScheduleInput } from '../../shared/schedules';
import { AppCustom, AppState, callerOf } from '../context';
import { parseBody, parseId } from '../http';
import { requireAuth } from '../middleware/auth';
import { presentSchedule } from '../presenters/schedule';
import type { RouteDoc } from '../openapi/registry';
import { IdParam } from '../openapi/schemas/params';
import { Schedule, ScheduleList } from '../openapi/schemas/records';

const Patch = ScheduleInput.partial();

export function scheduleRoutes(): Router<AppState, AppCustom> {
  const router = new Router<AppState, AppCustom>({ prefix: '/api/v2/scheduled' });
  router.use(requireAuth);

  router.get('/', async (ctx) => {
    const rows = await ctx.container.schedules.list(callerOf(ctx).user.id);
    ctx.body = { schedules: rows.map(presentSchedule), total: rows.length };
  });

  router.post('/', async (ctx) => {
    const body = parseBody(ctx, ScheduleInput);
    ctx.status = 201;
    ctx.body = presentSchedule(await ctx.container.schedules.create(callerOf(ctx).user.id, body));
  });

  router.get('/:id', async (ctx) => {
    ctx.body = presentSchedule(await ctx.container.schedules.get(callerOf(ctx).user.id, parseId(ctx.params.id)));
  });

  router.put('/:id', async (ctx) => {
    const id = parseId(ctx.params.id);
    const body = parseBody(ctx, Patch);
    // Defaults of the create schema must not overwrite what the PUT did not name.
    const given = Object.fromEntries(Object.entries(body).filter(([key]) => key in ((ctx.request.body as Record<string, unknown>) ?? {})));
    ctx.body = presentSchedule(await ctx.container.schedules.update(callerOf(ctx).user.id, id, given));
  });

  router.delete('/:id', async (ctx) => {
    await ctx.container.schedules.delete(callerOf(ctx).user.id, parseId(ctx.params.id));
    ctx.status = 204;
  });

  return router;
}

const tag = 'Schedules';
const example = { name: 'Morning poem', cron: '0 8 * * *', model: 'demo-text', prompt: 'A poem about the morning', timezone: 'Europe/Berlin' };

export const scheduleRouteDocs: RouteDoc[] = [
  { method: 'get', path: '/api/v2/scheduled', tag, auth: 'user', summary: "The caller's schedules", responses: { 200: { description: 'Schedules', schema: ScheduleList } } },
  { method: 'post', path: '/api/v2/scheduled', tag, auth: 'user', summary: 'Schedule a generation on a cron expression (in its time zone)', body: ScheduleInput, bodyExample: example, responses: { 201: { description: 'The schedule', schema: Schedule } }, errors: ['limit_reached', 'not_found', 'insufficient_plan'] },
  { method: 'get', path: '/api/v2/scheduled/:id', tag, auth: 'user', summary: 'One schedule', params: IdParam, responses: { 200: { description: 'The schedule', schema: Schedule } } },
  { method: 'put', path: '/api/v2/scheduled/:id', tag, auth: 'user', summary: 'Change a schedule (only the fields given)', params: IdParam, body: Patch, bodyExample: { is_active: false }, responses: { 200: { description: 'The schedule as changed', schema: Schedule } }, errors: ['insufficient_plan'] },
  { method: 'delete', path: '/api/v2/scheduled/:id', tag, auth: 'user', summary: 'Delete a schedule', params: IdParam, responses: { 204: { description: 'Deleted' } } },
];
