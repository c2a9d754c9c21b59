/**
 * Counted words in both languages ("1 token", "2 tokens"; "1 токен", "2 токена", "5 токенов").
 * CLDR's plural rules (Intl.PluralRules) pick the form, so 21 is "21 токен" and 11 "11 токенов".
 */
import type { Language } from './language';

type Forms = Partial<Record<Intl.LDMLPluralRule, string>> & { other: string };

const RULES: Record<Language, Intl.PluralRules> = { en: new Intl.PluralRules('en'), ru: new Intl.PluralRules('ru') };

const NOUNS = {
  token: { en: { one: 'token', other: 'tokens' }, ru: { one: 'токен', few: 'токена', many: 'токенов', other: 'токена' } },
  bonusToken: { en: { one: 'bonus token', other: 'bonus tokens' }, ru: { one: 'бонусный токен', few: 'бонусных токена', many: 'бонусных токенов', other: 'бонусного токена' } },
  request: { en: { one: 'request', other: 'requests' }, ru: { one: 'запрос', few: 'запроса', many: 'запросов', other: 'запроса' } },
} satisfies Record<string, Record<Language, Forms>>;

export type Noun = keyof typeof NOUNS;

/** The noun's form for this count, without the number. */
export function nounFor(language: Language, count: number, noun: Noun): string {
  const forms: Forms = NOUNS[noun][language];
  return forms[RULES[language].select(count)] ?? forms.other;
}

/** "5 tokens", "5 токенов". */
export function counted(language: Language, count: number, noun: Noun): string {
  return `${count} ${nounFor(language, count, noun)}`;
}

/** "1–5 tokens": the noun agrees with the last number, as both languages say it. */
export function countedRange(language: Language, min: number, max: number, noun: Noun): string {
  return min === max ? counted(language, max, noun) : `${min}–${max} ${nounFor(language, max, noun)}`;
}
