/**
 * URL inputs of /generate (decisions.md "URL inputs"): a private or loopback target is 422 and
 * never fetched or charged; data: URLs and our own result URLs are read without fetching; an
 * allowed loopback server (URL_FETCH_ALLOW) is fetched.
 */
import http from 'node:http';
import path from 'node:path';
import { Generation } from '../shared/db/entities';
import { startTestApp, TestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { registerUser, TestUser } from './helpers/users';

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');
const fake = new FakeProvider('fake');
let app: TestApp;
let server: http.Server;
let port = 0;
const hits: string[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    hits.push(req.url ?? '');
    if (req.url === '/redirect') {
      res.writeHead(302, { location: `http://127.0.0.2:${port}/cat.png` });
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'image/png' });
    res.end(PNG);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  port = (server.address() as { port: number }).port;
  app = await startTestApp(
    { CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json'), URL_FETCH_ALLOW: `127.0.0.1:${port}` },
    { providers: [fake.adapter()], worker: true },
  );
});
afterAll(async () => {
  await app.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
beforeEach(() => {
  fake.reset();
  hits.length = 0;
});

function generate(user: TestUser, body: object) {
  return app.http().post('/api/v2/generate').set('authorization', `Bearer ${user.accessToken}`).send(body);
}

describe('image_url', () => {
  it('fetches an allowed URL and hands the bytes to the provider', async () => {
    const user = await registerUser(app);
    const res = await generate(user, { model: 'fake-image', prompt: 'like this', image_url: `http://127.0.0.1:${port}/cat.png` });
    expect(res.body.status).toBe('completed');
    expect(hits).toEqual(['/cat.png']);
    // Fetched once, at acceptance; the provider got the stored bytes.
    expect((fake.calls[0]?.request as { inputImage: Buffer }).inputImage.equals(PNG)).toBe(true);
  });

  it.each([
    ['a loopback address that is not allowed', 'http://127.0.0.2:1/x.png'],
    ['IPv6 loopback', 'http://[::1]:1/x.png'],
    ['a file URL', 'file:///etc/passwd'],
    ['credentials in the URL', `http://user:pw@127.0.0.1:1/x.png`],
    ['the cloud metadata address', 'http://169.254.169.254/latest/meta-data/'],
  ])('refuses %s with 422, fetching and charging nothing', async (_label, url) => {
    const user = await registerUser(app);
    const res = await generate(user, { model: 'fake-image', prompt: 'x', image_url: url });
    expect(res.status).toBe(422);
    expect(res.body.errors[0].field).toBe('image_url');
    expect(fake.calls).toHaveLength(0);
    expect(await app.container.db.repo(Generation).countBy({ userId: user.id })).toBe(0);
  });

  it('refuses a redirect to a private address with 422, without following it, charging and storing nothing', async () => {
    const user = await registerUser(app);
    const res = await generate(user, { model: 'fake-image', prompt: 'x', image_url: `http://127.0.0.1:${port}/redirect` });
    expect(res.status).toBe(422);
    expect(res.body.errors[0]).toMatchObject({ field: 'image_url', message: expect.stringMatching(/private address/) });
    expect(hits).toEqual(['/redirect']);
    expect(fake.calls).toHaveLength(0);
    expect(await app.container.db.repo(Generation).countBy({ userId: user.id })).toBe(0);
  });

  it('reads data: URLs and this service\'s own result URLs without fetching', async () => {
    const user = await registerUser(app);
    const data = await generate(user, { model: 'fake-image', prompt: 'x', image_url: `data:image/png;base64,${PNG.toString('base64')}` });
    expect(data.body.status).toBe('completed');
    const own = await generate(user, { model: 'fake-image', prompt: 'again', image_url: data.body.result_url });
    expect(own.body.status).toBe('completed');
    expect(hits).toHaveLength(0);
    const missing = await generate(user, { model: 'fake-image', prompt: 'x', image_url: `${app.container.config.publicBaseUrl}/files/results/2026/01/${'0'.repeat(32)}.png` });
    expect(missing.status).toBe(422);
  });
});
