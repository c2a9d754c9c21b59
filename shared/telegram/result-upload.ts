/**
 * A generation's result sent to a chat as an upload of its bytes read from storage (never a
 * link): a photo, a video, speech as a voice message (OGG/Opus), other audio, a document; a photo
 * over Telegram's photo limit as a document, a file over its upload limit as a message saying so.
 * The caller may add a caption line (model, price, balance) and buttons under it.
 */
import { Api, InlineKeyboard, InputFile } from 'grammy';
import type { Generation } from '../db/entities';
import type { Storage } from '../storage';
import { sendFormatted } from './streaming-reply';
import type { Texts } from './texts';
import { ffmpegVoiceEncoder, VoiceEncoder } from './voice-audio';

/** Bot API upload limits in bytes: larger photos go as documents, larger files are refused. */
export interface UploadLimits {
  photo: number;
  upload: number;
}
export const TELEGRAM_UPLOAD_LIMITS: UploadLimits = { photo: 10 * 1024 * 1024, upload: 50 * 1024 * 1024 };
/** Telegram lets a bot download (getFile) files up to this size. */
export const TELEGRAM_DOWNLOAD_LIMIT = 20 * 1024 * 1024;
/** Telegram's caption limit. */
const CAPTION_LIMIT = 1024;

export interface ResultOptions {
  limits?: UploadLimits;
  /** Makes speech a voice message (OGG/Opus); by default ffmpeg when it is there. */
  voice?: VoiceEncoder;
}

/** What goes with a result: a last caption line, buttons; and how it went (a picture?). */
export interface ResultExtras {
  captionLine?: string;
  /** Built once the kind of upload is known: `picture` says the result went as a photo. */
  keyboard?: (picture: boolean) => InlineKeyboard | undefined;
}

let defaultVoiceEncoder: VoiceEncoder | undefined;

/** The prompt, cut to leave room for the caption line, then the line. */
function captionOf(generation: Generation, line: string | undefined): string | undefined {
  const room = CAPTION_LIMIT - (line ? line.length + 2 : 0);
  const prompt = (generation.prompt ?? '').trim();
  const cut = prompt.length > room ? `${prompt.slice(0, Math.max(0, room - 1))}…` : prompt;
  return [cut, line].filter((part) => part).join('\n\n') || undefined;
}

/**
 * A generation's result as an upload of its bytes, or its text: a photo (a document over the
 * photo limit), a video, speech as a voice message (as audio when it cannot be OGG/Opus), other
 * audio, or a document; over the upload limit, a message saying it is too large. True when the
 * result itself went out (not a message about it).
 */
export async function sendGenerationResult(
  api: Api,
  storage: Storage,
  chatId: string | number,
  generation: Generation,
  texts: Texts,
  options: ResultOptions = {},
  extras: ResultExtras = {},
): Promise<boolean> {
  const limits = options.limits ?? TELEGRAM_UPLOAD_LIMITS;
  if (!generation.resultKey) {
    await sendFormatted(api, chatId, generation.resultText?.trim() || '…');
    return true;
  }
  const stat = await storage.stat(generation.resultKey);
  if (!stat) {
    await api.sendMessage(chatId, texts.somethingWrong);
    return false;
  }
  if (stat.size > limits.upload) {
    await api.sendMessage(chatId, texts.tooLarge);
    return false;
  }
  const bytes = await storage.readAll(generation.resultKey);
  const extension = generation.resultKey.split('.').pop() ?? 'bin';
  const file = new InputFile(bytes, `${generation.modelSlug}-${generation.id}.${extension}`);
  const caption = captionOf(generation, extras.captionLine);
  const type = stat.contentType;
  const picture = /^image\/(png|jpeg|webp)$/.test(type);
  const markup = extras.keyboard?.(picture);
  const other = { caption, ...(markup ? { reply_markup: markup } : {}) };
  if (picture && stat.size <= limits.photo) await api.sendPhoto(chatId, file, other);
  else if (type === 'video/mp4') await api.sendVideo(chatId, file, other);
  else if (type.startsWith('audio/')) {
    const encode = options.voice ?? (defaultVoiceEncoder ??= ffmpegVoiceEncoder());
    const voice = generation.category === 'tts' ? await encode(bytes) : null;
    if (voice && voice.length <= limits.upload) await api.sendVoice(chatId, new InputFile(voice, `${generation.modelSlug}-${generation.id}.ogg`), other);
    else await api.sendAudio(chatId, file, other);
  } else await api.sendDocument(chatId, file, other);
  return true;
}
