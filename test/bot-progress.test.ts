/**
 * Progress and results in the bot: chat actions while work runs (and none after), chat replies
 * streamed as native drafts in private chats (edits in groups, and on a Bot API server without
 * sendMessageDraft, remembered per process), and results that close the loop: the "started"
 * message says done, the caption names the model, the price and the balance left (en/ru), and
 * the buttons run it again (once, however often pressed), reopen the dialog with a new prompt, or
 * run a related tool on the result, for the owner only. The bot (long polling), the API and the
 * worker run for real against the fake Bot API and a fake provider.
 */
import path from 'node:path';
import { startBot } from '../bot/run';
import type { Generation } from '../shared/db/entities';
import { BotDelivery } from '../shared/db/entities';
import type { Stoppable } from '../shared/lifecycle';
import { CHAT_ACTION_INTERVAL_MS } from '../shared/telegram/chat-action';
import { startTestApp, TestApp } from './helpers/app';
import { telegramCharges, telegramGenerations } from './helpers/telegram-accounts';
import { FakeProvider } from './helpers/fake-provider';
import { BOT_USER, FakeTelegram, RecordedCall, TgUser } from './helpers/fake-telegram';

const fake = new FakeProvider('fake');
const tg = new FakeTelegram();
let app: TestApp;
let bot: Stoppable;

beforeAll(async () => {
  await tg.start();
  app = await startTestApp(
    { CATALOG_PATH: path.join(__dirname, 'fixtures/bot-progress-catalog.json'), TELEGRAM_BOT_TOKEN: '123456:TEST-token', TELEGRAM_API_ROOT: tg.url },
    { providers: [fake.adapter()], worker: true },
  );
  bot = await startBot(app.container);
});

afterAll(async () => {
  await bot?.stop();
  await app?.close();
  await tg.stop();
});

beforeEach(() => fake.reset());

let nextId = 9100;
function person(language_code = 'en'): TgUser {
  const id = nextId++;
  return { id, is_bot: false, first_name: 'Lee', username: `progress${id}`, language_code };
}

const generationsOf = (telegramId: number): Promise<Generation[]> => telegramGenerations(app, telegramId);
const charges = async (telegramId: number): Promise<number[]> => (await telegramCharges(app, telegramId)).map((e) => e.amount);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function waitForText(chatId: number, pattern: RegExp): Promise<RecordedCall> {
  return tg.waitFor(() => tg.calls.find((c) => Number(c.params.chat_id) === chatId && pattern.test(String(c.params.text ?? ''))));
}

function buttons(call: RecordedCall): string[] {
  const markup = call.params.reply_markup as { inline_keyboard?: Array<Array<{ callback_data?: string }>> } | undefined;
  return (markup?.inline_keyboard ?? []).flat().map((b) => b.callback_data ?? '');
}

function labels(call: RecordedCall): string[] {
  const markup = call.params.reply_markup as { inline_keyboard?: Array<Array<{ text?: string }>> } | undefined;
  return (markup?.inline_keyboard ?? []).flat().map((b) => b.text ?? '');
}

/** The person's generations once `count` of them have ended. */
async function settled(telegramId: number, count: number): Promise<Generation[]> {
  for (let i = 0; i < 1200; i++) {
    const rows = await generationsOf(telegramId).catch(() => []);
    if (rows.length >= count && rows.every((g) => g.status !== 'pending')) return rows;
    await sleep(25);
  }
  throw new Error('generations did not end');
}

async function delivered(generationId: number): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const row = await app.container.db.repo(BotDelivery).findOneBy({ generationId });
    if (row && row.state !== 'pending' && row.state !== 'delivering') return;
    await sleep(25);
  }
  throw new Error(`delivery of ${generationId} did not end`);
}

/** The index in the recorded calls of the first call `find` matches. */
function indexOf(find: (c: RecordedCall) => boolean): number {
  return tg.calls.findIndex(find);
}

