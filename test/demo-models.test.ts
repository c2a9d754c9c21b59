/**
 * The "done when" on a fresh install: with the shipped catalog and the built-in local
 * provider, a user generates text (plain and streamed), an image and a video, polls them in both
 * shapes, sees them in history, and the balance moves exactly by the calculated prices.
 */
import sharp from 'sharp';
import { useTestApp } from './helpers/app';
import { userOnPlan } from './helpers/users';

const t = useTestApp({}, { worker: true });

it('text, streamed text, image and video with the demo models, billed by the price function', async () => {
  const user = await userOnPlan(t.app, 'basic');
  const auth = ['authorization', `Bearer ${user.accessToken}`] as const;
  const models = (await t.app.http().get('/api/v2/models')).body.models.map((m: { slug: string }) => m.slug);
  expect(models).toEqual(expect.arrayContaining(['demo-text', 'demo-image', 'demo-video']));
  let expected = (await t.app.http().get('/api/v2/user/balance').set(...auth)).body.token_balance as number;
  const price = async (slug: string, params: object) =>
    (await t.app.http().post(`/api/v2/models/${slug}/calculate-price`).send(params)).body.token_cost as number;

  const text = await t.app.http().post('/api/v2/generate').set(...auth).send({ model: 'demo-text', prompt: 'Tell me about the sea and the boats' });
  expect(text.body.status).toBe('completed');
  expect(text.body.content.split(' ').length).toBeGreaterThan(10);
  expected -= await price('demo-text', {});
  expect(text.body.balance_remaining).toBe(expected);

  const streamed = await t.app
    .http()
    .post('/api/v2/generate')
    .set(...auth)
    .send({ model: 'demo-text', messages: [{ role: 'user', content: 'gardens in spring' }], stream: true })
    .buffer(true)
    .parse((res, done) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => done(null, body));
    });
  const events = String(streamed.body).split('\n\n').filter(Boolean);
  expect(events.filter((e) => e.startsWith('event: content_delta')).length).toBeGreaterThan(5);
  expect(events.at(-1)).toMatch(/"status":"completed"/);
  expected -= await price('demo-text', {});

  const image = await t.app.http().post('/api/v2/generate').set(...auth).send({ model: 'demo-image', prompt: 'a red sun over the hills', size: '512x512', format: 'png' });
  expect(image.body).toMatchObject({ status: 'completed', result_metadata: { width: 512, height: 512 } });
  const file = await t.app.http().get(new URL(image.body.result_url).pathname).buffer(true);
  expect(file.headers['content-type']).toBe('image/png');
  expect(await sharp(file.body as Buffer).metadata()).toMatchObject({ width: 512, height: 512, format: 'png' });
  expected -= await price('demo-image', { size: '512x512' });

  const videoParams = { duration: 5, aspect_ratio: '9:16', resolution: '480p' };
  const video = await t.app.http().post('/api/v2/generate').set(...auth).send({ model: 'demo-video', prompt: 'waves at dusk', ...videoParams });
  expect(video.body.status).toBe('pending');
  let polled = video.body;
  for (let i = 0; i < 300 && polled.status === 'pending'; i++) {
    await new Promise((r) => setTimeout(r, 100));
    polled = (await t.app.http().get(`/api/v2/generate/${video.body.id}`).set(...auth)).body;
  }
  expect(polled).toMatchObject({ status: 'completed', result_metadata: { width: 480, height: 854, duration: 5 } });
  const status = (await t.app.http().get(`/api/v2/generate/status/gen_${video.body.id}`).set(...auth)).body;
  expect(status).toMatchObject({ id: `gen_${video.body.id}`, status: 'completed', width: 480, height: 854, duration: 5 });
  const mp4 = await t.app.http().get(new URL(polled.result_url).pathname).buffer(true);
  expect(mp4.headers['content-type']).toBe('video/mp4');
  expect((mp4.body as Buffer).subarray(4, 8).toString()).toBe('ftyp');
  expected -= await price('demo-video', videoParams);

  const balance = (await t.app.http().get('/api/v2/user/balance').set(...auth)).body;
  expect(balance).toMatchObject({ token_balance: expected, held_tokens: 0 });
  const history = (await t.app.http().get('/api/v2/user/history').set(...auth)).body;
  expect(history.total).toBe(4);
  expect(history.items.map((i: { model_slug: string }) => i.model_slug)).toEqual(['demo-video', 'demo-image', 'demo-text', 'demo-text']);
}, 60_000);
