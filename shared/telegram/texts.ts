/**
 * Every text the bot and the worker send, in both languages. A person's language is
 * `user.language` (set from Telegram's language code at first contact, changeable in /settings).
 */

export const LANGUAGES = ['en', 'ru'] as const;
export type Language = (typeof LANGUAGES)[number];

export function languageOf(value: string | null | undefined): Language {
  return value?.toLowerCase().startsWith('ru') ? 'ru' : 'en';
}

export interface Texts {
  greeting(name: string, isNew: boolean): string;
  menu: {
    chat: string;
    image: string;
    balance: string;
    history: string;
    settings: string;
    help: string;
  };
  commands: Record<'start' | 'new' | 'image' | 'balance' | 'history' | 'settings' | 'help' | 'cancel' | 'link', string>;
  linkCode(code: string, minutes: number): string;
  help: string;
  chatHint(model: string): string;
  newChat: string;
  cancelled: string;
  nothingToCancel: string;
  thinking: string;
  noTextModel: string;
  noImageModel: string;
  balance(b: { plan: string; tokens: number; held: number; bonus: number; nextRefill: string }): string;
  historyEmpty: string;
  historyTitle: string;
  status: Record<'pending' | 'completed' | 'failed', string>;
  settingsTitle(b: { language: string; textModel: string }): string;
  settingsLanguage: string;
  settingsTextModel: string;
  pickTextModel: string;
  languageSet: string;
  textModelSet(model: string): string;
  pickImageModel: string;
  tokensRange(min: number, max: number): string;
  askPrompt: string;
  pickOption(param: string): string;
  useButtons: string;
  sendText: string;
  confirmPrice(b: { model: string; price: number; balance: number }): string;
  confirm: string;
  cancel: string;
  started(eta: number | null): string;
  expired: string;
  // Refusals and failures.
  insufficientTokens(price: number, available: number): string;
  rateLimited(seconds: number, at: string): string;
  insufficientPlan: string;
  invalidRequest(message: string): string;
  modelUnavailable: string;
  failed(error: string): string;
  tooLarge: string;
  somethingWrong: string;
}