/** /image with fake-image at its default size, confirmed: resolves once the photo was sent. */
async function orderImage(who: TgUser, prompt: string): Promise<{ photo: RecordedCall; startedId: number; generation: Generation }> {
  tg.message(who, '/image');
  await tg.waitFor(() => tg.callsOf('sendMessage', who.id).find((c) => buttons(c).includes('img:m:fake-image')));
  tg.press(who, 'img:m:fake-image');
  await tg.waitFor(() => tg.callsOf('sendMessage', who.id).length >= 2);
  tg.message(who, prompt);
  await tg.waitFor(() => tg.callsOf('sendMessage', who.id).find((c) => buttons(c).includes('img:o:1024x1024')));
  tg.press(who, 'img:o:1024x1024');
  await tg.waitFor(() => tg.callsOf('sendMessage', who.id).find((c) => buttons(c).includes('img:go')));
  const before = tg.callsOf('sendPhoto', who.id).length;
  tg.press(who, 'img:go');
  const photo = await tg.waitFor(() => tg.callsOf('sendPhoto', who.id)[before]);
  const generation = (await generationsOf(who.id)).at(-1) as Generation;
  const row = await app.container.db.repo(BotDelivery).findOneByOrFail({ generationId: generation.id });
  return { photo, startedId: row.messageId ?? 0, generation };
}

describe('chat actions while work runs', () => {
  it('repeats "typing" during a slow chat turn and "sending a video" during a slow video, and stops when each ends', async () => {
    const ann = person();
    const vic = person();
    // Both provider calls take two action intervals and more.
    const slow = CHAT_ACTION_INTERVAL_MS * 2 + 500;
    fake.next({ kind: 'succeed', delayMs: slow }, { kind: 'succeed', delayMs: slow });
    tg.message(ann, 'think slowly');
    tg.message(vic, '/video');
    await tg.waitFor(() => tg.callsOf('sendMessage', vic.id).find((c) => buttons(c).includes('vid:m:fake-video')));
    tg.press(vic, 'vid:m:fake-video');
    await tg.waitFor(() => tg.callsOf('sendMessage', vic.id).length >= 2);
    tg.message(vic, 'waves');
    for (const option of ['vid:o:5', 'vid:o:16:9']) {
      await tg.waitFor(() => tg.callsOf('sendMessage', vic.id).find((c) => buttons(c).includes(option)));
      tg.press(vic, option);
    }
    await tg.waitFor(() => tg.callsOf('sendMessage', vic.id).find((c) => buttons(c).includes('vid:go')));
    tg.press(vic, 'vid:go');

    const video = await tg.waitFor(() => tg.callsOf('sendVideo', vic.id)[0], 30_000);
    const [turn] = await settled(ann.id, 1);
    await delivered((turn as Generation).id);
    const reply = indexOf((c) => Number(c.params.chat_id) === ann.id && c.method === 'sendMessage' && c.params.text === fake.reply);
    const editedReply = indexOf((c) => Number(c.params.chat_id) === ann.id && c.method === 'editMessageText' && c.params.text === fake.reply);
    const annDone = Math.max(reply, editedReply);
    expect(annDone).toBeGreaterThan(0);
    const videoAt = tg.calls.indexOf(video);

    const actionsOf = (chatId: number) => tg.calls.map((c, i) => ({ c, i })).filter(({ c }) => c.method === 'sendChatAction' && Number(c.params.chat_id) === chatId);
    expect(actionsOf(ann.id).filter(({ i }) => i < annDone).length).toBeGreaterThanOrEqual(2);
    expect(actionsOf(ann.id).every(({ c }) => c.params.action === 'typing')).toBe(true);
    expect(actionsOf(vic.id).filter(({ i }) => i < videoAt).length).toBeGreaterThanOrEqual(2);
    expect(actionsOf(vic.id).every(({ c }) => c.params.action === 'upload_video')).toBe(true);

    // Longer than an interval after both ended: no action was sent after the result.
    await sleep(CHAT_ACTION_INTERVAL_MS + 500);
    expect(actionsOf(ann.id).filter(({ i }) => i > annDone)).toEqual([]);
    expect(actionsOf(vic.id).filter(({ i }) => i > videoAt)).toEqual([]);
  });

  it('stops the action when the run fails', async () => {
    const uma = person();
    fake.next({ kind: 'unavailable' });
    tg.message(uma, 'this one fails');
    const failure = await waitForText(uma.id, /failed/);
    const at = tg.calls.indexOf(failure);
    await sleep(CHAT_ACTION_INTERVAL_MS + 500);
    expect(tg.calls.slice(at + 1).filter((c) => c.method === 'sendChatAction' && Number(c.params.chat_id) === uma.id)).toEqual([]);
  });
});

