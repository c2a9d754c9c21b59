/**
 * Property-based fuzzing of every route of the real app (issue #13): for each route of the table
 * read from the app's routers, fast-check generates requests (callers and credentials, path
 * params, query strings, bodies, headers; see test/helpers/fuzz/) and each answer must be:
 * below 500; for a 4xx, the catalogue's `{detail, code}`; as the OpenAPI document describes the
 * route (status, content type, body schema; test/openapi.test.ts); for a refused request, no change of any
 * balance bucket of any user, of the ledger or of the generations; for another user's id, never
 * a 2xx. At the end the ledger audit (`admin audit-ledger`) must find nothing.
 *
 * Every run draws new inputs from a seed shown in the suite's name: `FUZZ_SEED=<n>` replays a run
 * (run the whole file: the routes share one database). `FUZZ_RUNS_SCALE=<x>` multiplies the number
 * of requests, `FUZZ_STATS=1` prints the requests and statuses per route, `FUZZ_STATS=why` also
 * every refused request with its answer.
 */
import crypto from 'node:crypto';
import fc from 'fast-check';
import { auditLedger } from '../shared/billing/audit';
import { DRIVERS } from './helpers/fuzz/drivers';
import { answerViolations, caseArb, describeExchange, RequestBuilder, send } from './helpers/fuzz/request';
import { FuzzWorld } from './helpers/fuzz/world';
import { isApiPath, undocumentedAnswer } from './helpers/openapi-check';
import { RouteEntry, routeTable } from './helpers/route-table';

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : crypto.randomInt(2 ** 31);
const SCALE = process.env.FUZZ_RUNS_SCALE ? Number(process.env.FUZZ_RUNS_SCALE) : 1;

function seedFor(key: string): number {
  let h = SEED | 0;
  for (let i = 0; i < key.length; i++) h = (Math.imul(h, 31) + key.charCodeAt(i)) | 0;
  return h;
}

const holder: { world?: FuzzWorld; routes?: RouteEntry[]; document?: Record<string, unknown> } = {};
const stats = { requests: 0, started: Date.now(), byRoute: new Map<string, { requests: number; statuses: Map<number, number> }>() };

beforeAll(async () => {
  holder.world = await FuzzWorld.start();
  holder.routes = routeTable(holder.world.app.container);
  holder.document = (await holder.world.app.http().get('/api/v2/openapi.json')).body as Record<string, unknown>;
}, 120_000);

afterAll(async () => {
  await holder.world?.close();
  if (process.env.FUZZ_STATS) {
    const lines = [...stats.byRoute].map(([key, s]) => `${key}: ${s.requests} (${[...s.statuses].sort(([a], [b]) => a - b).map(([code, n]) => `${code}×${n}`).join(' ')})`);
    console.log(`fuzz: ${stats.requests} requests in ${((Date.now() - stats.started) / 1000).toFixed(1)} s, seed ${SEED}\n${lines.join('\n')}`);
  }
});

/** Whether `url` reaches `route` (a generated empty or slashed param can route a request elsewhere: /v1/models/). */
function routedHere(route: RouteEntry, url: string): boolean {
  const pattern = new RegExp(`^${route.path.replace(/:[A-Za-z0-9_]+/g, '[^/]+')}/?$`);
  return pattern.test(new URL(url, 'http://x').pathname);
}

function world(): FuzzWorld {
  if (!holder.world) throw new Error('fuzz world not started');
  return holder.world;
}

describe(`route fuzzing (FUZZ_SEED=${SEED})`, () => {
  it('has a driver for every route of the app, and no driver for a route that is gone', () => {
    const discovered = (holder.routes ?? []).map((r) => r.key).sort();
    expect(discovered.length).toBeGreaterThan(40);
    expect(discovered).toEqual(Object.keys(DRIVERS).sort());
  });

  for (const [key, makeDriver] of Object.entries(DRIVERS)) {
    it(key, async () => {
      const route = holder.routes?.find((r) => r.key === key);
      if (!route) throw new Error(`${key} is not a route of the app any more: remove its driver`);
      const driver = makeDriver(world());
      const routedMethods = (holder.routes ?? []).filter((r) => r.path === route.path).map((r) => r.method);
      const builder = new RequestBuilder(world());
      const counts = { requests: 0, statuses: new Map<number, number>() };
      stats.byRoute.set(key, counts);
      await fc.assert(
        fc.asyncProperty(caseArb(driver, route, routedMethods), async (c) => {
          const request = await builder.build(route, driver, c);
          const before = await world().moneyState();
          let res;
          try {
            res = await send(world().app.http(), request);
          } catch (error) {
            throw new Error(`no answer (${String(error)})\n${describeExchange(request, null)}`);
          } finally {
            counts.requests++;
            stats.requests++;
          }
          counts.statuses.set(res.status, (counts.statuses.get(res.status) ?? 0) + 1);
          if (process.env.FUZZ_STATS === 'why' && res.status >= 400) console.log(`${key} ${res.status} ${JSON.stringify(res.body).slice(0, 300)}\n${describeExchange(request, res)}`);
          const after = res.status >= 400 ? await world().moneyState() : before;
          const problems = answerViolations(request, res, before, after);
          // What the handler of this route answered must be what the OpenAPI document says it answers.
          if (request.method === route.method && res.status !== 405 && isApiPath(route.path) && holder.document && routedHere(route, request.url)) {
            const contentType = String(res.headers['content-type'] ?? '').split(';')[0] ?? '';
            const empty = !res.headers['content-type'];
            for (const problem of undocumentedAnswer(holder.document, key, { status: res.status, contentType, body: res.body, empty })) problems.push(`not as documented: ${problem}`);
          }
          if (problems.length > 0) throw new Error(`${problems.join('\n')}\n${describeExchange(request, res)}`);
        }),
        { numRuns: Math.max(1, Math.round(driver.runs * SCALE)), seed: seedFor(key) },
      );
      await world().heal();
    }, 300_000);
  }

  it('leaves the ledger consistent: the audit (admin audit-ledger) finds no violation', async () => {
    const report = await auditLedger(world().app.container.db);
    expect(report.violations).toEqual([]);
    expect(report.generations).toBeGreaterThan(0);
  });
});
