/**
 * OpenAI's video jobs (/v1/videos) driven by the official `openai` client against the real app
 * over the fake provider and a worker: create → poll → download, an input reference (uploaded or
 * by URL), list and delete over history, a failed job, every error class, another user's id 404,
 * billing and history as for the same work through /api/v2.
 */
import path from 'node:path';
import OpenAI, { toFile } from 'openai';
import sharp from 'sharp';
import { Generation } from '../shared/db/entities';
import type { VideoRequest } from '../shared/providers/types';
import { useTestApp } from './helpers/app';
import { FakeProvider } from './helpers/fake-provider';
import { moneyOf, waitFor, lastGeneration, ledgerRowsOf, rejectionOf, vipClient } from './helpers/v1-clients';

const fake = new FakeProvider('fake');
const t = useTestApp(
  { CATALOG_PATH: path.join(__dirname, 'fixtures/v1-media-catalog.json'), CONTENT_POLICY_BLOCKLIST: 'forbidden' },
  { providers: [fake.adapter()], worker: true },
);
beforeEach(() => fake.reset());

const videoCalls = (): VideoRequest[] => fake.calls.filter((c) => c.capability === 'video').map((c) => c.request as VideoRequest);

/** Polls the job until it has ended. */
async function untilEnded(openai: OpenAI, id: string): Promise<OpenAI.Videos.Video> {
  return waitFor(async () => {
    const video = await openai.videos.retrieve(id);
    return video.status === 'completed' || video.status === 'failed' ? video : undefined;
  });
}

