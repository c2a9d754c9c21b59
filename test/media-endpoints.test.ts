/**
 * The multipart endpoints (spec 4.2–4.4): POST /stt, /tools, /inpaint with their polling paths;
 * uploads are limited in size while streaming (413), typed from their bytes (415), checked
 * against decompression bombs, and a refused upload stores and charges nothing.
 */
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { Generation } from '../shared/db/entities';
import { useTestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { bombPng } from './helpers/bomb-png';
import { registerUser, TestUser } from './helpers/users';

const fake = new FakeProvider('fake');
const t = useTestApp({ CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json') }, { providers: [fake.adapter()], worker: true });

let png: Buffer;
const wav = Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from('WAVEfmt '), Buffer.alloc(200)]);

beforeAll(async () => {
  png = await sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 200, g: 30, b: 30 } } }).png().toBuffer();
});
beforeEach(() => fake.reset());

function auth(user: TestUser): [string, string] {
  return ['authorization', `Bearer ${user.accessToken}`];
}

async function tokens(user: TestUser): Promise<number> {
  return (await t.app.http().get('/api/v2/user/balance').set(...auth(user))).body.token_balance;
}

function uploadsDir(): string {
  return path.join(t.app.stores.dataDir, 'files', 'uploads');
}

function countUploads(): number {
  const walk = (dir: string): number =>
    fs.existsSync(dir) ? fs.readdirSync(dir, { withFileTypes: true }).reduce((n, e) => n + (e.isDirectory() ? walk(path.join(dir, e.name)) : 1), 0) : 0;
  return walk(uploadsDir());
}

describe('POST /stt', () => {
  it('transcribes an uploaded file: shape A, 2 tokens, pollable at /stt/{id}', async () => {
    const user = await registerUser(t.app);
    const res = await t.app.http().post('/api/v2/stt').set(...auth(user)).field('model', 'fake-stt').field('language', 'en').attach('audio', wav, 'clip.wav');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: expect.any(Number), status: 'completed', model_slug: 'fake-stt', result_text: 'hello world', tokens_spent: 2, processing_ms: expect.any(Number) });
    const request = fake.calls[0]?.request as { audio: Buffer; language: string };
    expect(request.audio.equals(wav)).toBe(true);
    expect(request.language).toBe('en');
    expect(await tokens(user)).toBe(48);
    const polled = await t.app.http().get(`/api/v2/stt/${res.body.id}`).set(...auth(user));
    expect(polled.body.result_text).toBe('hello world');
    // Uploaded inputs are never served.
    expect(countUploads()).toBeGreaterThan(0);
  });

  it('labels speakers only on the diarization model', async () => {
    const user = await registerUser(t.app);
    const ok = await t.app.http().post('/api/v2/stt').set(...auth(user)).field('model', 'fake-diarize').field('diarize', 'true').attach('audio', wav, 'a.wav');
    expect(ok.body.result_text).toMatch(/\[Speaker 1\]: hello/);
    const refused = await t.app.http().post('/api/v2/stt').set(...auth(user)).field('model', 'fake-stt').field('diarize', 'true').attach('audio', wav, 'a.wav');
    expect(refused.status).toBe(422);
  });

  it('answers 422 for a language an English-only model does not know', async () => {
    const user = await registerUser(t.app);
    const res = await t.app.http().post('/api/v2/stt').set(...auth(user)).field('model', 'fake-stt').field('language', 'ru').attach('audio', wav, 'a.wav');
    expect(res.status).toBe(422);
    expect(res.body.errors[0].field).toBe('language');
  });

  it.each([
    ['an image instead of audio', () => ({ name: 'x.mp3', bytes: png }), 415],
    ['an empty file', () => ({ name: 'x.wav', bytes: Buffer.alloc(0) }), 422],
    ['a file over 25 MB', () => ({ name: 'x.wav', bytes: Buffer.concat([wav, Buffer.alloc(26 * 1024 * 1024)]) }), 413],
  ])('refuses %s, storing and charging nothing', async (_label, file, status) => {
    const user = await registerUser(t.app);
    const before = countUploads();
    const { name, bytes } = file();
    const res = await t.app.http().post('/api/v2/stt').set(...auth(user)).field('model', 'fake-stt').attach('audio', bytes, name);
    expect(res.status).toBe(status);
    expect(countUploads()).toBe(before);
    expect(await tokens(user)).toBe(50);
    expect(await t.app.container.db.repo(Generation).countBy({ userId: user.id })).toBe(0);
  });

  it('says which limit a 413 passed: the size of a file, or the number of files or fields', async () => {
    const user = await registerUser(t.app);
    const big = await t.app.http().post('/api/v2/stt').set(...auth(user)).field('model', 'fake-stt').attach('audio', Buffer.concat([wav, Buffer.alloc(26 * 1024 * 1024)]), 'x.wav');
    expect(big.body).toEqual({ detail: 'Files may be at most 25 MB', code: 'payload_too_large' });
    const twoFiles = await t.app.http().post('/api/v2/stt').set(...auth(user)).field('model', 'fake-stt').attach('audio', wav, 'a.wav').attach('other', wav, 'b.wav');
    expect(twoFiles.status).toBe(413);
    expect(twoFiles.body).toEqual({ detail: 'At most 1 file may be sent', code: 'payload_too_large' });
    let form = t.app.http().post('/api/v2/stt').set(...auth(user)).field('model', 'fake-stt');
    for (let i = 0; i < 25; i++) form = form.field(`extra${i}`, 'x');
    const fields = await form.attach('audio', wav, 'a.wav');
    expect(fields.status).toBe(413);
    expect(fields.body).toEqual({ detail: 'The form has too many fields', code: 'payload_too_large' });
  });

  it('needs a file, a known stt model, and multipart', async () => {
    const user = await registerUser(t.app);
    expect((await t.app.http().post('/api/v2/stt').set(...auth(user)).field('model', 'fake-stt')).status).toBe(422);
    expect((await t.app.http().post('/api/v2/stt').set(...auth(user)).field('model', 'fake-ocr').attach('audio', wav, 'a.wav')).status).toBe(422);
    expect((await t.app.http().post('/api/v2/stt').set(...auth(user)).field('model', 'nope').attach('audio', wav, 'a.wav')).status).toBe(404);
    expect((await t.app.http().post('/api/v2/stt').set(...auth(user)).send({ model: 'fake-stt' })).status).toBe(415);
    expect((await t.app.http().post('/api/v2/stt').field('model', 'fake-stt').attach('audio', wav, 'a.wav')).status).toBe(401);
  });
});

