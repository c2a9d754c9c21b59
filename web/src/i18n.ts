/**
 * The dashboard's words in English and Russian. The language follows the account's `language`
 * setting once signed in (Settings switches it), and the browser's before. Russian must have every
 * key English has: the type says so.
 */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import { en } from './messages/en';
import { ru } from './messages/ru';

export type MessageKey = keyof typeof en;
export type Language = 'en' | 'ru';

const dictionaries: Record<Language, Record<MessageKey, string>> = { en, ru };

export type Translate = (key: MessageKey, vars?: Record<string, string | number>) => string;

/** "token" in the form its number asks for (`{tokens:n}` in a message: the noun for the number in `n`). */
const TOKEN_NOUN: Record<Language, Partial<Record<Intl.LDMLPluralRule, string>> & { other: string }> = {
  en: { one: 'token', other: 'tokens' },
  ru: { one: 'токен', few: 'токена', many: 'токенов', other: 'токена' },
};

export function translator(language: Language): Translate {
  const words = dictionaries[language];
  const plural = new Intl.PluralRules(language === 'ru' ? 'ru-RU' : 'en-GB');
  const nouns = TOKEN_NOUN[language];
  return (key, vars = {}) =>
    words[key]
      .replace(/\{tokens:(\w+)\}/g, (_whole, name: string) => {
        // The number may come formatted ("1,000", "8 000"): its digits are what counts.
        const count = Number(String(vars[name] ?? '').replace(/[^\d.]/g, ''));
        return nouns[plural.select(count)] ?? nouns.other;
      })
      .replace(/\{(\w+)\}/g, (whole, name: string) => (name in vars ? String(vars[name]) : whole));
}

export function browserLanguage(): Language {
  return navigator.language.toLowerCase().startsWith('ru') ? 'ru' : 'en';
}

export interface I18n {
  lang: Language;
  t: Translate;
  /** Dates and times in the reader's language and time zone. */
  dateTime: (iso: string) => string;
  date: (iso: string) => string;
  time: (when: Date) => string;
}

export function i18nFor(lang: Language): I18n {
  const locale = lang === 'ru' ? 'ru-RU' : 'en-GB';
  const dateTime = new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeStyle: 'short' });
  const date = new Intl.DateTimeFormat(locale, { dateStyle: 'medium' });
  const time = new Intl.DateTimeFormat(locale, { hour: '2-digit', minute: '2-digit', hour12: false });
  return {
    lang,
    t: translator(lang),
    dateTime: (iso) => dateTime.format(new Date(iso)),
    date: (iso) => date.format(new Date(iso)),
    time: (when) => time.format(when),
  };
}

export const I18nContext = createContext<I18n>(i18nFor('en'));

export function useI18n(): I18n {
  return useContext(I18nContext);
}