describe('create → poll → download', () => {
  it('answers the job at once, polls it to completed, streams the mp4; charged and in history like /api/v2', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    fake.next({ kind: 'succeed', delayMs: 800 });
    const { data: job, response } = await openai.videos.create({ model: 'fake-video', prompt: 'waves at dusk', seconds: '8', size: '1280x720' }).withResponse();
    expect(response.headers.get('x-ratelimit-limit-hour')).toBe('100');
    expect(job).toMatchObject({ id: expect.stringMatching(/^video_\d+$/), object: 'video', status: expect.stringMatching(/^(queued|in_progress)$/), model: 'fake-video', seconds: '8', size: '1280x720', completed_at: null, error: null, prompt: 'waves at dusk', remixed_from_video_id: null });
    expect(job.created_at).toEqual(expect.any(Number));
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total, held: 24 });

    // While it runs: in progress with the fake's half way (saved a moment after the claim that
    // marks it started, so a poll may see it in progress at 0 first), and no content yet.
    const running = await waitFor(async () => {
      const video = await openai.videos.retrieve(job.id);
      return video.status === 'in_progress' && video.progress > 0 && video;
    });
    expect(running.progress).toBe(50);
    expect(await rejectionOf(openai.videos.downloadContent(job.id))).toBeInstanceOf(OpenAI.NotFoundError);

    const done = await untilEnded(openai, job.id);
    expect(done).toMatchObject({ status: 'completed', progress: 100, seconds: '8', size: '1280x720', error: null });
    expect(done.completed_at).toEqual(expect.any(Number));
    // vip files are kept 90 days.
    expect(done.expires_at).toBe(done.created_at + 90 * 86_400);
    expect(videoCalls().at(-1)).toMatchObject({ prompt: 'waves at dusk', durationSeconds: 8, resolution: '720p', aspectRatio: '16:9', startImage: null });

    const content = await openai.videos.downloadContent(job.id);
    expect(content.headers.get('content-type')).toBe('video/mp4');
    expect(Buffer.from(await content.arrayBuffer()).toString()).toBe('fake mp4 bytes');
    const thumbnail = await openai.videos.downloadContent(job.id, { variant: 'thumbnail' });
    expect((await sharp(Buffer.from(await thumbnail.arrayBuffer())).metadata()).format).toBe('png');
    expect(await rejectionOf(openai.videos.downloadContent(job.id, { variant: 'spritesheet' }))).toBeInstanceOf(OpenAI.NotFoundError);

    const row = await lastGeneration(t.app, user.id);
    expect(`video_${row.id}`).toBe(job.id);
    expect(row).toMatchObject({ modelSlug: 'fake-video', category: 'video', status: 'completed', tokensSpent: 24 });
    expect(await ledgerRowsOf(t.app, row.id)).toHaveLength(1);
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total - 24, held: 0 });
    const direct = await t.app.http().post('/api/v2/models/fake-video/calculate-price').send({ duration: 8, resolution: '720p' });
    expect(direct.body.token_cost).toBe(24);
  });

  it('takes an input reference uploaded as an image, or by image_url; and a JSON body', async () => {
    const { openai, user } = await vipClient(t.app);
    const png = await sharp({ create: { width: 16, height: 16, channels: 3, background: '#3366cc' } }).png().toBuffer();
    const uploaded = await openai.videos.create({ model: 'fake-video', prompt: 'from a still', input_reference: await toFile(png, 'still.png', { type: 'image/png' }), size: '720x1280' });
    await untilEnded(openai, uploaded.id);
    expect(videoCalls().at(-1)?.startImage?.equals(png)).toBe(true);
    expect(videoCalls().at(-1)).toMatchObject({ aspectRatio: '9:16', resolution: '720p' });
    const byUrl = await openai.videos.create({ model: 'fake-video', prompt: 'from a data url', input_reference: { image_url: `data:image/png;base64,${png.toString('base64')}` } });
    await untilEnded(openai, byUrl.id);
    expect(videoCalls().at(-1)?.startImage?.equals(png)).toBe(true);
    const json = await t.app.http().post('/v1/videos').set('authorization', `Bearer ${user.accessToken}`).send({ model: 'fake-video', prompt: 'as json', seconds: 12, size: '1920x1080' });
    expect(json.status).toBe(200);
    expect(json.body).toMatchObject({ object: 'video', seconds: '12', size: '1920x1080' });
    expect((await untilEnded(openai, json.body.id)).status).toBe('completed');
    expect(videoCalls().at(-1)).toMatchObject({ durationSeconds: 12, resolution: '1080p' });
  });

  it('shows a job that failed as failed, with the error, uncharged', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    fake.next({ kind: 'refuse', message: 'The video was flagged by the safety system' });
    const job = await openai.videos.create({ model: 'fake-video', prompt: 'something' });
    const failed = await untilEnded(openai, job.id);
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'content_policy_violation', message: 'The video was flagged by the safety system' } });
    expect(failed.completed_at).toEqual(expect.any(Number));
    expect(await rejectionOf(openai.videos.downloadContent(job.id))).toBeInstanceOf(OpenAI.NotFoundError);
    expect(await moneyOf(t.app, user.id)).toEqual(before);
  });

  it('replays a create with the same Idempotency-Key as the same job, charged once', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    const body = { model: 'fake-video', prompt: 'once', seconds: '4' as const };
    const first = await openai.videos.create(body, { headers: { 'Idempotency-Key': 'video-1' } });
    const second = await openai.videos.create(body, { headers: { 'Idempotency-Key': 'video-1' } });
    expect(second.id).toBe(first.id);
    await untilEnded(openai, first.id);
    expect(await moneyOf(t.app, user.id)).toEqual({ total: before.total - 12, held: 0 });
  });
});

