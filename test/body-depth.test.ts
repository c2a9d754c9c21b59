/**
 * JSON bodies nested thousands of levels deep (found by the route fuzzer): they parse, but
 * whatever serialized or walked them afterwards overflowed the stack and answered 500 (the
 * request hash of an Idempotency-Key, a schedule's stored params). Every JSON route refuses a
 * body nested deeper than MAX_JSON_DEPTH with a 422 naming the body, and takes one at the limit.
 */
import path from 'node:path';
import { MAX_JSON_DEPTH } from '../api/http';
import { useTestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { registerUser, TestUser } from './helpers/users';

const fake = new FakeProvider('fake');
const t = useTestApp({ CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json') }, { providers: [fake.adapter()] });

/** `{"a":{"a":…1…}}` with `depth` objects, written as text (JSON.stringify would overflow too). */
function nested(depth: number): string {
  return `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

const TOO_DEEP = { detail: 'Validation failed', code: 'validation_failed', errors: [{ field: '(body)', message: `must not nest more than ${MAX_JSON_DEPTH} levels deep` }] };

function post(user: TestUser, url: string, body: string, headers: Record<string, string> = {}) {
  let req = t.app.http().post(url).set('authorization', `Bearer ${user.accessToken}`).set('content-type', 'application/json');
  for (const [name, value] of Object.entries(headers)) req = req.set(name, value);
  return req.send(body);
}

async function ledgerRows(userId: number): Promise<number> {
  const [row] = await t.app.container.db.read<{ n: number | string }>({ sql: 'SELECT COUNT(*) AS n FROM token_ledger WHERE user_id = :userId', params: { userId } });
  return Number(row?.n);
}

describe('deeply nested JSON bodies', () => {
  it.each([
    ['a generate request with an Idempotency-Key', '/api/v2/generate', (d: number) => nested(d), { 'idempotency-key': 'deep-1' }],
    ['a generate request with a deep param', '/api/v2/generate', (d: number) => `{"model":"fake-text","prompt":"hi","params":{"x":${nested(d)}}}`, {}],
    ['a schedule with deep params', '/api/v2/scheduled', (d: number) => `{"name":"n","cron":"0 * * * *","model":"fake-text","params":${nested(d)}}`, {}],
    ['a price with a deep param', '/api/v2/models/fake-text/calculate-price', (d: number) => `{"prompt":"hi","x":${nested(d)}}`, {}],
  ])('%s is a 422 naming the body, and charges nothing', async (_what, url, body, headers) => {
    const user = await registerUser(t.app);
    const before = await ledgerRows(user.id);
    for (const depth of [MAX_JSON_DEPTH + 1, 20_000, 100_000]) {
      const res = await post(user, url, body(depth), headers);
      expect({ depth, status: res.status, body: res.body }).toEqual({ depth, status: 422, body: TOO_DEEP });
    }
    expect(await ledgerRows(user.id)).toBe(before);
  });

  it('takes a body nested as deep as the limit', async () => {
    const user = await registerUser(t.app);
    // The body object is level 1, params level 2, x level 3: the value's own objects fill the rest.
    const res = await post(user, '/api/v2/models/fake-text/calculate-price', `{"prompt":"hi","params":{"x":${nested(MAX_JSON_DEPTH - 2)}}}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ model: 'fake-text', token_cost: 2 });
  });
});
