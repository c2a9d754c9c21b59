/** GET /health (decisions.md "Operating"): 200 when every store answers, 503 otherwise. */
import type { TestApp } from './helpers/app';
import { startTestApp, useTestApp } from './helpers/app';

const CATALOG = { CATALOG_PATH: `${__dirname}/fixtures/catalog.json` };

describe('GET /health', () => {
  const t = useTestApp(CATALOG);

  it('answers 200 with the state of each store', async () => {
    const res = await t.app.http().get('/health');
    expect(res.status).toBe(200);
    const queue = t.app.container.redis ? 'ok' : 'embedded';
    expect(res.body).toMatchObject({ status: 'ok', db: 'ok', queue, engines: { ffmpeg: true } });
    expect(Array.isArray(res.body.missing_tools)).toBe(true);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
  });

  it('needs no authentication and carries no rate-limit headers', async () => {
    const res = await t.app.http().get('/health').set('authorization', 'Bearer nonsense');
    expect(res.status).toBe(200);
    expect(res.headers['x-ratelimit-limit-hour']).toBeUndefined();
  });

  it('answers HEAD too', async () => {
    const res = await t.app.http().head('/health');
    expect(res.status).toBe(200);
  });
});

describe('GET /health with a store down', () => {
  let app: TestApp | undefined;

  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('answers 503 when the database is closed', async () => {
    app = await startTestApp(CATALOG);
    await app.container.db.close();
    const res = await app.http().get('/health');
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ status: 'unavailable', db: 'down' });
  });

  it('answers 503 when the database fails to answer', async () => {
    app = await startTestApp(CATALOG);
    const db = app.container.db;
    const original = db.ping.bind(db);
    db.ping = () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:3306'), { code: 'ECONNREFUSED' }));
    try {
      const res = await app.http().get('/health');
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ status: 'unavailable', db: 'down', queue: app.container.redis ? 'ok' : 'embedded' });
    } finally {
      db.ping = original;
    }
    expect((await app.http().get('/health')).status).toBe(200);
  });

  it('answers 503 when Redis is down (mysql+redis only)', async () => {
    app = await startTestApp(CATALOG);
    const redis = app.container.redis;
    if (!redis) return; // the embedded queue has no separate store
    if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
    redis.disconnect();
    const res = await app.http().get('/health');
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ status: 'unavailable', db: 'ok', queue: 'down' });
    // Back once Redis answers again.
    await redis.connect();
    const again = await app.http().get('/health');
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ status: 'ok', db: 'ok', queue: 'ok' });
  });
});