const en: Texts = {
  greeting: (name, isNew) =>
    isNew
      ? `Hello, ${name}! Your account is ready, with the free plan's monthly tokens.\nWrite me anything to chat, or pick what to do:`
      : `Welcome back, ${name}! Write me anything to chat, or pick what to do:`,
  menu: { chat: '💬 Chat', image: '🖼 Image', balance: '💰 Balance', history: '🕘 History', settings: '⚙️ Settings', help: '❓ Help' },
  commands: {
    start: 'Start and show the menu',
    new: 'Start a new conversation',
    image: 'Create an image',
    balance: 'Plan and tokens',
    history: 'Recent generations',
    settings: 'Language and models',
    help: 'What I can do',
    cancel: 'Leave the current dialog',
    link: 'Connect your web account',
  },
  linkCode: (code, minutes) =>
    `Your link code: ${code}\nSign in on the web and send it to POST /api/v2/auth/link within ${minutes} minutes; your Telegram then shares that account's balance and history.`,
  help: [
    'I answer any message with the chat model of your choice, and I make images.',
    '',
    '/new: forget the conversation and start over',
    '/image: create an image (you see the price before anything is charged)',
    '/balance: your plan, tokens and next refill',
    '/history: your recent generations',
    '/settings: language and chat model',
    '/cancel: leave the current dialog',
    '',
    'Tokens are charged only when a generation completes. In groups, mention me or reply to my message.',
  ].join('\n'),
  chatHint: (model) => `Just write your message: I answer with ${model}. /new starts over.`,
  newChat: 'Done: the conversation starts over.',
  cancelled: 'Cancelled.',
  nothingToCancel: 'There is nothing to cancel.',
  thinking: '…',
  noTextModel: 'No chat model is available on your plan right now.',
  noImageModel: 'No image model is available on your plan right now.',
  balance: (b) =>
    [
      `Plan: ${b.plan}`,
      `Tokens: ${b.tokens}` + (b.bonus > 0 ? ` (bonus ${b.bonus})` : ''),
      ...(b.held > 0 ? [`Reserved by running generations: ${b.held}`] : []),
      `Next refill: ${b.nextRefill}`,
    ].join('\n'),
  historyEmpty: 'No generations yet.',
  historyTitle: 'Recent generations:',
  status: { pending: 'running', completed: 'done', failed: 'failed' },
  settingsTitle: (b) => `Settings\nLanguage: ${b.language}\nChat model: ${b.textModel}`,
  settingsLanguage: '🌐 Русский',
  settingsTextModel: '💬 Chat model',
  pickTextModel: 'Pick the chat model:',
  languageSet: 'Language: English.',
  textModelSet: (model) => `Chat model: ${model}.`,
  pickImageModel: 'Which model should draw it?',
  tokensRange: (min, max) => (min === max ? `${min} tokens` : `${min}–${max} tokens`),
  askPrompt: 'Describe the image:',
  pickOption: (param) => (param === 'size' ? 'Pick the size:' : param === 'aspect_ratio' ? 'Pick the aspect ratio:' : `Pick ${param}:`),
  useButtons: 'Please use the buttons above, or /cancel.',
  sendText: 'Please send the description as text, or /cancel.',
  confirmPrice: (b) => `${b.model}: ${b.price} tokens (you have ${b.balance}). Start?`,
  confirm: '✅ Start',
  cancel: '✖️ Cancel',
  started: (eta) => (eta ? `Started. The result will be here in about ${eta} s.` : 'Started. The result will be here shortly.'),
  expired: 'This button has expired.',
  insufficientTokens: (price, available) =>
    `Not enough tokens: this costs ${price} and you have ${available} available. Tokens refill monthly with your plan.`,
  rateLimited: (seconds, at) => `Your plan's request limit is reached. Try again in ${formatWait(seconds, 'en')} (at ${at} UTC).`,
  insufficientPlan: 'This model needs a higher plan.',
  invalidRequest: (message) => `I cannot send that: ${message}.`,
  modelUnavailable: 'This model is not available right now.',
  failed: (error) => `The generation failed: ${error}. Nothing was charged.`,
  tooLarge: 'The result is too large to send through Telegram.',
  somethingWrong: 'Something went wrong on my side. Please try again.',
};

