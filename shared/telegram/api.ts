/**
 * The Bot API client the bot and the worker share: grammY's `Api` pointed at
 * `TELEGRAM_API_ROOT`, retrying flood-limit (429) and server (5xx) answers with a bounded wait.
 */
import { Api, GrammyError, HttpError } from 'grammy';
import type { Transformer } from 'grammy';

export interface TelegramSettings {
  botToken: string | undefined;
  apiRoot: string;
}

/** A 429 asking to wait longer than this is given up (the caller decides what to do). */
export const MAX_RETRY_WAIT_SECONDS = 30;
const MAX_ATTEMPTS = 3;

/** grammY passes its own (polyfilled) AbortSignal type; only these members are used. */
interface Abortable {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
}

function sleep(ms: number, signal?: Abortable): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}

/** Retries 429 after `retry_after` (when at most `maxWaitSeconds`) and 5xx after 1 s, 2 s. */
export function boundedRetry(maxWaitSeconds = MAX_RETRY_WAIT_SECONDS, maxAttempts = MAX_ATTEMPTS): Transformer {
  return async (prev, method, payload, signal) => {
    for (let attempt = 1; ; attempt++) {
      const response = await prev(method, payload, signal);
      if (response.ok || attempt >= maxAttempts || signal?.aborted || method === 'getUpdates') return response;
      let waitSeconds: number;
      if (response.error_code === 429) {
        waitSeconds = response.parameters?.retry_after ?? 1;
        if (waitSeconds > maxWaitSeconds) return response;
      } else if (response.error_code >= 500) {
        waitSeconds = attempt;
      } else {
        return response;
      }
      await sleep(waitSeconds * 1000, signal);
    }
  };
}

export function createTelegramApi(settings: TelegramSettings): Api {
  if (!settings.botToken) throw new Error('TELEGRAM_BOT_TOKEN is not set');
  const api = new Api(settings.botToken, { apiRoot: settings.apiRoot });
  api.config.use(boundedRetry());
  return api;
}

/** The person blocked the bot, left, or the chat is gone: stop sending there. */
export function isUnreachable(error: unknown): boolean {
  return error instanceof GrammyError && (error.error_code === 403 || (error.error_code === 400 && /chat not found/i.test(error.description)));
}

export function isNotModified(error: unknown): boolean {
  return error instanceof GrammyError && error.error_code === 400 && /message is not modified/i.test(error.description);
}

/** Telegram rejected the formatting (entities it cannot parse). */
export function isParseError(error: unknown): boolean {
  return error instanceof GrammyError && error.error_code === 400 && /parse entities|can't find end|unsupported start tag|entity/i.test(error.description);
}

/** Worth another attempt later: network trouble, a flood wait beyond the bound, a server error. */
export function isTransient(error: unknown): boolean {
  if (error instanceof HttpError) return true;
  return error instanceof GrammyError && (error.error_code === 429 || error.error_code >= 500);
}