describe('draft streaming', () => {
  it('streams a private chat reply into a native draft, then sends the final message', async () => {
    fake.reply = Array.from({ length: 400 }, (_, i) => `w${i}`).join(' ');
    const dee = person();
    tg.message(dee, 'a long answer please');
    const [turn] = await settled(dee.id, 1);
    const generation = turn as Generation;
    await delivered(generation.id);
    const drafts = tg.callsOf('sendMessageDraft', dee.id);
    expect(drafts.length).toBeGreaterThanOrEqual(1);
    for (const draft of drafts) {
      expect(draft.params.draft_id).toBe(generation.id);
      expect(fake.reply.startsWith(String(draft.params.text))).toBe(true);
    }
    // The "…" placeholder gave way to the draft; the reply is a new message, not an edit.
    const placeholder = tg.callsOf('sendMessage', dee.id)[0];
    expect(placeholder?.params.text).toBe('…');
    const row = await app.container.db.repo(BotDelivery).findOneByOrFail({ generationId: generation.id });
    expect(tg.callsOf('deleteMessage', dee.id).map((c) => c.params.message_id)).toEqual([row.messageId]);
    expect(tg.callsOf('sendMessage', dee.id).at(-1)?.params.text).toBe(fake.reply);
    expect(tg.callsOf('editMessageText', dee.id)).toEqual([]);
    expect(tg.calls.indexOf(drafts.at(-1) as RecordedCall)).toBeLessThan(tg.calls.indexOf(tg.callsOf('sendMessage', dee.id).at(-1) as RecordedCall));
  });

  it('sends the reply anew when a retried delivery finds its placeholder gone for the draft', async () => {
    fake.reply = Array.from({ length: 400 }, (_, i) => `r${i}`).join(' ');
    const rob = person();
    // The final send meets a flood wait longer than the client waits: the job is retried.
    tg.failNext('sendMessage', { error_code: 429, description: 'Too Many Requests: retry after 60', parameters: { retry_after: 60 }, chatId: rob.id, text: fake.reply });
    tg.message(rob, 'a long answer, twice');
    const [turn] = await settled(rob.id, 1);
    await delivered((turn as Generation).id);
    expect(tg.callsOf('deleteMessage', rob.id)).toHaveLength(1);
    const replies = tg.callsOf('sendMessage', rob.id).filter((c) => c.params.text === fake.reply);
    expect(replies).toHaveLength(2);
    expect((await app.container.db.repo(BotDelivery).findOneByOrFail({ generationId: (turn as Generation).id })).state).toBe('delivered');
    expect(await charges(rob.id)).toHaveLength(1);
  });

  it('streams by editing in a group (drafts are for private chats)', async () => {
    fake.reply = Array.from({ length: 300 }, (_, i) => `g${i}`).join(' ');
    const gil = person();
    const group = { id: -9191, type: 'group' as const, title: 'Team' };
    tg.message(gil, `@${BOT_USER.username} tell us`, group);
    const [turn] = await settled(gil.id, 1);
    await delivered((turn as Generation).id);
    expect(tg.callsOf('sendMessageDraft', group.id)).toEqual([]);
    expect(tg.callsOf('editMessageText', group.id).at(-1)?.params.text).toBe(fake.reply);
  });

  // Last in this file: the process remembers that drafts are missing.
  it('falls back to edits on a Bot API server without sendMessageDraft, and does not ask again', async () => {
    tg.supportsDrafts = false;
    try {
      fake.reply = Array.from({ length: 300 }, (_, i) => `o${i}`).join(' ');
      const old = person();
      tg.message(old, 'first');
      const [first] = await settled(old.id, 1);
      await delivered((first as Generation).id);
      expect(tg.callsOf('sendMessageDraft', old.id)).toHaveLength(1);
      const row = await app.container.db.repo(BotDelivery).findOneByOrFail({ generationId: (first as Generation).id });
      expect(tg.textOf(old.id, row.messageId ?? 0)).toBe(fake.reply);
      expect(tg.callsOf('deleteMessage', old.id)).toEqual([]);

      tg.message(old, 'second');
      const rows = await settled(old.id, 2);
      await delivered((rows[1] as Generation).id);
      expect(tg.callsOf('sendMessageDraft', old.id)).toHaveLength(1);
      expect(tg.callsOf('editMessageText', old.id).at(-1)?.params.text).toBe(fake.reply);
    } finally {
      tg.supportsDrafts = true;
    }
  });
});

