/**
 * One of every resource that has an id, made over HTTP by its owner: generations of each
 * category of the fixture catalog (completed synchronous ones, pending asynchronous ones: the
 * fuzzed apps run no worker), a favorite and a rating, a schedule, a webhook with a delivery, an
 * installed and rated assistant, a spare API key and a second session; and a response of the
 * Responses API (/v1/responses), a text generation whose id is also `resp_<id>`.
 */
import { Generation } from '../../../shared/db/entities';
import type { TestApp } from '../app';

export const ID_KINDS = ['generation', 'session', 'key', 'schedule', 'webhook', 'response'] as const;
export type IdKind = (typeof ID_KINDS)[number];

export interface Owned {
  generation: number[];
  session: number[];
  key: number[];
  schedule: number[];
  webhook: number[];
  /** Generations made through /v1/responses (also in `generation`): ids that `resp_<id>` names. */
  response: number[];
  /** Marketplace ids of installed assistants (the install is the user's; the id is public). */
  assistants: string[];
  /** Storage keys of result files (`results/…`). */
  resultKeys: string[];
}

export function emptyOwned(): Owned {
  return { generation: [], session: [], key: [], schedule: [], webhook: [], response: [], assistants: [], resultKeys: [] };
}

export interface SeedOptions {
  /** Base URL of the media sink (allowed by URL_FETCH_ALLOW). */
  sink: string;
  /** `few`: a text and a pending image only (a free plan's hourly limit is 5). */
  generations: 'all' | 'few';
  /** The user's plan allows API keys: make a spare one. */
  spareKey: boolean;
  assistant: string;
  /** The session the authorization belongs to, when it is one (listed as owned). */
  sessionId?: number;
}

const GENERATIONS_ALL: Array<Record<string, unknown>> = [
  { model: 'fake-text', prompt: 'seed text' },
  { model: 'fake-image', prompt: 'seed image', size: '1024x1024' },
  { model: 'fake-art', prompt: 'seed art, stays pending' },
  { model: 'fake-video', prompt: 'seed video, stays pending', duration: 5 },
  { model: 'fake-stt', audio_url: '/a.wav' },
  { model: 'fake-ocr', image_url: '/img.png' },
  { model: 'inpaint', image_url: '/img.png', mask_url: '/img.png' },
];
const GENERATIONS_FEW = [GENERATIONS_ALL[0]!, GENERATIONS_ALL[2]!];

function numericId(id: unknown): number {
  const n = typeof id === 'number' ? id : Number(String(id).replace(/^gen_/, ''));
  if (!Number.isSafeInteger(n)) throw new Error(`not a generation id: ${String(id)}`);
  return n;
}

function withSink(body: Record<string, unknown>, sink: string): Record<string, unknown> {
  return Object.fromEntries(Object.entries(body).map(([k, v]) => [k, typeof v === 'string' && v.startsWith('/') ? `${sink}${v}` : v]));
}

export async function seedResources(app: TestApp, authorization: string, userId: number, options: SeedOptions): Promise<Owned> {
  const owned = emptyOwned();
  const http = () => app.http();
  const expectStatus = (what: string, res: { status: number; body: unknown }, status: number) => {
    if (res.status !== status) throw new Error(`seeding ${what}: ${res.status} ${JSON.stringify(res.body)}`);
  };

  for (const body of options.generations === 'all' ? GENERATIONS_ALL : GENERATIONS_FEW) {
    const res = await http().post('/api/v2/generate').set('authorization', authorization).send(withSink(body, options.sink));
    expectStatus(`a ${String(body.model)} generation`, res, 200);
    if (res.body.status === 'failed') throw new Error(`seeding ${String(body.model)}: failed ${JSON.stringify(res.body)}`);
    owned.generation.push(numericId(res.body.id));
  }
  if (options.generations === 'all') {
    const res = await http().post('/v1/responses').set('authorization', authorization).send({ model: 'fake-text', input: 'seed response', metadata: { seeded: 'yes' } });
    expectStatus('a response', res, 200);
    const id = Number(String(res.body.id).replace(/^resp_/, ''));
    owned.generation.push(id);
    owned.response.push(id);
  }
  const first = owned.generation[0]!;
  expectStatus('a favorite', await http().post(`/api/v2/user/history/${first}/favorite`).set('authorization', authorization), 200);
  expectStatus('a rating', await http().post(`/api/v2/user/history/gen_${first}/rate`).set('authorization', authorization).send({ rating: 4 }), 200);

  const schedule = await http()
    .post('/api/v2/scheduled')
    .set('authorization', authorization)
    .send({ name: 'seeded', cron: '0 9 * * 1', model: 'fake-text', prompt: 'weekly', timezone: 'Europe/Berlin' });
  expectStatus('a schedule', schedule, 201);
  owned.schedule.push(schedule.body.id);

  const hook = await http().post('/api/v2/webhooks').set('authorization', authorization).send({ url: `${options.sink}/hook`, events: ['generation.completed'] });
  expectStatus('a webhook', hook, 201);
  owned.webhook.push(hook.body.id);
  // A delivery row (queued; no worker runs, so nothing is sent).
  expectStatus('a webhook ping', await http().post(`/api/v2/webhooks/${hook.body.id}/test`).set('authorization', authorization), 200);

  const install = await http().post(`/api/v2/assistants/marketplace/${options.assistant}/install`).set('authorization', authorization);
  expectStatus('an assistant install', install, 201);
  expectStatus('an assistant rating', await http().post(`/api/v2/assistants/${options.assistant}/rate`).set('authorization', authorization).send({ rating: 5 }), 200);
  owned.assistants.push(options.assistant);

  if (options.spareKey) {
    const key = await http().post('/api/v2/keys').set('authorization', authorization).send({ name: 'spare' });
    expectStatus('a spare key', key, 201);
    owned.key.push(key.body.id);
  }

  const second = await app.container.db.transaction((em) => app.container.sessions.start(em, userId, { userAgent: 'seeded second session', ip: '127.0.0.1' }));
  if (options.sessionId !== undefined) owned.session.push(options.sessionId);
  owned.session.push(second.sessionId);

  const rows = await app.container.db.repo(Generation).findBy({ userId });
  owned.resultKeys = rows.flatMap((g) => [g.resultKey, g.thumbnailKey]).filter((k): k is string => typeof k === 'string');
  return owned;
}
