/** What inline mode (`@bot prompt` in any chat) shows, in both languages. */
import type { Language } from './language';
import { counted } from './plurals';

export interface InlineTexts {
  /** The button above the results of an empty query (it opens the bot's private chat). */
  hint: string;
  /** The button above a refusal: the bot's chat has the balance and the ways to top up. */
  openBot: string;
  chatTitle(prompt: string): string;
  imageTitle(prompt: string): string;
  /** A result's description: the model, the exact price, and the balance it comes from. */
  priced(model: string, price: number, balance: number): string;
  /** What the chosen result sends at once; the finished answer or image replaces it. */
  chatPlaceholder(prompt: string): string;
  imagePlaceholder(prompt: string): string;
  /** The placeholder's one button (Telegram names a sent inline message only when it has a keyboard). */
  openBotButton: string;
  chatAnswer(prompt: string, answer: string): string;
  imageCaption(prompt: string): string;
  /** Telegram could not fetch the finished image from PUBLIC_BASE_URL. */
  imageUnreachable(prompt: string): string;
  refusalTitle: string;
  /** A refused result's description, said before anything is charged. */
  unaffordable(what: 'chat' | 'image', price: number, balance: number): string;
  nothingOffered: string;
}

const clip = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

const en: InlineTexts = {
  hint: 'Type a question or a picture to make',
  openBot: 'Open the bot: balance and top-ups',
  chatTitle: (prompt) => `💬 Answer: ${clip(prompt, 60)}`,
  imageTitle: (prompt) => `🖼 Image: ${clip(prompt, 60)}`,
  priced: (model, price, balance) => `${model} · ${counted('en', price, 'token')} · balance ${counted('en', balance, 'token')}`,
  chatPlaceholder: (prompt) => `💬 ${prompt}\n\n⏳ Thinking…`,
  imagePlaceholder: (prompt) => `🖼 ${prompt}\n\n⏳ Drawing…`,
  openBotButton: '🤖 Open the bot',
  chatAnswer: (prompt, answer) => `💬 ${prompt}\n\n${answer}`,
  imageCaption: (prompt) => `🖼 ${prompt}`,
  imageUnreachable: (prompt) => `🖼 ${prompt}\n\nThe image is ready, but Telegram could not fetch it from this server. Open the bot: /history sends it.`,
  refusalTitle: '⚠️ Not available right now',
  unaffordable: (what, price, balance) =>
    `${what === 'chat' ? 'An answer' : 'An image'} costs ${counted('en', price, 'token')}; you have ${counted('en', balance, 'token')}. Nothing is charged.`,
  nothingOffered: 'No chat or image model is available on your plan.',
};

const ru: InlineTexts = {
  hint: 'Напишите вопрос или что нарисовать',
  openBot: 'Открыть бота: баланс и пополнение',
  chatTitle: (prompt) => `💬 Ответ: ${clip(prompt, 60)}`,
  imageTitle: (prompt) => `🖼 Картинка: ${clip(prompt, 60)}`,
  priced: (model, price, balance) => `${model} · ${counted('ru', price, 'token')} · на балансе ${counted('ru', balance, 'token')}`,
  chatPlaceholder: (prompt) => `💬 ${prompt}\n\n⏳ Думаю…`,
  imagePlaceholder: (prompt) => `🖼 ${prompt}\n\n⏳ Рисую…`,
  openBotButton: '🤖 Открыть бота',
  chatAnswer: (prompt, answer) => `💬 ${prompt}\n\n${answer}`,
  imageCaption: (prompt) => `🖼 ${prompt}`,
  imageUnreachable: (prompt) => `🖼 ${prompt}\n\nКартинка готова, но Telegram не смог загрузить её с этого сервера. Откройте бота: /history пришлёт её.`,
  refusalTitle: '⚠️ Сейчас недоступно',
  unaffordable: (what, price, balance) =>
    `${what === 'chat' ? 'Ответ' : 'Картинка'} стоит ${counted('ru', price, 'token')}, у вас ${counted('ru', balance, 'token')}. Ничего не списано.`,
  nothingOffered: 'На вашем тарифе нет модели для чата или картинок.',
};

export const INLINE_TEXTS: Record<Language, InlineTexts> = { en, ru };