describe('list and delete over history', () => {
  it('lists the caller\'s videos in cursor pages, newest first or oldest first, and deletes one', async () => {
    const { user, openai } = await vipClient(t.app);
    const ids: string[] = [];
    for (const prompt of ['one', 'two', 'three']) ids.push((await openai.videos.create({ model: 'fake-video', prompt })).id);
    // Not a video: never listed.
    await t.app.http().post('/api/v2/generate').set('authorization', `Bearer ${user.accessToken}`).send({ model: 'fake-image', prompt: 'still' });
    const first = await openai.videos.list({ limit: 2 });
    expect(first.data.map((v) => v.id)).toEqual([ids[2], ids[1]]);
    expect(first.has_more).toBe(true);
    const all: string[] = [];
    for await (const video of openai.videos.list({ limit: 2 })) all.push(video.id);
    expect(all).toEqual([...ids].reverse());
    const oldest: string[] = [];
    for await (const video of openai.videos.list({ order: 'asc', limit: 1 })) oldest.push(video.id);
    expect(oldest).toEqual(ids);

    const stranger = await vipClient(t.app);
    expect((await stranger.openai.videos.list()).data).toEqual([]);

    await untilEnded(openai, ids[0] as string);
    expect(await openai.videos.delete(ids[0] as string)).toEqual({ id: ids[0], object: 'video.deleted', deleted: true });
    expect(await rejectionOf(openai.videos.retrieve(ids[0] as string))).toBeInstanceOf(OpenAI.NotFoundError);
    const listed: string[] = [];
    for await (const video of openai.videos.list()) listed.push(video.id);
    expect(listed).toEqual([ids[2], ids[1]]);
    const history = await t.app.http().get('/api/v2/user/history?category=video').set('authorization', `Bearer ${user.accessToken}`);
    expect(history.body.items.map((i: { id: number }) => `video_${i.id}`)).toEqual([ids[2], ids[1]]);
  });

  it("answers another user's video id, and an id that is not a video, 404 like an unknown one, changing nothing", async () => {
    const owner = await vipClient(t.app);
    const job = await owner.openai.videos.create({ model: 'fake-video', prompt: 'mine' });
    await untilEnded(owner.openai, job.id);
    const image = await t.app.http().post('/api/v2/generate').set('authorization', `Bearer ${owner.user.accessToken}`).send({ model: 'fake-image', prompt: 'not a video' });
    const other = await vipClient(t.app);
    for (const id of [job.id, 'video_2147000000']) {
      for (const call of [() => other.openai.videos.retrieve(id), () => other.openai.videos.downloadContent(id), () => other.openai.videos.delete(id)]) {
        const error = await rejectionOf(call());
        expect(error).toBeInstanceOf(OpenAI.NotFoundError);
        expect(error).toMatchObject({ code: 'not_found' });
      }
    }
    expect(await rejectionOf(owner.openai.videos.retrieve(`video_${image.body.id}`))).toBeInstanceOf(OpenAI.NotFoundError);
    expect(await t.app.container.db.repo(Generation).findOneByOrFail({ id: Number(job.id.replace('video_', '')) })).toMatchObject({ status: 'completed', hiddenAt: null });
  });
});

describe('errors, as the client library raises them', () => {
  it('refuses bad fields with 400 naming the parameter, before any provider call or charge', async () => {
    const { user, openai } = await vipClient(t.app);
    const before = await moneyOf(t.app, user.id);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ model: 'fake-video', prompt: 'x', size: '1792x1024' }, 'size'],
      [{ model: 'fake-video', prompt: 'x', seconds: '5' }, 'seconds'],
      [{ model: 'fake-video', prompt: 'x', seconds: 'four' }, 'seconds'],
      [{ model: 'fake-video', prompt: 'x', input_reference: { file_id: 'file_1' } }, 'input_reference'],
      [{ model: 'fake-video', prompt: 'x', input_reference: { image_url: 'http://127.0.0.2:9/x.png' } }, 'input_reference'],
      [{ model: 'fake-video', prompt: '  ' }, 'prompt'],
      [{ model: 'fake-video' }, 'prompt'],
      [{ prompt: 'x' }, 'model'],
      [{ model: 'fake-image', prompt: 'x' }, 'model'],
    ];
    for (const [body, param] of cases) {
      const error = await rejectionOf(openai.videos.create(body as unknown as OpenAI.Videos.VideoCreateParams));
      expect({ body, error }).toMatchObject({ body, error: { status: 400, type: 'invalid_request_error', param } });
    }
    const unknown = await rejectionOf(openai.videos.create({ model: 'sora-2', prompt: 'x' }));
    expect(unknown).toMatchObject({ status: 404, code: 'model_not_found' });
    const notImage = await rejectionOf(openai.videos.create({ model: 'fake-video', prompt: 'x', input_reference: await toFile(Buffer.from('text'), 'a.png') }));
    expect(notImage).toMatchObject({ status: 415 });
    const policy = await rejectionOf(openai.videos.create({ model: 'fake-video', prompt: 'a forbidden scene' }));
    expect(policy).toMatchObject({ status: 400, code: 'content_policy_violation' });
    const list = await rejectionOf(openai.videos.list({ limit: 500 }));
    expect(list).toMatchObject({ status: 400, param: 'limit' });
    expect(fake.calls).toEqual([]);
    // Only the content policy's refusal is a generation (failed, uncharged), as through /api/v2.
    expect((await t.app.container.db.repo(Generation).findBy({ userId: user.id })).map((g) => [g.status, g.tokensSpent])).toEqual([['failed', 0]]);
    expect(await moneyOf(t.app, user.id)).toEqual(before);
  });
});
