/** The languages the bot (and the dashboard) speak, and a person's from Telegram's language code. */
export const LANGUAGES = ['en', 'ru'] as const;
export type Language = (typeof LANGUAGES)[number];

export function languageOf(value: string | null | undefined): Language {
  return value?.toLowerCase().startsWith('ru') ? 'ru' : 'en';
}
