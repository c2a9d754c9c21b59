/**
 * What people send besides text. A voice message or audio file is transcribed with the plan's
 * speech-to-text model (a billed generation keyed by the update, so it shows in history and a
 * redelivery is not charged twice); the worker shows the transcript and answers it as a chat turn.
 * A photo runs the tool its caption names, or the one picked from a keyboard; face swap asks
 * for the second photo. Voice notes are OGG/Opus: the speech engines decode any format ffmpeg
 * reads to 16 kHz mono themselves (shared/providers/local/transcription.ts), so they go as they are.
 */
import { Bot, InlineKeyboard } from 'grammy';
import type { User as TelegramUser } from 'grammy/types';
import { createConversation } from '@grammyjs/conversations';
import { Texts, TEXTS } from '../../shared/telegram/texts';
import type { BotContext, BotServices, Dialog, DialogContext } from '../context';
import { DOWNLOAD_LIMIT_MB, downloadFile, extensionOf, FileTooBigError, overDownloadLimit, storeUpload } from '../files';
import { PHOTO_TOOLS, PhotoTool, toolFromCaption, toolModel, transcriptionModel } from '../models';

const PENDING_PHOTO_TTL_SECONDS = 3600;

interface Asker {
  from: TelegramUser;
  chatId: string;
  me: TelegramUser;
  updateId: number;
}

/** The largest size of a photo, or an image sent as a file. */
function photoOf(message: NonNullable<BotContext['message']>): { fileId: string; size: number | undefined; mime: string } | null {
  const largest = message.photo?.at(-1);
  if (largest) return { fileId: largest.file_id, size: largest.file_size, mime: 'image/jpeg' };
  const doc = message.document;
  if (doc?.mime_type && /^image\/(jpeg|png|webp)$/.test(doc.mime_type)) return { fileId: doc.file_id, size: doc.file_size, mime: doc.mime_type };
  return null;
}

