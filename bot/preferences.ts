/**
 * A chat's image defaults from /settings: the model the image dialog uses without asking, and the
 * format it asks for. Versioned like the chat state: a value of an unknown version reads as empty.
 */
import type { KeyValueStore } from '../shared/telegram/state';

export const IMAGE_FORMATS = ['webp', 'png', 'jpeg'] as const;
export type ImageFormat = (typeof IMAGE_FORMATS)[number];

export interface ChatPreferences {
  /** Null: the dialog asks every time. */
  imageModel: string | null;
  /** Null: the model's default. */
  imageFormat: ImageFormat | null;
}

const VERSION = 1;
const TTL_SECONDS = 365 * 86_400;

export class Preferences {
  constructor(private readonly store: KeyValueStore) {}

  async load(chatId: string | number): Promise<ChatPreferences> {
    const empty: ChatPreferences = { imageModel: null, imageFormat: null };
    const raw = await this.store.get(`prefs:${chatId}`);
    if (!raw) return empty;
    try {
      const parsed = JSON.parse(raw) as { v?: number; imageModel?: unknown; imageFormat?: unknown };
      if (parsed.v !== VERSION) return empty;
      return {
        imageModel: typeof parsed.imageModel === 'string' ? parsed.imageModel : null,
        imageFormat: IMAGE_FORMATS.find((f) => f === parsed.imageFormat) ?? null,
      };
    } catch {
      return empty;
    }
  }

  async update(chatId: string | number, change: Partial<ChatPreferences>): Promise<ChatPreferences> {
    const next = { ...(await this.load(chatId)), ...change };
    await this.store.set(`prefs:${chatId}`, JSON.stringify({ v: VERSION, ...next }), TTL_SECONDS);
    return next;
  }
}
