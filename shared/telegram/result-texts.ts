/** What the bot says when a result arrives, and on the result's buttons, in both languages. */
import type { Language } from './language';
import { counted } from './plurals';

export interface ResultTexts {
  /** The "started" message once the result is here. */
  done: string;
  /** The result's caption: the model, the tokens charged, the balance left. */
  caption(b: { model: string; charged: number; balance: number }): string;
  again(price: number): string;
  changePrompt: string;
  /** Pressed on a generation that is not the presser's (a forwarded result) or is gone. */
  notFound: string;
  /** A second press of a result's Again (or tool) button: the first one started it. */
  alreadyStarted: string;
}

const en: ResultTexts = {
  done: '✅ Done',
  caption: (b) => `${b.model} · ${counted('en', b.charged, 'token')} · ${counted('en', b.balance, 'token')} left`,
  again: (price) => `🔁 Again · ${counted('en', price, 'token')}`,
  changePrompt: '✏️ Change prompt',
  notFound: 'Not found: this button belongs to someone else’s result.',
  alreadyStarted: 'Already started: the result will come below.',
};

const ru: ResultTexts = {
  done: '✅ Готово',
  caption: (b) => `${b.model} · ${counted('ru', b.charged, 'token')} · осталось ${counted('ru', b.balance, 'token')}`,
  again: (price) => `🔁 Ещё раз · ${counted('ru', price, 'token')}`,
  changePrompt: '✏️ Изменить запрос',
  notFound: 'Не найдено: эта кнопка относится к чужому результату.',
  alreadyStarted: 'Уже запущено: результат придёт ниже.',
};

export const RESULT_TEXTS: Record<Language, ResultTexts> = { en, ru };
