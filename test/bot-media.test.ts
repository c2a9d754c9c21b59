/**
 * The bot's media: the video, music and voice dialogs, voice messages transcribed and answered,
 * photo tools (caption, keyboard, face swap), /history re-sending stored bytes, the image
 * defaults of /settings, and Telegram's upload limits. The bot (long polling), the API and the
 * worker run for real against the fake Bot API and a fake provider.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { toolFromCaption } from '../bot/models';
import { startBot } from '../bot/run';
import type { Generation, User } from '../shared/db/entities';
import type { Stoppable } from '../shared/lifecycle';
import { findFfmpeg } from '../shared/media/executables';
import type { ProviderAdapter, SpeechRequest } from '../shared/providers/types';
import { createTelegramApi } from '../shared/telegram/api';
import { TelegramDelivery } from '../shared/telegram/delivery';
import { textsFor } from '../shared/telegram/texts';
import { startTestApp, TestApp } from './helpers/app';
import { telegramCharges, telegramGenerations, telegramUser } from './helpers/telegram-accounts';
import { FakeProvider } from './helpers/fake-provider';
import { FakeTelegram, RecordedCall, TgUser } from './helpers/fake-telegram';

// The head of an OGG/Opus file (what Telegram plays as a voice message) and of an OGG/Vorbis one.
const OPUS = Buffer.concat([Buffer.from('OggS'), Buffer.alloc(24), Buffer.from('OpusHead'), Buffer.alloc(32, 1)]);
const VORBIS = Buffer.concat([Buffer.from('OggS'), Buffer.alloc(24), Buffer.from('\x01vorbis'), Buffer.alloc(32, 1)]);
const PHOTO = Buffer.from('a jpeg photo from the chat');

const fake = new FakeProvider('fake');
let speechBytes = OPUS;
/** The fake provider, its speech engine answering OGG in the asked format with `speechBytes`. */
function provider(): ProviderAdapter {
  const adapter = fake.adapter();
  return {
    ...adapter,
    speech: {
      synthesize: async (request: SpeechRequest, options) => {
        await adapter.speech?.synthesize(request, options);
        return { file: { bytes: speechBytes, contentType: 'audio/ogg', extension: request.format }, durationSeconds: 1 };
      },
    },
  };
}

const tg = new FakeTelegram();
let app: TestApp;
let bot: Stoppable;

beforeAll(async () => {
  await tg.start();
  app = await startTestApp(
    { CATALOG_PATH: path.join(__dirname, 'fixtures/bot-media-catalog.json'), TELEGRAM_BOT_TOKEN: '123456:TEST-token', TELEGRAM_API_ROOT: tg.url },
    { providers: [provider()], worker: true },
  );
  bot = await startBot(app.container);
});

afterAll(async () => {
  await bot?.stop();
  await app?.close();
  await tg.stop();
});

beforeEach(() => {
  fake.reset();
  speechBytes = OPUS;
});

let nextId = 8000;
function person(language_code = 'en'): TgUser {
  const id = nextId++;
  return { id, is_bot: false, first_name: 'Pat', username: `media${id}`, language_code };
}

const userOf = (telegramId: number): Promise<User> => telegramUser(app, telegramId);
const generationsOf = (telegramId: number): Promise<Generation[]> => telegramGenerations(app, telegramId);
const charges = async (telegramId: number): Promise<number[]> => (await telegramCharges(app, telegramId)).map((e) => e.amount);

/** Goes through the /voice dialog: fake-tts, "hello", voice alloy, confirmed. */
async function orderSpeech(pat: TgUser): Promise<void> {
    tg.message(pat, '/voice');
    await waitForText(pat.id, /^Which model should speak it/);
    tg.press(pat, 'voc:m:fake-tts');
    await waitForText(pat.id, /^Send the text to speak/);
    tg.message(pat, 'hello');
    await waitForText(pat.id, /^Pick the voice/);
    tg.press(pat, 'voc:o:alloy');
    await waitForText(pat.id, /^Fake speech/);
    tg.press(pat, 'voc:go');
}

