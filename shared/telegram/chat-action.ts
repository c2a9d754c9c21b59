/**
 * Chat actions while work runs ("typing…", "sending a photo…"), as Telegram users expect from a
 * bot that is busy. Telegram shows an action for 5 s or until the bot's next message, so it is
 * sent again every 4 s until the work ends; the timer is cleared whichever way it ends (success,
 * failure, abort), and a chat that cannot be reached stops it at once.
 */
import type { Api } from 'grammy';
import type { Generation } from '../db/entities';
import type { Logger } from '../log';
import { isUnreachable } from './api';

export type ChatAction = 'typing' | 'upload_photo' | 'upload_video' | 'record_voice' | 'upload_voice' | 'upload_document';

/** Shorter than the 5 s Telegram shows an action, so it does not flicker off between sends. */
export const CHAT_ACTION_INTERVAL_MS = 4000;

export interface ChatActionLoop {
  stop(): void;
}

/** Sends `action` now and every interval until `stop()` (or the signal aborts). Never throws. */
export function keepChatAction(api: Api, chatId: string | number, action: ChatAction, options: { log?: Logger; signal?: AbortSignal } = {}): ChatActionLoop {
  let stopped = false;
  const send = (): void => {
    if (stopped) return;
    api.sendChatAction(chatId, action).catch((error: unknown) => {
      // A missed action only means a shorter "typing…"; an unreachable chat needs no more.
      if (isUnreachable(error)) stop();
      else options.log?.debug({ err: (error as Error).message, chatId, action }, 'chat action failed');
    });
  };
  const timer = setInterval(send, CHAT_ACTION_INTERVAL_MS);
  timer.unref();
  function stop(): void {
    stopped = true;
    clearInterval(timer);
  }
  options.signal?.addEventListener('abort', stop, { once: true });
  send();
  return { stop };
}

/** Runs `work` with the action shown meanwhile; the action stops however `work` ends. */
export async function withChatAction<T>(api: Api, chatId: string | number, action: ChatAction, work: () => Promise<T>, options: { log?: Logger; signal?: AbortSignal } = {}): Promise<T> {
  const loop = keepChatAction(api, chatId, action, options);
  try {
    return await work();
  } finally {
    loop.stop();
  }
}

/** What a person sees while a generation runs: what its result will be sent as. */
export function actionFor(generation: Pick<Generation, 'category'>, toolUpstream?: string | null): ChatAction {
  switch (generation.category) {
    case 'image':
      return 'upload_photo';
    case 'video':
      return 'upload_video';
    // Speech comes as a voice message: "recording a voice message…".
    case 'tts':
      return 'record_voice';
    // Music comes as an audio file.
    case 'music':
      return 'upload_document';
    // Tools make pictures, except OCR, whose result is text.
    case 'tool':
      return toolUpstream === 'ocr' ? 'typing' : 'upload_photo';
    default:
      return 'typing';
  }
}
