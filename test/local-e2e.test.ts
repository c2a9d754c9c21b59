/**
 * Every category works offline on the embedded default through the API: local speech, speech
 * recognition (a round trip: the service's own speech transcribed back), music, and the image
 * tools through /tools, /inpaint and /generate.
 */
import sharp from 'sharp';
import { useTestApp } from './helpers/app';
import { userOnPlan, TestUser } from './helpers/users';

const t = useTestApp({}, { worker: true });
let user: TestUser;

beforeAll(async () => {
  user = await userOnPlan(t.app, 'pro', 500);
});

function auth(): [string, string] {
  return ['authorization', `Bearer ${user.accessToken}`];
}

async function textImage(text: string): Promise<Buffer> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="640" height="160"><rect width="100%" height="100%" fill="white"/><text x="20" y="100" font-family="DejaVu Sans, Arial, sans-serif" font-size="64" fill="black">${text}</text></svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}

async function poll(id: number) {
  for (let i = 0; i < 600; i++) {
    const res = await t.app.http().get(`/api/v2/generate/${id}`).set(...auth());
    if (res.body.status !== 'pending') return res.body;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('still pending');
}

it('offers every category from the local provider', async () => {
  const res = await t.app.http().get('/api/v2/models');
  const local = res.body.models.filter((m: { provider: string }) => m.provider === 'local');
  const categories = new Set(local.map((m: { category: string }) => m.category));
  for (const category of ['text', 'image', 'video', 'tts', 'stt', 'music', 'tool']) expect(categories).toContain(category);
});

it('speaks, and transcribes its own speech back (multipart /stt)', async () => {
  const spoken = await t.app.http().post('/api/v2/generate').set(...auth()).send({ model: 'local-tts', text: 'the quick brown fox jumps over the lazy dog', voice_id: 'awb', format: 'wav' });
  expect(spoken.body).toMatchObject({ id: expect.stringMatching(/^gen_/), status: 'completed', duration_seconds: expect.any(Number), characters: 43 });
  const audio = await t.app.http().get(new URL(spoken.body.url).pathname).buffer(true);
  expect(audio.headers['content-type']).toBe('audio/wav');
  const heard = await t.app.http().post('/api/v2/stt').set(...auth()).field('model', 'local-stt').field('language', 'en').attach('audio', audio.body as Buffer, 'fox.wav');
  expect(heard.body).toMatchObject({ status: 'completed', tokens_spent: 2 });
  const words = String(heard.body.result_text).toLowerCase();
  expect(['quick', 'brown', 'fox', 'lazy', 'dog'].filter((w) => words.includes(w)).length).toBeGreaterThanOrEqual(3);
  const russian = await t.app.http().post('/api/v2/stt').set(...auth()).field('model', 'local-stt').field('language', 'ru').attach('audio', audio.body as Buffer, 'fox.wav');
  expect(russian.status).toBe(422);
}, 60_000);

it('composes music asynchronously, of the requested duration', async () => {
  const res = await t.app.http().post('/api/v2/generate').set(...auth()).send({ model: 'local-music', prompt: 'happy upbeat piano', duration: 8, format: 'mp3', seed: 3 });
  expect(res.body.status).toBe('pending');
  const done = await poll(res.body.id);
  expect(done).toMatchObject({ status: 'completed', result_metadata: { duration: 8 } });
  const file = await t.app.http().get(new URL(done.result_url).pathname).buffer(true);
  expect(file.headers['content-type']).toBe('audio/mpeg');
}, 60_000);

it('reads text from an image (OCR) and upscales through /tools', async () => {
  const png = await textImage('HELLO 42');
  const ocr = await t.app.http().post('/api/v2/tools').set(...auth()).field('model', 'text-ocr').attach('source_image', png, 'hello.png');
  expect(ocr.body).toMatchObject({ status: 'completed', tokens_spent: 1 });
  expect(String(ocr.body.result_text).toUpperCase()).toContain('HELLO');
  const small = await sharp(png).resize(160, 40).png().toBuffer();
  const up = await t.app.http().post('/api/v2/tools').set(...auth()).field('model', 'upscale').field('scale', '2').attach('source_image', small, 's.png');
  expect(up.body).toMatchObject({ status: 'completed', result_metadata: { width: 320, height: 80 } });
}, 90_000);

it('colorizes, transfers a style and inpaints', async () => {
  const grey = await sharp({ create: { width: 96, height: 96, channels: 3, background: { r: 128, g: 128, b: 128 } } })
    .composite([{ input: Buffer.from('<svg width="96" height="96"><circle cx="48" cy="48" r="30" fill="#222"/></svg>') }])
    .png()
    .toBuffer();
  const color = await t.app.http().post('/api/v2/tools').set(...auth()).field('model', 'colorize').attach('source_image', grey, 'g.png');
  expect(color.body.status).toBe('completed');
  const styled = await t.app.http().post('/api/v2/tools').set(...auth()).field('model', 'style-transfer').field('style', 'sketch').attach('source_image', grey, 'g.png');
  expect(styled.body.status).toBe('completed');
  const mask = await sharp({ create: { width: 96, height: 96, channels: 3, background: '#000' } })
    .composite([{ input: Buffer.from('<svg width="96" height="96"><rect x="30" y="30" width="36" height="36" fill="#fff"/></svg>') }])
    .png()
    .toBuffer();
  const painted = await t.app.http().post('/api/v2/inpaint').set(...auth()).attach('image', grey, 'i.png').attach('mask', mask, 'm.png');
  expect(painted.body).toMatchObject({ status: 'completed', tokens_spent: 3 });
}, 90_000);

it('refuses an upscale input above the pixel cap with 422 in both forms, charging nothing', async () => {
  const big = await sharp({ create: { width: 600, height: 600, channels: 3, background: '#468' } }).png().toBuffer();
  const before = (await t.app.http().get('/api/v2/user/balance').set(...auth())).body.token_balance;
  const multipart = await t.app.http().post('/api/v2/tools').set(...auth()).field('model', 'upscale-esrgan').field('scale', '4').attach('source_image', big, 'big.png');
  expect(multipart.status).toBe(422);
  const json = await t.app.http().post('/api/v2/generate').set(...auth()).send({ model: 'upscale', image_url: `data:image/png;base64,${big.toString('base64')}`, scale: 4 });
  expect(json.status).toBe(422);
  expect((await t.app.http().get('/api/v2/user/balance').set(...auth())).body.token_balance).toBe(before);
});