/** The person's generations once `count` of them have ended. */
async function settled(telegramId: number, count: number): Promise<Generation[]> {
  const started = Date.now();
  for (;;) {
    const rows = await generationsOf(telegramId);
    if (rows.length >= count && rows.every((g) => g.status !== 'pending')) return rows;
    if (Date.now() - started > 10_000) throw new Error('generations did not end');
    await new Promise((r) => setTimeout(r, 25));
  }
}

function waitForText(chatId: number, pattern: RegExp): Promise<RecordedCall> {
  return tg.waitFor(() => tg.calls.find((c) => Number(c.params.chat_id) === chatId && pattern.test(String(c.params.text ?? ''))));
}

function buttons(call: RecordedCall): string[] {
  const markup = call.params.reply_markup as { inline_keyboard?: Array<Array<{ callback_data?: string; text?: string }>> } | undefined;
  return (markup?.inline_keyboard ?? []).flat().map((b) => b.callback_data ?? '');
}

function labels(call: RecordedCall): string[] {
  const markup = call.params.reply_markup as { inline_keyboard?: Array<Array<{ text?: string }>> } | undefined;
  return (markup?.inline_keyboard ?? []).flat().map((b) => b.text ?? '');
}

describe('the video, music and voice dialogs', () => {
  it('video: model, prompt, duration and aspect ratio with prices, the price before confirming, then sendVideo', async () => {
    const pat = person();
    tg.message(pat, '/video');
    const models = await waitForText(pat.id, /^Which model should make the video/);
    expect(buttons(models)).toEqual(['vid:m:fake-video', 'vid:x']);
    tg.press(pat, 'vid:m:fake-video');
    await waitForText(pat.id, /^Describe the video/);
    tg.message(pat, 'waves at dusk');
    const durations = await waitForText(pat.id, /^Pick the duration/);
    expect(buttons(durations)).toEqual(['vid:o:5', 'vid:o:10', 'vid:x']);
    expect(labels(durations)[1]).toBe('10 s · 30 tokens');
    tg.press(pat, 'vid:o:10');
    const ratios = await waitForText(pat.id, /^Pick the aspect ratio/);
    expect(buttons(ratios)).toEqual(['vid:o:16:9', 'vid:o:9:16', 'vid:o:1:1', 'vid:x']);
    tg.press(pat, 'vid:o:9:16');
    const confirm = await waitForText(pat.id, /^Fake video: 30 tokens \(you have 50\)/);
    expect(buttons(confirm)).toEqual(['vid:go', 'vid:x']);
    expect(await generationsOf(pat.id)).toHaveLength(0);
    tg.press(pat, 'vid:go');
    await waitForText(pat.id, /^Started\. The result will be here in about 20 s/);
    const video = await tg.waitFor(() => tg.callsOf('sendVideo', pat.id)[0]);
    expect(video.files.video?.bytes.toString()).toBe('fake mp4 bytes');
    const [generation] = await generationsOf(pat.id);
    expect(generation).toMatchObject({ status: 'completed', category: 'video', tokensSpent: 30, source: 'bot' });
    expect(fake.calls.find((c) => c.capability === 'video')?.request).toMatchObject({ durationSeconds: 10, aspectRatio: '9:16', prompt: 'waves at dusk' });
    expect(await charges(pat.id)).toEqual([-30]);
  });

  it('music, in Russian: the duration choices and the price, then sendAudio', async () => {
    const ivan = person('ru');
    tg.message(ivan, '/music');
    const models = await waitForText(ivan.id, /^Какой моделью сочинять/);
    expect(buttons(models)).toContain('mus:m:fake-music');
    tg.press(ivan, 'mus:m:fake-music');
    await waitForText(ivan.id, /^Опишите музыку/);
    tg.message(ivan, 'спокойный джаз');
    const durations = await waitForText(ivan.id, /^Выберите длительность/);
    expect(buttons(durations)).toEqual(['mus:o:10', 'mus:o:30', 'mus:o:60', 'mus:x']);
    expect(labels(durations)[0]).toBe('10 с · 2 токена');
    tg.press(ivan, 'mus:o:10');
    const confirm = await waitForText(ivan.id, /^Fake music: 2 токена \(у вас 50\)\. Запускаем\?/);
    expect(labels(confirm)).toEqual(['✅ Запустить', '✖️ Отмена']);
    tg.press(ivan, 'mus:go');
    await waitForText(ivan.id, /^Запущено\. Результат будет здесь примерно через 15 с/);
    const audio = await tg.waitFor(() => tg.callsOf('sendAudio', ivan.id)[0]);
    expect(audio.files.audio?.bytes.toString()).toBe('fake music');
    expect(audio.params.caption).toBe('спокойный джаз\n\nFake music · 2 токена · осталось 48 токенов');
    expect(await charges(ivan.id)).toEqual([-2]);
  });

  it('speech: the text to speak and the voice; an OGG/Opus result arrives as a voice message', async () => {
    const pat = person();
    tg.message(pat, '/voice');
    await waitForText(pat.id, /^Which model should speak it/);
    tg.press(pat, 'voc:m:fake-tts');
    await waitForText(pat.id, /^Send the text to speak/);
    tg.message(pat, 'Good morning, everyone');
    const voices = await waitForText(pat.id, /^Pick the voice/);
    expect(buttons(voices)).toEqual(['voc:o:alloy', 'voc:o:nova', 'voc:x']);
    tg.press(pat, 'voc:o:nova');
    await waitForText(pat.id, /^Fake speech: 1 token \(/);
    tg.press(pat, 'voc:go');
    const voice = await tg.waitFor(() => tg.callsOf('sendVoice', pat.id)[0]);
    expect(voice.files.voice?.bytes.equals(OPUS)).toBe(true);
    expect(fake.calls.find((c) => c.capability === 'speech')?.request).toMatchObject({ text: 'Good morning, everyone', voice: 'nova', format: 'ogg' });
    expect(tg.callsOf('sendAudio', pat.id)).toHaveLength(0);
  });

  it('speech in another format is re-encoded to OGG/Opus with ffmpeg and arrives as a voice message', async () => {
    const ffmpeg = findFfmpeg();
    if (!ffmpeg) throw new Error('the tests need ffmpeg (the @ffmpeg-installer/ffmpeg dependency)');
    speechBytes = execFileSync(ffmpeg, ['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=1', '-c:a', 'libvorbis', '-f', 'ogg', 'pipe:1']);
    expect(speechBytes.includes('vorbis')).toBe(true);
    const pat = person();
    await orderSpeech(pat);
    const voice = await tg.waitFor(() => tg.callsOf('sendVoice', pat.id)[0]);
    const bytes = voice.files.voice?.bytes ?? Buffer.alloc(0);
    expect(bytes.subarray(0, 4).toString()).toBe('OggS');
    expect(bytes.subarray(0, 96).includes('OpusHead')).toBe(true);
  });

  it('speech that cannot be made OGG/Opus arrives as audio', async () => {
    speechBytes = VORBIS;
    const pat = person();
    await orderSpeech(pat);
    const audio = await tg.waitFor(() => tg.callsOf('sendAudio', pat.id)[0]);
    expect(audio.files.audio?.bytes.equals(VORBIS)).toBe(true);
    expect(tg.callsOf('sendVoice', pat.id)).toHaveLength(0);
  });

  it('a failed generation is a clear message and charges nothing', async () => {
    fake.next({ kind: 'refuse', message: 'Content policy violation' });
    const pat = person();
    tg.message(pat, '/video');
    await waitForText(pat.id, /^Which model/);
    tg.press(pat, 'vid:m:fake-video');
    await waitForText(pat.id, /^Describe the video/);
    tg.message(pat, 'something');
    await waitForText(pat.id, /^Pick the duration/);
    tg.press(pat, 'vid:o:5');
    await waitForText(pat.id, /^Pick the aspect ratio/);
    tg.press(pat, 'vid:o:1:1');
    await waitForText(pat.id, /^Fake video: 15 tokens/);
    tg.press(pat, 'vid:go');
    await waitForText(pat.id, /^The generation failed: .*Content policy violation.*Nothing was charged/);
    expect(await charges(pat.id)).toEqual([]);
    expect((await userOf(pat.id)).subscriptionTokens).toBe(50);
  });
});

describe('voice messages and audio files', () => {
  it('a voice message is downloaded, transcribed (billed, in history) and answered as a chat turn', async () => {
    fake.reply = 'Hello to you too';
    const pat = person();
    const voice = Buffer.concat([OPUS, Buffer.from('spoken words')]);
    const update = tg.media(pat, 'voice', { bytes: voice, mime_type: 'audio/ogg' });
    await waitForText(pat.id, /^🎙 Transcribing/);
    await waitForText(pat.id, /^🎙 hello world$/);
    const transcription = await tg.waitFor(() => fake.calls.find((c) => c.capability === 'transcription'));
    expect((transcription.request as { audio: Buffer }).audio.equals(voice)).toBe(true);
    expect(tg.callsOf('getFile')).toEqual(expect.arrayContaining([expect.objectContaining({ params: expect.objectContaining({ file_id: expect.stringMatching(/voice$/) }) })]));

    // The transcript is the chat's next turn; the reply streams into a placeholder.
    const reply = await tg.waitFor(() => tg.calls.find((c) => c.method === 'editMessageText' && Number(c.params.chat_id) === pat.id && c.params.text === 'Hello to you too'));
    expect(reply).toBeDefined();
    const chatRequest = fake.calls.find((c) => c.capability === 'text.stream')?.request as { messages: Array<{ content: string }> };
    expect(chatRequest.messages.at(-1)?.content).toBe('hello world');
    const generations = await settled(pat.id, 2);
    expect(generations.map((g) => [g.category, g.status, g.tokensSpent])).toEqual([
      ['stt', 'completed', 2],
      ['text', 'completed', 2],
    ]);
    const history = await app.container.history.list((await userOf(pat.id)).id, { page: 1, limit: 10 });
    expect(history.items.map((g) => g.category)).toContain('stt');

    // A redelivered update downloads, transcribes and charges nothing more.
    const downloads = tg.callsOf('getFile').length;
    tg.redeliver(update);
    await tg.waitFor(() => !tg.hasRedeliveries());
    await new Promise((r) => setTimeout(r, 500));
    expect(tg.callsOf('getFile')).toHaveLength(downloads);
    expect(await generationsOf(pat.id)).toHaveLength(2);
    expect(await charges(pat.id)).toEqual([-2, -2]);
  });

  it('a transcript\'s chat turn still starts when Telegram fails its first placeholder', async () => {
    fake.reply = 'Still here';
    const pat = person();
    // Every attempt of the first delivery run fails on the chat turn's placeholder.
    tg.failNext('sendMessage', { error_code: 500, description: 'Internal Server Error', chatId: pat.id, text: '…' }, 3);
    tg.media(pat, 'voice', { bytes: Buffer.concat([OPUS, Buffer.from('spoken words')]), mime_type: 'audio/ogg' });
    await waitForText(pat.id, /^🎙 hello world$/);
    const reply = await tg.waitFor(() => tg.calls.find((c) => c.method === 'editMessageText' && Number(c.params.chat_id) === pat.id && c.params.text === 'Still here'), 20_000);
    expect(reply).toBeDefined();
    const generations = await settled(pat.id, 2);
    expect(generations.map((g) => [g.category, g.status])).toEqual([
      ['stt', 'completed'],
      ['text', 'completed'],
    ]);
  }, 30_000);

  it('a voice message over 20 MB gets a clear message without a download or a charge', async () => {
    const pat = person();
    const downloads = tg.callsOf('getFile').length;
    tg.media(pat, 'voice', { bytes: OPUS, size: 21 * 1024 * 1024, mime_type: 'audio/ogg' });
    await waitForText(pat.id, /over 20 MB: Telegram does not let bots download files that large/);
    expect(tg.callsOf('getFile')).toHaveLength(downloads);
    expect(await generationsOf(pat.id)).toHaveLength(0);
    expect(fake.calls.filter((c) => c.capability === 'transcription')).toHaveLength(0);
  });

  it('an audio file is transcribed too', async () => {
    const pat = person();
    tg.media(pat, 'audio', { bytes: Buffer.from('ID3 an mp3 file'), mime_type: 'audio/mpeg' });
    await waitForText(pat.id, /^🎙 hello world$/);
    const [generation] = await generationsOf(pat.id);
    expect(generation?.category).toBe('stt');
  });
});

describe('photo tools', () => {
  it('reads the tool from English and Russian captions', () => {
    const cases: Array<[string, string | null]> = [
      ['Remove the background please', 'remove-bg'],
      ['убери фон', 'remove-bg'],
      ['upscale x2', 'upscale-esrgan'],
      ['Увеличь', 'upscale-esrgan'],
      ['OCR', 'ocr'],
      ['распознай текст', 'ocr'],
      ['colorize this old photo', 'colorize'],
      ['раскрась', 'colorize'],
      ['style: watercolor', 'style-transfer'],
      ['в стиле акварели', 'style-transfer'],
      ['face swap', 'face-swap'],
      ['замена лица', 'face-swap'],
      ['улица вечером', null],
      ['my cat', null],
    ];
    for (const [caption, tool] of cases) expect([caption, toolFromCaption(caption)]).toEqual([caption, tool]);
  });

  it('a photo captioned "remove background" runs the tool and delivers the result photo', async () => {
    const pat = person();
    tg.media(pat, 'photo', { bytes: PHOTO, caption: 'remove background please' });
    // What is happening is said before the download; that message is the one the result reports in.
    await waitForText(pat.id, /^✂️ Removing the background…$/);
    expect(tg.sentTo(pat.id).filter((c) => /^Started/.test(String(c.params.text ?? '')))).toHaveLength(0);
    const photo = await tg.waitFor(() => tg.callsOf('sendPhoto', pat.id)[0]);
    expect(photo.files.photo?.bytes.subarray(1, 4).toString()).toBe('PNG');
    const call = fake.calls.find((c) => c.capability === 'tool')?.request as { tool: string; image: Buffer };
    expect(call.tool).toBe('remove-bg');
    expect(call.image.equals(PHOTO)).toBe(true);
    expect((await generationsOf(pat.id))[0]).toMatchObject({ category: 'tool', modelSlug: 'fake-remove-bg', status: 'completed', tokensSpent: 1 });
  });

  it('a photo without a caption offers the tools; OCR answers with the text', async () => {
    const pat = person('ru');
    tg.media(pat, 'photo', { bytes: PHOTO });
    const offer = await waitForText(pat.id, /^Что сделать с этим фото/);
    expect(buttons(offer)).toEqual(['tool:remove-bg', 'tool:ocr', 'tool:face-swap']);
    // A double tap runs (and charges) the tool once.
    tg.press(pat, 'tool:ocr');
    tg.press(pat, 'tool:ocr');
    await waitForText(pat.id, /^recognized text$/);
    // The second tap finds the photo used up and says so (Russian, as the person speaks).
    const second = await tg.waitFor(() => tg.calls.filter((c) => c.method === 'answerCallbackQuery')[1]);
    expect(String(second.params.text)).toMatch(/\S/);
    const generations = await generationsOf(pat.id);
    expect(generations).toHaveLength(1);
    expect(generations[0]).toMatchObject({ modelSlug: 'fake-ocr', resultText: 'recognized text' });
  });

  it('face swap asks for the second photo', async () => {
    const pat = person();
    const target = Buffer.from('the second photo');
    tg.media(pat, 'photo', { bytes: PHOTO, caption: 'face swap' });
    await waitForText(pat.id, /^Now send the photo to put this face into/);
    tg.message(pat, 'hm');
    await waitForText(pat.id, /^Please send a photo, or \/cancel/);
    tg.media(pat, 'photo', { bytes: target });
    const result = await tg.waitFor(() => tg.callsOf('sendPhoto', pat.id)[0]);
    expect(result).toBeDefined();
    const call = fake.calls.find((c) => c.capability === 'tool')?.request as { tool: string; image: Buffer; secondImage: Buffer };
    expect(call.tool).toBe('face-swap');
    expect(call.image.equals(PHOTO)).toBe(true);
    expect(call.secondImage.equals(target)).toBe(true);
  });
});

describe('/history and /settings', () => {
  it('/history re-sends a result as uploaded bytes from storage, and a text as text', async () => {
    const pat = person();
    tg.media(pat, 'photo', { bytes: PHOTO, caption: 'remove background' });
    const first = await tg.waitFor(() => tg.callsOf('sendPhoto', pat.id)[0]);
    tg.media(pat, 'photo', { bytes: PHOTO, caption: 'ocr' });
    await waitForText(pat.id, /^recognized text$/);
    const [image, text] = await generationsOf(pat.id);
    tg.message(pat, '/history');
    const list = await waitForText(pat.id, /^Recent generations/);
    expect(buttons(list)).toEqual(expect.arrayContaining([`hist:${image?.id}`, `hist:${text?.id}`]));
    tg.press(pat, `hist:${image?.id}`);
    const again = await tg.waitFor(() => tg.callsOf('sendPhoto', pat.id)[1]);
    const stored = await app.container.storage.readAll(image?.resultKey ?? '');
    expect(again.files.photo?.bytes.equals(stored)).toBe(true);
    expect(again.files.photo?.bytes.equals(first.files.photo?.bytes ?? Buffer.alloc(0))).toBe(true);
    tg.press(pat, `hist:${text?.id}`);
    await tg.waitFor(() => tg.callsOf('sendMessage', pat.id).filter((c) => c.params.text === 'recognized text').length === 2);
    const base = app.container.config.publicBaseUrl;
    expect(tg.sentTo(pat.id).some((c) => JSON.stringify(c.params).includes(base))).toBe(false);
  });

  it('the default image model and format from /settings are used by the image dialog', async () => {
    const pat = person();
    tg.message(pat, '/settings');
    const settings = await waitForText(pat.id, /^Settings/);
    expect(settings.params.text).toContain('Image model: ask every time');
    expect(buttons(settings)).toEqual(expect.arrayContaining(['set:imodels', 'set:formats']));
    tg.press(pat, 'set:imodels');
    const models = await waitForText(pat.id, /^Pick the image model/);
    expect(buttons(models)).toEqual(['set:im:fake-image', 'set:im:-']);
    tg.press(pat, 'set:im:fake-image');
    await waitForText(pat.id, /^Image model: Fake image\./);
    tg.press(pat, 'set:formats');
    const formats = await waitForText(pat.id, /^Pick the image format/);
    expect(buttons(formats)).toEqual(['set:fmt:webp', 'set:fmt:png', 'set:fmt:jpeg']);
    tg.press(pat, 'set:fmt:png');
    await waitForText(pat.id, /^Image format: png\./);

    tg.message(pat, '/image');
    await waitForText(pat.id, /^Describe the image/);
    expect(tg.calls.some((c) => Number(c.params.chat_id) === pat.id && /^Which model/.test(String(c.params.text ?? '')))).toBe(false);
    tg.message(pat, 'a lighthouse');
    await waitForText(pat.id, /^Pick the size/);
    tg.press(pat, 'img:o:1024x1024');
    await waitForText(pat.id, /^Fake image: 4 tokens/);
    tg.press(pat, 'img:go');
    await tg.waitFor(() => tg.callsOf('sendPhoto', pat.id)[0]);
    expect(fake.calls.find((c) => c.capability === 'image')?.request).toMatchObject({ format: 'png', prompt: 'a lighthouse' });
  });
});

describe('Telegram upload limits', () => {
  it('a photo over the photo limit goes as a document; a file over the upload limit is refused with a clear message', async () => {
    const pat = person();
    tg.media(pat, 'photo', { bytes: PHOTO, caption: 'remove background' });
    await tg.waitFor(() => tg.callsOf('sendPhoto', pat.id)[0]);
    const [generation] = await generationsOf(pat.id);
    if (!generation?.resultKey) throw new Error('no result');
    const size = (await app.container.storage.stat(generation.resultKey))?.size ?? 0;
    const api = createTelegramApi(app.container.config.telegram);
    const texts = textsFor('en');

    await new TelegramDelivery(app.container, api, { limits: { photo: size - 1, upload: size } }).sendResult(String(pat.id), generation, texts);
    const document = await tg.waitFor(() => tg.callsOf('sendDocument', pat.id)[0]);
    expect(document.files.document?.bytes.length).toBe(size);
    expect(tg.callsOf('sendPhoto', pat.id)).toHaveLength(1);

    await new TelegramDelivery(app.container, api, { limits: { photo: size - 1, upload: size - 1 } }).sendResult(String(pat.id), generation, texts);
    await waitForText(pat.id, /^The result is too large to send through Telegram/);
    expect(tg.callsOf('sendDocument', pat.id)).toHaveLength(1);
  });
});
