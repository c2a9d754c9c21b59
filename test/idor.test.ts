/**
 * The IDOR sweep (issue #13), generated from the route table the app's routers hold: users A and
 * B (vip, each with a session and an API key) own one of every resource that has an id
 * (generations of every category of the fixture catalog, a favorite and a rating, a schedule, a
 * webhook with a delivery, an installed assistant, a spare key, two sessions). For every route
 * with an `:id`, each user calls it with the other's ids, in every form (`123` and `gen_123`),
 * with its session and with its key, and must get exactly what an id that exists nowhere gets: 404
 * `{detail: "Not found", code: "not_found"}` (never 403, never a hint; under /v1 the same 404 in
 * OpenAI's error shape, and a response's id is also tried as `resp_123`). The other user's rows are
 * compared before and after (status, favorite, rating, hidden, balances, sessions, keys,
 * schedules, webhooks, deliveries, installs, ledger, payments), and the caller's balance must not
 * move. (The billing routes take no id: products are public, a redemption is the caller's own.)
 *
 * A new route with `:id` under a known resource prefix is swept automatically; a route with a
 * path param under an unknown prefix fails the first test until it is classified here.
 */
import path from 'node:path';
import {
  ApiKey,
  AssistantInstall,
  Generation,
  Identity,
  LedgerEntry,
  PasswordReset,
  Payment,
  RefreshToken,
  Schedule,
  Session,
  User,
  Webhook,
  WebhookDelivery,
} from '../shared/db/entities';
import { errorDialectOf, presentError } from '../api/presenters/errors';
import { AppError } from '../shared/errors';
import type { TestApp } from './helpers/app';
import { startTestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { MediaSink } from './helpers/fuzz/media-sink';
import { IdKind, Owned, seedResources } from './helpers/fuzz/seed';
import { RouteEntry, routeTable } from './helpers/route-table';
import { userOnPlan } from './helpers/users';

type SweptKind = IdKind | 'assistant';

/** What the `:id` of a route names, by the route's path. */
const KIND_BY_PATH: Array<[RegExp, SweptKind]> = [
  [/^\/api\/v2\/(generate|user\/history|tools|inpaint|stt)\//, 'generation'],
  [/^\/api\/v2\/auth\/sessions\//, 'session'],
  [/^\/api\/v2\/keys\//, 'key'],
  [/^\/api\/v2\/scheduled\//, 'schedule'],
  [/^\/api\/v2\/webhooks\//, 'webhook'],
  [/^\/api\/v2\/assistants\/(?!marketplace\/)/, 'assistant'],
  [/^\/v1\/responses\//, 'response'],
  [/^\/v1\/videos\//, 'generation'],
];

/** Routes with a path param that names nothing of a user's, and why. */
const NOT_A_USERS_RESOURCE: Record<string, string> = {
  'GET /files/:a/:b/:c/:name':
    'result files are capability URLs (decisions.md "Files": served at unguessable URLs to whoever has the link); inputs are never served (checked below)',
  'GET /api/v2/models/:slug': 'a public catalog slug',
  'GET /api/v2/models/:slug/avg-time': 'a public catalog slug',
  'POST /api/v2/models/:slug/calculate-price': 'a public catalog slug',
  'POST /api/v2/assistants/marketplace/:id/install': 'a public marketplace id: installing it is any user\'s right (the install is then their own)',
  'GET /v1/models/:id': 'a public catalog slug (or an upstream\'s model name)',
  'GET /docs/assets/:file': 'a static file of the /docs page, the same for everyone',
};

/** A body that passes validation, so that only ownership decides (routes not listed send none). */
const VALID_BODIES: Record<string, object> = {
  'POST /api/v2/user/history/:id/rate': { rating: 1 },
  'POST /api/v2/assistants/:id/rate': { rating: 1 },
  'PUT /api/v2/scheduled/:id': { name: 'taken over', prompt: 'mine now', is_active: false, cron: '* * * * *' },
};

const NOT_FOUND = { detail: 'Not found', code: 'not_found' };

/** The error code of an answer, in our shape or OpenAI's. */
function codeOf(body: unknown): string | undefined {
  const answer = body as { code?: string; error?: { code?: string } };
  return answer.code ?? answer.error?.code;
}

/** The 404 of an unknown id on `route`, in the error shape of its path (OpenAI's under /v1). */
function notFoundOn(route: RouteEntry): unknown {
  return presentError(errorDialectOf(route.path), new AppError('not_found'), '').body;
}
/** An id no user has. */
const NOBODY = 2_147_000_000;

interface Party {
  name: 'A' | 'B';
  userId: number;
  session: string;
  key: string;
  keyId: number;
  owned: Owned;
}

const fake = new FakeProvider('fake');
const holder: { app?: TestApp; sink?: MediaSink; parties?: [Party, Party]; routes?: RouteEntry[] } = {};

function app(): TestApp {
  if (!holder.app) throw new Error('app not started');
  return holder.app;
}

async function makeParty(name: 'A' | 'B', assistant: string): Promise<Party> {
  const user = await userOnPlan(app(), 'vip');
  const authorization = `Bearer ${user.accessToken}`;
  const key = await app().http().post('/api/v2/keys').set('authorization', authorization).send({ name: `${name}'s integration` });
  if (key.status !== 201) throw new Error(`key for ${name}: ${key.status} ${JSON.stringify(key.body)}`);
  const sessions = await app().container.sessions.list(user.id);
  const owned = await seedResources(app(), authorization, user.id, {
    sink: holder.sink?.baseUrl ?? '',
    generations: 'all',
    spareKey: true,
    assistant,
    sessionId: sessions[0]?.id,
  });
  owned.key.push(key.body.id);
  // A payment of each, so that "the owner's rows unchanged" covers payments too.
  await app().container.payments.creditPurchase({ provider: 'telegram', externalId: `idor-${name}-${user.id}`, userId: user.id, productId: 'tokens-500', paid: { amount: 150, currency: 'XTR' } });
  return { name, userId: user.id, session: user.accessToken, key: key.body.key, keyId: key.body.id, owned };
}

beforeAll(async () => {
  holder.sink = await new MediaSink().start();
  const fixtures = path.join(__dirname, 'fixtures');
  holder.app = await startTestApp(
    { CATALOG_PATH: path.join(fixtures, 'catalog.json'), ASSISTANTS_PATH: path.join(fixtures, 'assistants.json'), URL_FETCH_ALLOW: holder.sink.hostPort },
    { providers: [fake.adapter()], worker: false },
  );
  holder.parties = [await makeParty('A', 'poet'), await makeParty('B', 'painter')];
  holder.routes = routeTable(holder.app.container);
}, 60_000);

afterAll(async () => {
  await holder.app?.close();
  await holder.sink?.close();
});

function kindOf(route: RouteEntry): SweptKind | null {
  if (!route.params.includes('id')) return null;
  return KIND_BY_PATH.find(([pattern]) => pattern.test(route.path))?.[1] ?? null;
}

function idsOf(owner: Party, kind: SweptKind, route: RouteEntry): string[] {
  if (kind === 'assistant') return owner.owned.assistants;
  const ids = owner.owned[kind];
  // A response is named `resp_123`; the other forms must be the same 404 there.
  if (kind === 'response') return ids.flatMap((id) => [`resp_${id}`, String(id), `gen_${id}`]);
  // Every form an id may take: the integer and the shape-B string (only generations accept it,
  // elsewhere it must be the same 404), and OpenAI's video job id on /v1/videos.
  const video = route.path.startsWith('/v1/videos/');
  return ids.flatMap((id) => [String(id), `gen_${id}`, ...(video ? [`video_${id}`] : [])]);
}

/** Everything of `userId`'s that a request could change, as comparable text. */
async function rowsOf(userId: number): Promise<string> {
  const db = app().container.db;
  const byUser = { userId };
  const sessions = await db.repo(Session).find({ where: byUser, order: { id: 'ASC' } });
  const webhooks = await db.repo(Webhook).find({ where: byUser, order: { id: 'ASC' } });
  const rows = {
    user: await db.repo(User).findOneBy({ id: userId }),
    generations: await db.repo(Generation).find({ where: byUser, order: { id: 'ASC' } }),
    schedules: await db.repo(Schedule).find({ where: byUser, order: { id: 'ASC' } }),
    webhooks,
    deliveries: await Promise.all(webhooks.map((w) => db.repo(WebhookDelivery).find({ where: { webhookId: w.id }, order: { id: 'ASC' } }))),
    keys: await db.repo(ApiKey).find({ where: byUser, order: { id: 'ASC' } }),
    sessions,
    refreshTokens: await Promise.all(sessions.map((s) => db.repo(RefreshToken).find({ where: { sessionId: s.id }, order: { id: 'ASC' } }))),
    installs: await db.repo(AssistantInstall).find({ where: byUser, order: { id: 'ASC' } }),
    identities: await db.repo(Identity).find({ where: byUser, order: { id: 'ASC' } }),
    resets: await db.repo(PasswordReset).find({ where: byUser, order: { id: 'ASC' } }),
    ledger: await db.repo(LedgerEntry).find({ where: byUser, order: { id: 'ASC' } }),
    payments: await db.repo(Payment).find({ where: byUser, order: { id: 'ASC' } }),
  };
  return JSON.stringify(rows);
}

/** The caller's balance buckets and ledger size (its own session's `last_used_at` may move). */
async function moneyOf(userId: number): Promise<string> {
  const user = await app().container.db.repo(User).findOneByOrFail({ id: userId });
  const ledger = await app().container.db.repo(LedgerEntry).countBy({ userId });
  return JSON.stringify([user.subscriptionTokens, user.bonusTokens, user.heldTokens, ledger]);
}

async function call(route: RouteEntry, id: string, authorization: string): Promise<{ status: number; body: unknown }> {
  const url = route.path.replace(':id', encodeURIComponent(id));
  const method = route.method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete';
  let req = app().http()[method](url).set('authorization', authorization);
  const body = VALID_BODIES[route.key];
  if (body) req = req.send(body);
  const res = await req;
  return { status: res.status, body: res.body };
}

describe('IDOR sweep over the route table', () => {
  it('knows what every path param of every route names', () => {
    const routes = holder.routes ?? [];
    const unclassified = routes.filter((r) => r.params.length > 0 && kindOf(r) === null && !(r.key in NOT_A_USERS_RESOURCE)).map((r) => r.key);
    expect(unclassified).toEqual([]);
    const swept = routes.filter((r) => kindOf(r) !== null);
    expect(swept.length).toBeGreaterThanOrEqual(18);
    // Every classified exception still exists (a stale list would hide nothing, but mislead).
    expect(Object.keys(NOT_A_USERS_RESOURCE).filter((key) => !routes.some((r) => r.key === key))).toEqual([]);
  });

  it("answers another user's id in every form exactly like an id nobody has (404), and changes nothing", async () => {
    const [a, b] = holder.parties ?? [];
    if (!a || !b) throw new Error('parties not set up');
    const failures: string[] = [];
    let requests = 0;
    for (const route of (holder.routes ?? []).filter((r) => kindOf(r) !== null)) {
      const kind = kindOf(route) as SweptKind;
      for (const [victim, attacker] of [
        [a, b],
        [b, a],
      ] as const) {
        const victimBefore = await rowsOf(victim.userId);
        const attackerBefore = await moneyOf(attacker.userId);
        for (const [credential, authorization] of [
          ['session', `Bearer ${attacker.session}`],
          ['API key', `Bearer ${attacker.key}`],
        ] as const) {
          const nobody = kind === 'assistant' ? 'critic' : kind === 'response' ? `resp_${NOBODY}` : String(NOBODY);
          const baseline = await call(route, nobody, authorization);
          requests++;
          const refusesKeys = credential === 'API key' && baseline.status === 403 && codeOf(baseline.body) === 'api_key_not_allowed';
          if (!refusesKeys && (baseline.status !== 404 || codeOf(baseline.body) !== 'not_found')) {
            failures.push(`${route.key} with ${attacker.name}'s ${credential}: an id nobody has got ${baseline.status} ${JSON.stringify(baseline.body)}`);
          }
          for (const id of idsOf(victim, kind, route)) {
            const res = await call(route, id, authorization);
            requests++;
            const where = `${route.key} with ${attacker.name}'s ${credential} on ${victim.name}'s ${kind} ${id}`;
            if (res.status !== baseline.status || JSON.stringify(res.body) !== JSON.stringify(baseline.body)) {
              failures.push(`${where}: ${res.status} ${JSON.stringify(res.body)}, unlike an id nobody has (${baseline.status} ${JSON.stringify(baseline.body)})`);
            } else if (!refusesKeys && kind !== 'assistant' && JSON.stringify(res.body) !== JSON.stringify(notFoundOn(route))) {
              failures.push(`${where}: ${JSON.stringify(res.body)}, not ${JSON.stringify(notFoundOn(route))}`);
            }
          }
        }
        if ((await rowsOf(victim.userId)) !== victimBefore) failures.push(`${route.key}: ${attacker.name}'s calls changed ${victim.name}'s rows`);
        if ((await moneyOf(attacker.userId)) !== attackerBefore) failures.push(`${route.key}: ${attacker.name}'s refused calls changed its own balance or ledger`);
      }
    }
    expect(failures).toEqual([]);
    expect(requests).toBeGreaterThan(400);
  });

  it("serves result files to whoever has the URL (capability URLs), and never another user's inputs", async () => {
    const [a, b] = holder.parties ?? [];
    if (!a || !b) throw new Error('parties not set up');
    const result = a.owned.resultKeys[0];
    expect(result).toMatch(/^results\//);
    expect((await app().http().get(`/files/${result}`).set('authorization', `Bearer ${b.session}`)).status).toBe(200);
    // The input A's tool generations fetched is stored under uploads/: not served to anyone.
    const inputs = (await app().container.db.repo(Generation).findBy({ userId: a.userId })).flatMap((g) => [...g.input.matchAll(/\/files\/((?:uploads|inputs)\/[^"\\]+)/g)].map((m) => m[1] as string));
    expect(inputs.length).toBeGreaterThan(0);
    for (const key of inputs) {
      for (const authorization of [`Bearer ${b.session}`, `Bearer ${a.session}`]) {
        const res = await app().http().get(`/files/${key}`).set('authorization', authorization);
        expect({ key, status: res.status, body: res.body }).toEqual({ key, status: 404, body: NOT_FOUND });
      }
    }
  });
});