export function registerMediaInput(bot: Bot<BotContext>, services: BotServices): void {
  const { container, api, store } = services;

  /** What a failed download from Telegram tells the person: what failed, that nothing was charged, and to retry. */
  function downloadFailure(error: unknown, texts: Texts, what: 'voice' | 'photo', chatId: string | number): string {
    if (error instanceof FileTooBigError) return texts.fileTooBig(DOWNLOAD_LIMIT_MB);
    container.log.warn({ err: error instanceof Error ? error.message : String(error), chatId }, 'downloading a file from Telegram failed');
    return texts.downloadFailed(what);
  }
  const { catalog } = container;

  async function uploadPhoto(fileId: string, mime: string): Promise<string> {
    const bytes = await downloadFile(api, container, fileId);
    return storeUpload(container, bytes, mime, extensionOf(mime, 'jpg'));
  }

  /** Runs a photo tool on one photo (two for face swap); answers at once, the worker delivers. */
  async function runTool(asker: Asker, tool: PhotoTool, photo: { fileId: string; mime: string }, second?: { fileId: string; mime: string }): Promise<void> {
    const a = await services.accountOf(asker.from);
    const key = services.idempotencyKey(asker.me, asker.updateId);
    if (await services.alreadyStarted(a.user.id, key)) return;
    const model = toolModel(catalog, a.plan, tool);
    if (!model) {
      await api.sendMessage(asker.chatId, a.texts.noToolModel);
      return;
    }
    // Say what is happening before the download: it can take a while, and it can fail.
    const status = await api.sendMessage(asker.chatId, a.texts.working[tool]);
    let params: Record<string, string>;
    try {
      params = { image_url: await uploadPhoto(photo.fileId, photo.mime) };
      if (second) params.target_image_url = await uploadPhoto(second.fileId, second.mime);
    } catch (error) {
      await api.editMessageText(asker.chatId, status.message_id, downloadFailure(error, a.texts, 'photo', asker.chatId));
      return;
    }
    await services.startMedia(asker.from, asker.chatId, { model: model.slug, params, topLevel: {} }, key, status.message_id);
  }

  async function faceSwapDialog(conversation: Dialog, ctx: DialogContext, first: { fileId: string; mime: string }): Promise<void> {
    const from = ctx.from;
    const chatId = ctx.chat?.id;
    if (!from || chatId === undefined) return;
    const language = await conversation.external(async () => (await services.accountOf(from)).language);
    const texts = TEXTS[language];
    await ctx.reply(texts.askSecondPhoto);
    for (;;) {
      const next = await conversation.waitFor('message', { otherwise: (c) => c.reply(texts.sendPhoto) });
      const second = next.message ? photoOf(next.message) : null;
      if (!second) {
        await next.reply(texts.sendPhoto);
        continue;
      }
      if (overDownloadLimit(second.size)) {
        await next.reply(texts.fileTooBig(DOWNLOAD_LIMIT_MB));
        return;
      }
      const asker = { from, chatId: String(chatId), me: ctx.me, updateId: next.update.update_id };
      await conversation.external(() => runTool(asker, 'face-swap', first, second));
      return;
    }
  }
  bot.use(createConversation<BotContext, DialogContext>(faceSwapDialog, 'faceswap'));

  async function offerTools(ctx: BotContext, photo: { fileId: string; mime: string }): Promise<void> {
    const a = services.account(ctx);
    const chatId = ctx.chat?.id;
    if (chatId === undefined) return;
    const keyboard = new InlineKeyboard();
    let offered = 0;
    for (const { tool } of PHOTO_TOOLS) {
      const model = toolModel(catalog, a.plan, tool);
      if (!model) continue;
      const listing = catalog.listing(model);
      keyboard.text(`${a.texts.toolNames[tool]} · ${a.texts.tokensRange(listing.minTokenCost, listing.maxTokenCost)}`, `tool:${tool}`).row();
      offered++;
    }
    if (offered === 0) {
      await ctx.reply(a.texts.noToolModel);
      return;
    }
    await store.set(`photo:${chatId}`, JSON.stringify(photo), PENDING_PHOTO_TTL_SECONDS);
    await ctx.reply(a.texts.pickTool, { reply_markup: keyboard });
  }

  async function onTool(ctx: BotContext, tool: PhotoTool, photo: { fileId: string; mime: string }): Promise<void> {
    if (!ctx.from || !ctx.chat) return;
    if (tool === 'face-swap') {
      await ctx.conversation.enter('faceswap', photo);
      return;
    }
    await runTool({ from: ctx.from, chatId: String(ctx.chat.id), me: ctx.me, updateId: ctx.update.update_id }, tool, photo);
  }

  bot.on(['message:photo', 'message:document'], async (ctx, next) => {
    const message = ctx.message;
    const photo = photoOf(message);
    if (!photo) return next();
    const a = services.account(ctx);
    if (overDownloadLimit(photo.size)) {
      await ctx.reply(a.texts.fileTooBig(DOWNLOAD_LIMIT_MB));
      return;
    }
    const tool = toolFromCaption(message.caption ?? '');
    if (tool) await onTool(ctx, tool, photo);
    else await offerTools(ctx, photo);
  });

  bot.callbackQuery(/^tool:([a-z-]+)$/, async (ctx) => {
    const a = services.account(ctx);
    const tool = PHOTO_TOOLS.find((t) => t.tool === ctx.match[1])?.tool;
    const raw = ctx.chat ? await store.get(`photo:${ctx.chat.id}`) : null;
    if (!tool || !raw) {
      await ctx.answerCallbackQuery({ text: a.texts.expired });
      return;
    }
    // One tap runs one tool: the photo is used up (updates of a chat run one at a time, so a
    // double tap finds it gone) and the keyboard goes, so a second tap cannot charge again.
    if (ctx.chat) await store.delete(`photo:${ctx.chat.id}`);
    await ctx.answerCallbackQuery();
    await ctx.editMessageReplyMarkup({ reply_markup: undefined }).catch(() => undefined);
    await onTool(ctx, tool, JSON.parse(raw) as { fileId: string; mime: string });
  });

  // Voice messages, audio files, and audio sent as a file: transcribed, then answered.
  bot.on(['message:voice', 'message:audio', 'message:document'], async (ctx, next) => {
    const message = ctx.message;
    const media = message.voice ?? message.audio ?? (message.document?.mime_type?.startsWith('audio/') ? message.document : undefined);
    if (!media || !ctx.from || !ctx.chat) return next();
    const a = services.account(ctx);
    const key = services.idempotencyKey(ctx.me, ctx.update.update_id);
    if (await services.alreadyStarted(a.user.id, key)) return;
    if (overDownloadLimit(media.file_size)) {
      await ctx.reply(a.texts.fileTooBig(DOWNLOAD_LIMIT_MB));
      return;
    }
    const model = transcriptionModel(catalog, a.plan);
    if (!model) {
      await ctx.reply(a.texts.noSttModel);
      return;
    }
    const status = await ctx.reply(a.texts.working.transcribe);
    let audioUrl: string;
    try {
      const bytes = await downloadFile(api, container, media.file_id);
      const mime = media.mime_type ?? (message.voice ? 'audio/ogg' : 'audio/mpeg');
      audioUrl = await storeUpload(container, bytes, mime, extensionOf(mime, message.voice ? 'ogg' : 'bin'));
    } catch (error) {
      await ctx.api.editMessageText(ctx.chat.id, status.message_id, downloadFailure(error, a.texts, 'voice', ctx.chat.id));
      return;
    }
    await services.startMedia(ctx.from, String(ctx.chat.id), { model: model.slug, params: { audio_url: audioUrl }, topLevel: {} }, key, status.message_id);
  });
}
