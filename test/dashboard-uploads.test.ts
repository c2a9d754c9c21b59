/**
 * Uploads in the playground (real Chromium): a recording for speech-to-text, a picture for an
 * image tool, a picture and a second one for face swap; each goes to the multipart route and its
 * result is shown.
 */
import path from 'node:path';
import type { Page } from 'playwright-core';
import sharp from 'sharp';
import { pcmToWav } from '../shared/media/wav';
import { FakeProvider } from './helpers/fake-provider';
import { useDashboard } from './helpers/browser';
import './helpers/locator-matchers';
import { userOnPlan } from './helpers/users';

const CATALOG_PATH = path.join(__dirname, 'fixtures/catalog.json');

function tone(): Buffer {
  const rate = 16_000;
  const pcm = Buffer.alloc(rate); // half a second of 16-bit samples
  for (let i = 0; i < rate / 2; i++) pcm.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate)), i * 2);
  return pcmToWav(pcm, rate);
}

describe('uploads in the playground', () => {
  const fake = new FakeProvider('fake');
  const d = useDashboard({ CATALOG_PATH }, { providers: [fake.adapter()] });
  let page: Page;

  beforeAll(async () => {
    const user = await userOnPlan(d.rig.app, 'basic');
    ({ page } = await d.rig.newPage());
    await page.goto('/sign-in');
    await page.getByLabel('E-mail').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/overview');
    await page.getByRole('link', { name: 'Playground' }).click();
  });

  it('transcribes an uploaded recording', async () => {
    await page.getByLabel('Model').selectOption('fake-stt');
    await page.getByLabel('Audio file').setInputFiles({ name: 'hello.wav', mimeType: 'audio/wav', buffer: tone() });
    await expect(page.getByTestId('price')).toHaveTextLater('Price: 2 tokens');
    await page.getByRole('button', { name: 'Generate for 2 tokens' }).click();
    await page.getByTestId('charged').waitFor();
    expect(await page.getByTestId('output-media').textContent()).toBe('hello world');
    const call = fake.calls.at(-1);
    expect(call?.capability).toBe('transcription');
  });

  it('runs an image tool on an uploaded picture', async () => {
    const png = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#3366cc' } }).png().toBuffer();
    await page.getByLabel('Model').selectOption('fake-ocr');
    await page.getByLabel('Image', { exact: true }).setInputFiles({ name: 'scan.png', mimeType: 'image/png', buffer: png });
    await expect(page.getByTestId('price')).toHaveTextLater('Price: 1 token');
    await page.getByRole('button', { name: 'Generate for 1 token' }).click();
    await page.getByTestId('charged').waitFor();
    expect(await page.getByTestId('output-media').textContent()).toBe('recognized text');

    await page.getByLabel('Model').selectOption('face-swap');
    expect(await page.getByLabel('Image', { exact: true }).inputValue()).toBe(''); // a new model starts empty
    await page.getByLabel('Image', { exact: true }).setInputFiles({ name: 'face.png', mimeType: 'image/png', buffer: png });
    await page.getByLabel('Target image', { exact: true }).setInputFiles({ name: 'target.png', mimeType: 'image/png', buffer: png });
    await page.getByRole('button', { name: 'Generate for 1 token' }).click();
    await page.getByTestId('output-media').locator('img').waitFor();
    expect(fake.calls.at(-1)?.capability).toBe('tool');
    // Both pictures went up: the tool got the second one as its target.
    expect(JSON.stringify(fake.calls.at(-1)?.request)).toMatch(/target/i);
  });

  it('paints the inpainting mask on the picture: white where painted, black elsewhere, the size of the picture', async () => {
    const png = await sharp({ create: { width: 200, height: 100, channels: 3, background: '#88aa44' } }).png().toBuffer();
    await page.getByLabel('Model').selectOption('inpaint');
    await page.getByLabel('Image', { exact: true }).setInputFiles({ name: 'photo.png', mimeType: 'image/png', buffer: png });
    const canvas = page.getByTestId('mask-canvas');
    await canvas.waitFor();
    // A stroke across the left quarter of the picture, in the canvas's shown (scaled) size.
    const box = await canvas.boundingBox();
    if (!box) throw new Error('no canvas box');
    await page.mouse.move(box.x + box.width * 0.1, box.y + box.height * 0.5);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.2, box.y + box.height * 0.5, { steps: 8 });
    await page.mouse.up();
    await expect(page.getByTestId('price')).toHaveTextLater('Price: 3 tokens');
    const before = fake.calls.length;
    await page.getByRole('button', { name: 'Generate for 3 tokens' }).click();
    await page.getByTestId('charged').waitFor();
    const call = fake.calls.slice(before).find((c) => c.capability === 'tool')?.request as { tool: string; secondImage: Buffer | null };
    expect(call.tool).toBe('inpaint');
    if (!call.secondImage) throw new Error('no mask sent');
    const mask = await sharp(call.secondImage).greyscale().raw().toBuffer({ resolveWithObject: true });
    expect([mask.info.width, mask.info.height]).toEqual([200, 100]);
    const pixel = (x: number, y: number): number => mask.data[y * mask.info.width + x] ?? -1;
    expect(pixel(30, 50)).toBeGreaterThan(200); // painted
    expect(pixel(150, 50)).toBeLessThan(50); // not painted
  });
});