describe('POST /tools and /inpaint', () => {
  it('runs a tool on an uploaded image; text tools answer in result_text', async () => {
    const user = await registerUser(t.app);
    const res = await t.app.http().post('/api/v2/tools').set(...auth(user)).field('model', 'fake-ocr').attach('source_image', png, 'text.png');
    expect(res.body).toMatchObject({ status: 'completed', result_text: 'recognized text', tokens_spent: 1 });
    const polled = await t.app.http().get(`/api/v2/tools/${res.body.id}`).set(...auth(user));
    expect(polled.body.status).toBe('completed');
    const stranger = await registerUser(t.app);
    expect((await t.app.http().get(`/api/v2/tools/${res.body.id}`).set(...auth(stranger))).status).toBe(404);
  });

  it('face swap needs both images and hands the target to the tool', async () => {
    const user = await registerUser(t.app);
    const missing = await t.app.http().post('/api/v2/tools').set(...auth(user)).field('model', 'face-swap').attach('source_image', png, 's.png');
    expect(missing.status).toBe(422);
    const target = await sharp({ create: { width: 32, height: 32, channels: 3, background: '#0000ff' } }).png().toBuffer();
    const res = await t.app.http().post('/api/v2/tools').set(...auth(user)).field('model', 'face-swap').attach('source_image', png, 's.png').attach('target_image', target, 't.png');
    expect(res.body.status).toBe('completed');
    const request = fake.calls[0]?.request as { image: Buffer; secondImage: Buffer };
    expect(request.image.equals(png)).toBe(true);
    expect(request.secondImage.equals(target)).toBe(true);
    expect(res.body.result_url).toMatch(/\/files\/results\//);
  });

  it('passes the scale of the upscaler and refuses one it does not have', async () => {
    const user = await registerUser(t.app);
    const ok = await t.app.http().post('/api/v2/tools').set(...auth(user)).field('model', 'fake-upscale').field('scale', '4').attach('source_image', png, 's.png');
    expect(ok.body.status).toBe('completed');
    expect((fake.calls[0]?.request as { params: { scale: number } }).params.scale).toBe(4);
    const bad = await t.app.http().post('/api/v2/tools').set(...auth(user)).field('model', 'fake-upscale').field('scale', '3').attach('source_image', png, 's.png');
    expect(bad.status).toBe(422);
  });

  it('inpaints with an image and a mask for 3 tokens', async () => {
    const user = await registerUser(t.app);
    const res = await t.app.http().post('/api/v2/inpaint').set(...auth(user)).field('prompt', 'remove the dot').attach('image', png, 'i.png').attach('mask', png, 'm.png');
    expect(res.body).toMatchObject({ status: 'completed', tokens_spent: 3, model_slug: 'inpaint' });
    expect((await t.app.http().get(`/api/v2/inpaint/gen_${res.body.id}`).set(...auth(user))).body.id).toBe(res.body.id);
    expect((await t.app.http().post('/api/v2/inpaint').set(...auth(user)).attach('image', png, 'i.png')).status).toBe(422);
  });

  it.each([
    ['a non-image', () => wav, 415],
    ['a truncated PNG', () => png.subarray(0, 40), 422],
    ['a decompression bomb', bombPng, 422],
  ])('refuses %s, charging nothing', async (_label, bytes, status) => {
    const user = await registerUser(t.app);
    const res = await t.app.http().post('/api/v2/tools').set(...auth(user)).field('model', 'fake-ocr').attach('source_image', bytes(), 'x.png');
    expect(res.status).toBe(status);
    expect(await tokens(user)).toBe(50);
    expect(fake.calls).toHaveLength(0);
  });
});

describe('files of deleted generations', () => {
  it('removes the uploads with the generation', async () => {
    const user = await registerUser(t.app);
    const before = countUploads();
    const res = await t.app.http().post('/api/v2/tools').set(...auth(user)).field('model', 'fake-ocr').attach('source_image', png, 's.png');
    expect(countUploads()).toBe(before + 1);
    expect((await t.app.http().delete(`/api/v2/user/history/${res.body.id}`).set(...auth(user))).status).toBe(204);
    expect(countUploads()).toBe(before);
  });
});