describe('results close the loop', () => {
  it('says done in the started message, captions the model, price and balance, and offers Again, Change prompt and tools', async () => {
    const kim = person();
    const { photo, startedId, generation } = await orderImage(kim, 'a red fox');
    expect(tg.callsOf('editMessageText', kim.id).find((c) => c.params.message_id === startedId)?.params.text).toBe('✅ Done');
    expect(tg.textOf(kim.id, startedId)).toBe('✅ Done');
    expect(photo.params.caption).toBe('a red fox\n\nFake image · 4 tokens · 46 tokens left');
    expect(buttons(photo)).toEqual([`res:a:${generation.id}`, `res:p:${generation.id}`, `res:t:upscale-esrgan:${generation.id}`, `res:t:remove-bg:${generation.id}`]);
    expect(labels(photo)).toEqual(['🔁 Again · 4 tokens', '✏️ Change prompt', '🔍 Upscale', '✂️ Remove background']);
    for (const data of buttons(photo)) expect(Buffer.byteLength(data)).toBeLessThanOrEqual(64);
  });

  it('in Russian, with the plural forms', async () => {
    const ivan = person('ru');
    const { photo, startedId } = await orderImage(ivan, 'рыжая лиса');
    expect(tg.textOf(ivan.id, startedId)).toBe('✅ Готово');
    expect(photo.params.caption).toBe('рыжая лиса\n\nFake image · 4 токена · осталось 46 токенов');
    expect(labels(photo).slice(0, 2)).toEqual(['🔁 Ещё раз · 4 токена', '✏️ Изменить запрос']);
    // A related tool's result: "1 токен".
    const tool = buttons(photo).find((b) => b.startsWith('res:t:remove-bg:')) as string;
    tg.press(ivan, tool);
    const result = await tg.waitFor(() => tg.callsOf('sendPhoto', ivan.id)[1]);
    expect(result.params.caption).toBe('Fake remove background · 1 токен · осталось 45 токенов');
  });

  it('Again makes exactly one new generation, charged once, even when pressed twice quickly', async () => {
    const amy = person();
    const { photo, generation } = await orderImage(amy, 'a lighthouse');
    tg.press(amy, `res:a:${generation.id}`);
    tg.press(amy, `res:a:${generation.id}`);
    const again = await tg.waitFor(() => tg.callsOf('sendPhoto', amy.id)[1]);
    const rows = await settled(amy.id, 2);
    expect(rows).toHaveLength(2);
    expect(rows[1]).toMatchObject({ modelSlug: 'fake-image', prompt: 'a lighthouse', status: 'completed', tokensSpent: 4 });
    // The same request, a new variation: its own seed.
    const [first, second] = fake.calls.filter((c) => c.capability === 'image').slice(-2).map((c) => c.request as { prompt: string; width: number; seed: number });
    expect(second).toMatchObject({ prompt: first?.prompt, width: first?.width });
    expect(second?.seed).not.toBe(first?.seed);
    expect(again.params.caption).toBe('a lighthouse\n\nFake image · 4 tokens · 42 tokens left');
    // The second press was told the first one started it.
    await tg.waitFor(() => tg.callsOf('answerCallbackQuery').find((c) => c.params.text === 'Already started: the result will come below.'));
    await sleep(500);
    expect(await generationsOf(amy.id)).toHaveLength(2);
    expect(await charges(amy.id)).toEqual([-4, -4]);
    expect(tg.callsOf('sendPhoto', amy.id)).toHaveLength(2);
    expect(buttons(again)[0]).toBe(`res:a:${(rows[1] as Generation).id}`);
    expect(buttons(photo)[0]).not.toBe(buttons(again)[0]);
  });

  it('Again works again after a run of it failed (nothing was charged for that one)', async () => {
    const rex = person();
    const { generation } = await orderImage(rex, 'a comet');
    fake.next({ kind: 'refuse', message: 'Content policy violation' });
    tg.press(rex, `res:a:${generation.id}`);
    const rows = await settled(rex.id, 2);
    expect(rows[1]?.status).toBe('failed');
    await delivered((rows[1] as Generation).id);
    tg.press(rex, `res:a:${generation.id}`);
    const again = await tg.waitFor(() => tg.callsOf('sendPhoto', rex.id)[1]);
    const after = await settled(rex.id, 3);
    expect(after.map((g) => g.status)).toEqual(['completed', 'failed', 'completed']);
    expect(after[2]?.idempotencyKey).toBe(`tg-again-${generation.id}:${(rows[1] as Generation).id}`);
    expect(again.params.caption).toBe('a comet\n\nFake image · 4 tokens · 42 tokens left');
    expect(await charges(rex.id)).toEqual([-4, -4]);
  });

  it('a related tool runs on the result picture', async () => {
    const ted = person();
    const { generation } = await orderImage(ted, 'a cat');
    tg.press(ted, `res:t:upscale-esrgan:${generation.id}`);
    await waitForText(ted.id, /^🔍 Upscaling…$/);
    const result = await tg.waitFor(() => tg.callsOf('sendPhoto', ted.id)[1]);
    const rows = await settled(ted.id, 2);
    expect(rows[1]).toMatchObject({ modelSlug: 'fake-upscale', category: 'tool', status: 'completed', tokensSpent: 2 });
    const call = fake.calls.filter((c) => c.capability === 'tool').at(-1)?.request as { tool: string; image: Buffer };
    expect(call.tool).toBe('upscale-esrgan');
    const stored = await app.container.storage.readAll(generation.resultKey as string);
    expect(call.image.equals(stored)).toBe(true);
    expect(result.params.caption).toBe('Fake upscale · 2 tokens · 44 tokens left');
    expect(await charges(ted.id)).toEqual([-4, -2]);
  });

  it('Change prompt asks only for the prompt and keeps the model and options', async () => {
    const pia = person();
    const { generation } = await orderImage(pia, 'a boat');
    const describe = (): RecordedCall[] => tg.callsOf('sendMessage', pia.id).filter((c) => /^Describe the image/.test(String(c.params.text)));
    tg.press(pia, `res:p:${generation.id}`);
    await tg.waitFor(() => describe().length === 2);
    const asked = tg.callsOf('sendMessage', pia.id).length;
    tg.message(pia, 'a ship');
    const confirm = await waitForText(pia.id, /^Fake image: 4 tokens \(you have 46\)/);
    // No model or size question in between.
    expect(tg.callsOf('sendMessage', pia.id).slice(asked).filter((c) => c !== confirm)).toEqual([]);
    tg.press(pia, 'img:go');
    const rows = await settled(pia.id, 2);
    expect(rows[1]).toMatchObject({ modelSlug: 'fake-image', prompt: 'a ship' });
    const [before, after] = fake.calls.filter((c) => c.capability === 'image').slice(-2).map((c) => c.request as { width: number; height: number; format: string; seed: number });
    expect({ width: after?.width, height: after?.height, format: after?.format }).toEqual({ width: before?.width, height: before?.height, format: before?.format });
  });

  it('a failure is said in the started message, charging nothing', async () => {
    const fay = person();
    fake.next({ kind: 'refuse', message: 'Content policy violation' });
    tg.message(fay, '/image');
    await tg.waitFor(() => tg.callsOf('sendMessage', fay.id).find((c) => buttons(c).includes('img:m:fake-image')));
    tg.press(fay, 'img:m:fake-image');
    await tg.waitFor(() => tg.callsOf('sendMessage', fay.id).length >= 2);
    tg.message(fay, 'forbidden');
    await tg.waitFor(() => tg.callsOf('sendMessage', fay.id).find((c) => buttons(c).includes('img:o:1024x1024')));
    tg.press(fay, 'img:o:1024x1024');
    await tg.waitFor(() => tg.callsOf('sendMessage', fay.id).find((c) => buttons(c).includes('img:go')));
    tg.press(fay, 'img:go');
    const [generation] = await settled(fay.id, 1);
    await delivered((generation as Generation).id);
    const row = await app.container.db.repo(BotDelivery).findOneByOrFail({ generationId: (generation as Generation).id });
    expect(tg.textOf(fay.id, row.messageId ?? 0)).toMatch(/^The generation failed: .*Content policy violation.*Nothing was charged/);
    expect(tg.callsOf('sendMessage', fay.id).filter((c) => /failed/.test(String(c.params.text)))).toEqual([]);
    expect(await charges(fay.id)).toEqual([]);
  });

  it("another person pressing a forwarded result's buttons runs nothing", async () => {
    const own = person();
    const other = person();
    const { generation } = await orderImage(own, 'mine');
    tg.message(other, '/start');
    await tg.waitFor(() => tg.callsOf('sendMessage', other.id)[0]);
    const said = tg.sentTo(other.id).length;
    for (const data of [`res:a:${generation.id}`, `res:t:remove-bg:${generation.id}`, `res:p:${generation.id}`]) tg.press(other, data);
    const answers = await tg.waitFor(() => {
      const found = tg.callsOf('answerCallbackQuery').filter((c) => c.params.text === 'Not found: this button belongs to someone else’s result.');
      return found.length >= 3 && found;
    });
    expect(answers).toHaveLength(3);
    await sleep(500);
    expect(await generationsOf(other.id)).toEqual([]);
    expect(await generationsOf(own.id)).toHaveLength(1);
    expect(tg.sentTo(other.id)).toHaveLength(said);
  });
});