const ru: Texts = {
  greeting: (name, isNew) =>
    isNew
      ? `Здравствуйте, ${name}! Аккаунт создан, на нём месячные токены бесплатного тарифа.\nНапишите что угодно, чтобы поговорить, или выберите действие:`
      : `С возвращением, ${name}! Напишите что угодно, чтобы поговорить, или выберите действие:`,
  menu: { chat: '💬 Чат', image: '🖼 Картинка', balance: '💰 Баланс', history: '🕘 История', settings: '⚙️ Настройки', help: '❓ Помощь' },
  commands: {
    start: 'Начать и показать меню',
    new: 'Начать новый разговор',
    image: 'Создать картинку',
    balance: 'Тариф и токены',
    history: 'Последние генерации',
    settings: 'Язык и модели',
    help: 'Что я умею',
    cancel: 'Выйти из текущего диалога',
    link: 'Подключить веб-аккаунт',
  },
  linkCode: (code, minutes) =>
    `Ваш код привязки: ${code}\nВойдите на сайте и отправьте его в POST /api/v2/auth/link в течение ${minutes} минут — Telegram будет использовать баланс и историю того аккаунта.`,
  help: [
    'Я отвечаю на любое сообщение выбранной чат-моделью и рисую картинки.',
    '',
    '/new: забыть разговор и начать заново',
    '/image: создать картинку (цену вы увидите до списания)',
    '/balance: тариф, токены и следующее пополнение',
    '/history: последние генерации',
    '/settings: язык и чат-модель',
    '/cancel: выйти из текущего диалога',
    '',
    'Токены списываются только за завершённую генерацию. В группах упомяните меня или ответьте на моё сообщение.',
  ].join('\n'),
  chatHint: (model) => `Просто напишите сообщение: отвечает ${model}. /new начинает заново.`,
  newChat: 'Готово: разговор начинается заново.',
  cancelled: 'Отменено.',
  nothingToCancel: 'Отменять нечего.',
  thinking: '…',
  noTextModel: 'На вашем тарифе сейчас нет доступной чат-модели.',
  noImageModel: 'На вашем тарифе сейчас нет доступной модели для картинок.',
  balance: (b) =>
    [
      `Тариф: ${b.plan}`,
      `Токены: ${b.tokens}` + (b.bonus > 0 ? ` (бонусные ${b.bonus})` : ''),
      ...(b.held > 0 ? [`Зарезервировано идущими генерациями: ${b.held}`] : []),
      `Следующее пополнение: ${b.nextRefill}`,
    ].join('\n'),
  historyEmpty: 'Генераций пока нет.',
  historyTitle: 'Последние генерации:',
  status: { pending: 'в работе', completed: 'готово', failed: 'ошибка' },
  settingsTitle: (b) => `Настройки\nЯзык: ${b.language}\nЧат-модель: ${b.textModel}`,
  settingsLanguage: '🌐 English',
  settingsTextModel: '💬 Чат-модель',
  pickTextModel: 'Выберите чат-модель:',
  languageSet: 'Язык: русский.',
  textModelSet: (model) => `Чат-модель: ${model}.`,
  pickImageModel: 'Какой моделью рисовать?',
  tokensRange: (min, max) => (min === max ? `${min} ток.` : `${min}–${max} ток.`),
  askPrompt: 'Опишите картинку:',
  pickOption: (param) => (param === 'size' ? 'Выберите размер:' : param === 'aspect_ratio' ? 'Выберите соотношение сторон:' : `Выберите ${param}:`),
  useButtons: 'Пожалуйста, нажмите одну из кнопок выше или /cancel.',
  sendText: 'Пожалуйста, пришлите описание текстом или /cancel.',
  confirmPrice: (b) => `${b.model}: ${b.price} токенов (у вас ${b.balance}). Запускаем?`,
  confirm: '✅ Запустить',
  cancel: '✖️ Отмена',
  started: (eta) => (eta ? `Запущено. Результат будет здесь примерно через ${eta} с.` : 'Запущено. Результат скоро будет здесь.'),
  expired: 'Эта кнопка устарела.',
  insufficientTokens: (price, available) =>
    `Недостаточно токенов: это стоит ${price}, а у вас доступно ${available}. Токены пополняются каждый месяц по тарифу.`,
  rateLimited: (seconds, at) => `Достигнут лимит запросов вашего тарифа. Попробуйте через ${formatWait(seconds, 'ru')} (в ${at} UTC).`,
  insufficientPlan: 'Эта модель доступна на более высоком тарифе.',
  invalidRequest: (message) => `Не могу это отправить: ${message}.`,
  modelUnavailable: 'Эта модель сейчас недоступна.',
  failed: (error) => `Генерация не удалась: ${error}. Ничего не списано.`,
  tooLarge: 'Результат слишком большой, чтобы отправить его через Telegram.',
  somethingWrong: 'У меня что-то пошло не так. Попробуйте ещё раз.',
};

function formatWait(seconds: number, language: Language): string {
  if (seconds < 60) return language === 'ru' ? `${seconds} с` : `${seconds} s`;
  const minutes = Math.ceil(seconds / 60);
  if (minutes < 60) return language === 'ru' ? `${minutes} мин` : `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  const rest = minutes % 60;
  return language === 'ru' ? `${hours} ч ${rest} мин` : `${hours} h ${rest} min`;
}

export const TEXTS: Record<Language, Texts> = { en, ru };

export function textsFor(language: string | null | undefined): Texts {
  return TEXTS[languageOf(language)];
}
