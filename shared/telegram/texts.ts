/**
 * Every text the bot and the worker send, in both languages. A person's language is
 * `user.language` (set from Telegram's language code at first contact, changeable in /settings).
 */

import { LANGUAGES, Language, languageOf } from './language';
import { counted, countedRange } from './plurals';
import { STARS_TEXTS, StarsTexts } from './stars-texts';

export { LANGUAGES, languageOf };
export type { Language };
export type DialogKind = 'image' | 'video' | 'music' | 'voice';

/** A plan's request window as /balance shows it: what is left and when it starts over (HH:MM UTC). */
export interface LimitWindow {
  remaining: number;
  limit: number;
  resetsAt: string;
}

export interface Texts {
  greeting(name: string, isNew: boolean, plan: { name: string; tokens: number }): string;
  /** An unknown command: what the bot can do (the menu follows). */
  unknownCommand(command: string): string;
  /** A feature no model of the plan offers, and the lowest plan that has one. */
  locked(feature: string, plan: string | null): string;
  lockedLabel(label: string, plan: string | null): string;
  menu: {
    chat: string;
    image: string;
    video: string;
    music: string;
    voice: string;
    tools: string;
    balance: string;
    history: string;
    settings: string;
    help: string;
    buy: string;
    mode: string;
  };
  commands: Record<
    'start' | 'new' | 'mode' | 'image' | 'video' | 'music' | 'voice' | 'balance' | 'history' | 'settings' | 'help' | 'cancel' | 'link' | 'redeem' | 'buy' | 'paysupport',
    string
  >;
  linkCode(code: string, minutes: number, webUrl: string): string;
  openWeb: string;
  help: string;
  chatHint(model: string): string;
  newChat: string;
  cancelled: string;
  nothingToCancel: string;
  thinking: string;
  noTextModel: string;
  /** The media dialogs: which model, what to make, none on the plan. */
  dialogs: Record<DialogKind, { pickModel: string; askPrompt: string; noModel: string; sendText: string }>;
  balance(b: { plan: string; tokens: number; held: number; bonus: number; nextRefill: string; hour: LimitWindow | null; day: LimitWindow | null }): string;
  historyEmpty: string;
  historyTitle: string;
  resend(id: number): string;
  notFound: string;
  status: Record<'pending' | 'completed' | 'failed', string>;
  settingsTitle(b: { language: string; textModel: string; imageModel: string; imageFormat: string }): string;
  settingsLanguage: string;
  settingsTextModel: string;
  settingsImageModel: string;
  settingsImageFormat: string;
  pickDefaultImageModel: string;
  pickImageFormat: string;
  imageModelSet(model: string): string;
  imageFormatSet(format: string): string;
  askEveryTime: string;
  pickTextModel: string;
  languageSet: string;
  textModelSet(model: string): string;
  tokensRange(min: number, max: number): string;
  pickOption(param: string): string;
  optionLabel(param: string, value: string | number): string;
  useButtons: string;
  confirmPrice(b: { model: string; price: number; balance: number }): string;
  confirm: string;
  cancel: string;
  started(eta: number | null): string;
  expired: string;
  // Voice messages and audio files.
  transcript(text: string): string;
  noSpeech: string;
  noSttModel: string;
  fileTooBig(limitMb: number): string;
  // Photo tools.
  toolsHint: string;
  pickTool: string;
  toolNames: Record<'remove-bg' | 'upscale-esrgan' | 'ocr' | 'colorize' | 'style-transfer' | 'face-swap', string>;
  noToolModel: string;
  askSecondPhoto: string;
  sendPhoto: string;
  // Refusals and failures, and the ways forward their buttons offer.
  refusalButtons: { balance: string; redeem: string; cheaper: string };
  /** An option the balance cannot cover, on its button; and the toast when it is pressed anyway. */
  unaffordable(label: string): string;
  unaffordableToast: string;
  /** What runs while a sent file is fetched from Telegram and the work starts. */
  working: Record<'transcribe' | 'remove-bg' | 'upscale-esrgan' | 'ocr' | 'colorize' | 'style-transfer' | 'face-swap', string>;
  downloadFailed(what: 'voice' | 'photo'): string;
  insufficientTokens(price: number, available: number): string;
  rateLimited(seconds: number, at: string): string;
  insufficientPlan: string;
  invalidRequest(message: string): string;
  modelUnavailable: string;
  failed(error: string): string;
  tooLarge: string;
  somethingWrong: string;
  // Redemption codes (/redeem).
  redeemAsk: string;
  redeemSendText: string;
  redeemedTokens(tokens: number, balance: number): string;
  redeemedPlan(plan: string, until: string, balance: number): string;
  redeemRefused: Record<'invalid' | 'expired' | 'spent' | 'alreadyRedeemed' | 'downgrade', string>;
  redeemTooManyAttempts(seconds: number, at: string): string;
  // Telegram Stars (/buy, /paysupport): see shared/telegram/stars-texts.ts.
  stars: StarsTexts;
}

const en: Texts = {
  greeting: (name, isNew, plan) =>
    isNew
      ? `Hello, ${name}! Your account is ready: the ${plan.name} plan, ${counted('en', plan.tokens, 'token')} a month.\nWrite me anything to chat, or pick what to do:`
      : `Welcome back, ${name}! Write me anything to chat, or pick what to do:`,
  menu: {
    chat: '💬 Chat',
    image: '🖼 Image',
    video: '🎬 Video',
    music: '🎵 Music',
    voice: '🗣 Voice',
    tools: '🛠 Photo tools',
    balance: '💰 Balance',
    history: '🕘 History',
    settings: '⚙️ Settings',
    help: '❓ Help',
    buy: '⭐ Buy tokens',
    mode: '🎭 Persona',
  },
  commands: {
    start: 'Start and show the menu',
    new: 'Start a new conversation',
    mode: 'Pick a persona',
    image: 'Create an image',
    video: 'Create a video',
    music: 'Compose music',
    voice: 'Turn text into a voice message',
    balance: 'Plan and tokens',
    history: 'Recent generations',
    settings: 'Language and models',
    help: 'What I can do',
    cancel: 'Leave the current dialog',
    link: 'Connect your web account',
    redeem: 'Redeem a code',
    buy: 'Buy tokens or a plan with Stars',
    paysupport: 'Help with payments and refunds',
  },
  linkCode: (code, minutes, webUrl) =>
    `Your link code: ${code}\nSign in at ${webUrl} and enter it under Account → Link Telegram within ${minutes} minutes. Your Telegram then shares that account's balance and history.`,
  openWeb: '🌐 Open the web dashboard',
  unknownCommand: (command) => `I do not know ${command}. Here is what I can do:`,
  locked: (feature, plan) =>
    plan ? `🔒 ${feature} is available from the ${plan} plan.` : `🔒 ${feature} is not offered on this server right now.`,
  lockedLabel: (label, plan) => `🔒 ${label.replace(/^\S+\s/, '')}${plan ? ` · ${plan}` : ''}`,
  help: [
    'I answer any message with the chat model of your choice, and I make images, videos, music and voice messages.',
    '',
    '/new: forget the conversation and start over',
    '/image, /video, /music, /voice: create one (you see the price before anything is charged)',
    'A voice message or audio file: I transcribe it and answer it.',
    'A photo: I run a tool on it (remove background, upscale, OCR, colorize, style, face swap); name it in the caption or pick it from the buttons.',
    '/balance: your plan, tokens and next refill',
    '/history: your recent generations',
    '/mode: a persona for the chat (an assistant from the marketplace)',
    '/settings: language, chat and image model, image format',
    '/redeem: redeem a code for tokens or a plan',
    '/buy: buy tokens or a plan with Telegram Stars; /paysupport: help with payments',
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
  dialogs: {
    image: { pickModel: 'Which model should draw it?', askPrompt: 'Describe the image:', noModel: 'No image model is available on your plan right now.', sendText: 'Please send the description as text, or /cancel.' },
    video: { pickModel: 'Which model should make the video?', askPrompt: 'Describe the video:', noModel: 'No video model is available on your plan right now.', sendText: 'Please send the description as text, or /cancel.' },
    music: { pickModel: 'Which model should compose it?', askPrompt: 'Describe the music (genre, mood, instruments):', noModel: 'No music model is available on your plan right now.', sendText: 'Please send the description as text, or /cancel.' },
    voice: { pickModel: 'Which model should speak it?', askPrompt: 'Send the text to speak:', noModel: 'No speech model is available on your plan right now.', sendText: 'Please send the text to speak, or /cancel.' },
  },
  balance: (b) =>
    [
      `Plan: ${b.plan}`,
      `Tokens: ${b.tokens}` + (b.bonus > 0 ? ` (bonus ${b.bonus})` : ''),
      ...(b.held > 0 ? [`Reserved by running generations: ${b.held}`] : []),
      `Next refill: ${b.nextRefill}`,
      ...(b.hour ? [`This hour: ${b.hour.remaining} of ${counted('en', b.hour.limit, 'request')} left (the count starts over at ${b.hour.resetsAt} UTC)`] : []),
      ...(b.day ? [`Today: ${b.day.remaining} of ${counted('en', b.day.limit, 'request')} left (starts over at ${b.day.resetsAt} UTC)`] : []),
      ...(!b.hour && !b.day ? ['Requests: no hourly or daily limit on your plan'] : []),
    ].join('\n'),
  historyEmpty: 'No generations yet.',
  historyTitle: 'Recent generations (a button sends a result again):',
  resend: (id) => `↻ #${id}`,
  notFound: 'That generation is no longer there.',
  status: { pending: 'running', completed: 'done', failed: 'failed' },
  settingsTitle: (b) => `Settings\nLanguage: ${b.language}\nChat model: ${b.textModel}\nImage model: ${b.imageModel}\nImage format: ${b.imageFormat}`,
  settingsLanguage: '🌐 Русский',
  settingsTextModel: '💬 Chat model',
  settingsImageModel: '🖼 Image model',
  settingsImageFormat: '🗂 Image format',
  pickDefaultImageModel: 'Pick the image model the image dialog uses:',
  pickImageFormat: 'Pick the image format:',
  imageModelSet: (model) => `Image model: ${model}.`,
  imageFormatSet: (format) => `Image format: ${format}.`,
  askEveryTime: 'ask every time',
  pickTextModel: 'Pick the chat model:',
  languageSet: 'Language: English.',
  textModelSet: (model) => `Chat model: ${model}.`,
  tokensRange: (min, max) => countedRange('en', min, max, 'token'),
  pickOption: (param) =>
    ({ size: 'Pick the size:', aspect_ratio: 'Pick the aspect ratio:', duration: 'Pick the duration:', voice_id: 'Pick the voice:' } as Record<string, string | undefined>)[param] ?? `Pick ${param}:`,
  optionLabel: (param, value) => (param === 'duration' ? `${value} s` : String(value)),
  useButtons: 'Please use the buttons above, or /cancel.',
  confirmPrice: (b) => `${b.model}: ${counted('en', b.price, 'token')} (you have ${b.balance}). Start?`,
  confirm: '✅ Start',
  cancel: '✖️ Cancel',
  started: (eta) => (eta ? `Started. The result will be here in about ${eta} s.` : 'Started. The result will be here shortly.'),
  expired: 'This button has expired.',
  transcript: (text) => `🎙 ${text}`,
  noSpeech: 'I could not hear any words in it.',
  noSttModel: 'No transcription model is available on your plan right now.',
  fileTooBig: (limitMb) => `This file is over ${limitMb} MB: Telegram does not let bots download files that large. Please send a shorter recording.`,
  toolsHint: 'Send me a photo. Name the tool in the caption (remove background, upscale, OCR, colorize, style, face swap) or pick it from the buttons I show.',
  pickTool: 'What should I do with this photo?',
  toolNames: { 'remove-bg': '✂️ Remove background', 'upscale-esrgan': '🔍 Upscale', ocr: '🔤 Recognize text', colorize: '🎨 Colorize', 'style-transfer': '🖌 Style', 'face-swap': '🙂 Face swap' },
  noToolModel: 'This tool is not available on your plan right now.',
  askSecondPhoto: 'Now send the photo to put this face into.',
  sendPhoto: 'Please send a photo, or /cancel.',
  refusalButtons: { balance: '💰 Balance and limits', redeem: '🎟 Redeem a code', cheaper: '↩️ Pick a cheaper option' },
  unaffordable: (label) => `🚫 ${label}`,
  unaffordableToast: 'Your balance does not cover this option.',
  working: {
    transcribe: '🎙 Transcribing…',
    'remove-bg': '✂️ Removing the background…',
    'upscale-esrgan': '🔍 Upscaling…',
    ocr: '🔤 Recognizing the text…',
    colorize: '🎨 Colorizing…',
    'style-transfer': '🖌 Restyling…',
    'face-swap': '🙂 Swapping the faces…',
  },
  downloadFailed: (what) =>
    `I could not download your ${what === 'voice' ? 'recording' : 'photo'} from Telegram, so nothing was started and nothing was charged. Please send it again in a minute.`,
  insufficientTokens: (price, available) =>
    `Not enough tokens: this costs ${counted('en', price, 'token')} and you have ${available} available. Tokens refill monthly with your plan.`,
  rateLimited: (seconds, at) => `Your plan's request limit is reached. Try again in ${formatWait(seconds, 'en')} (at ${at} UTC).`,
  insufficientPlan: 'This model needs a higher plan.',
  invalidRequest: (message) => `I cannot send that: ${message}.`,
  modelUnavailable: 'This model is not available right now.',
  failed: (error) => `The generation failed: ${error}. Nothing was charged.`,
  tooLarge: 'The result is too large to send through Telegram.',
  somethingWrong: 'Something went wrong on my side. Please try again.',
  redeemAsk: 'Send me the code to redeem:',
  redeemSendText: 'Please send the code as text, or /cancel.',
  redeemedTokens: (tokens, balance) => `Done: ${counted('en', tokens, 'bonusToken')} added. You now have ${counted('en', balance, 'token')}.`,
  redeemedPlan: (plan, until, balance) => `Done: your plan is ${plan} until ${until}. You have ${counted('en', balance, 'token')}.`,
  redeemRefused: {
    invalid: 'There is no such code. Check it and try again.',
    expired: 'This code has expired.',
    spent: 'This code has been used up.',
    alreadyRedeemed: 'You have already redeemed this code.',
    downgrade: 'This code is for a lower plan than the one you have now; redeem it once your plan ends.',
  },
  redeemTooManyAttempts: (seconds, at) => `Too many wrong codes. Try again in ${formatWait(seconds, 'en')} (at ${at} UTC).`,
  stars: STARS_TEXTS.en,
};

const ru: Texts = {
  greeting: (name, isNew, plan) =>
    isNew
      ? `Здравствуйте, ${name}! Аккаунт создан: тариф ${plan.name}, ${counted('ru', plan.tokens, 'token')} в месяц.\nНапишите что угодно, чтобы поговорить, или выберите действие:`
      : `С возвращением, ${name}! Напишите что угодно, чтобы поговорить, или выберите действие:`,
  menu: {
    chat: '💬 Чат',
    image: '🖼 Картинка',
    video: '🎬 Видео',
    music: '🎵 Музыка',
    voice: '🗣 Озвучка',
    tools: '🛠 Обработка фото',
    balance: '💰 Баланс',
    history: '🕘 История',
    settings: '⚙️ Настройки',
    help: '❓ Помощь',
    buy: '⭐ Купить токены',
    mode: '🎭 Персона',
  },
  commands: {
    start: 'Начать и показать меню',
    new: 'Начать новый разговор',
    mode: 'Выбрать персону',
    image: 'Создать картинку',
    video: 'Создать видео',
    music: 'Сочинить музыку',
    voice: 'Озвучить текст голосовым сообщением',
    balance: 'Тариф и токены',
    history: 'Последние генерации',
    settings: 'Язык и модели',
    help: 'Что я умею',
    cancel: 'Выйти из текущего диалога',
    link: 'Подключить веб-аккаунт',
    redeem: 'Активировать код',
    buy: 'Купить токены или тариф за звёзды',
    paysupport: 'Помощь с оплатой и возвраты',
  },
  linkCode: (code, minutes, webUrl) =>
    `Ваш код привязки: ${code}\nВойдите на ${webUrl} и введите его в разделе «Аккаунт → Привязать Telegram» в течение ${minutes} минут. Telegram будет использовать баланс и историю того аккаунта.`,
  openWeb: '🌐 Открыть веб-кабинет',
  unknownCommand: (command) => `Я не знаю команду ${command}. Вот что я умею:`,
  locked: (feature, plan) =>
    plan ? `🔒 ${feature} — на тарифе ${plan} и выше.` : `🔒 ${feature} сейчас не предлагается на этом сервере.`,
  lockedLabel: (label, plan) => `🔒 ${label.replace(/^\S+\s/, '')}${plan ? ` · ${plan}` : ''}`,
  help: [
    'Я отвечаю на любое сообщение выбранной чат-моделью и создаю картинки, видео, музыку и голосовые сообщения.',
    '',
    '/new: забыть разговор и начать заново',
    '/image, /video, /music, /voice: создать (цену вы увидите до списания)',
    'Голосовое сообщение или аудиофайл: я расшифрую его и отвечу.',
    'Фото: я обработаю его (убрать фон, увеличить, распознать текст, раскрасить, стиль, замена лица); назовите действие в подписи или выберите кнопкой.',
    '/balance: тариф, токены и следующее пополнение',
    '/history: последние генерации',
    '/mode: персона для чата (ассистент из каталога)',
    '/settings: язык, чат-модель и модель картинок, формат картинок',
    '/redeem: активировать код на токены или тариф',
    '/buy: купить токены или тариф за звёзды Telegram; /paysupport: помощь с оплатой',
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
  dialogs: {
    image: { pickModel: 'Какой моделью рисовать?', askPrompt: 'Опишите картинку:', noModel: 'На вашем тарифе сейчас нет доступной модели для картинок.', sendText: 'Пожалуйста, пришлите описание текстом или /cancel.' },
    video: { pickModel: 'Какой моделью снимать видео?', askPrompt: 'Опишите видео:', noModel: 'На вашем тарифе сейчас нет доступной модели для видео.', sendText: 'Пожалуйста, пришлите описание текстом или /cancel.' },
    music: { pickModel: 'Какой моделью сочинять?', askPrompt: 'Опишите музыку (жанр, настроение, инструменты):', noModel: 'На вашем тарифе сейчас нет доступной модели для музыки.', sendText: 'Пожалуйста, пришлите описание текстом или /cancel.' },
    voice: { pickModel: 'Какой моделью озвучить?', askPrompt: 'Пришлите текст для озвучки:', noModel: 'На вашем тарифе сейчас нет доступной модели озвучки.', sendText: 'Пожалуйста, пришлите текст для озвучки или /cancel.' },
  },
  balance: (b) =>
    [
      `Тариф: ${b.plan}`,
      `Токены: ${b.tokens}` + (b.bonus > 0 ? ` (бонусные ${b.bonus})` : ''),
      ...(b.held > 0 ? [`Зарезервировано идущими генерациями: ${b.held}`] : []),
      `Следующее пополнение: ${b.nextRefill}`,
      ...(b.hour ? [`В этот час: осталось ${b.hour.remaining} из ${counted('ru', b.hour.limit, 'request')} (счёт начнётся заново в ${b.hour.resetsAt} UTC)`] : []),
      ...(b.day ? [`Сегодня: осталось ${b.day.remaining} из ${counted('ru', b.day.limit, 'request')} (заново в ${b.day.resetsAt} UTC)`] : []),
      ...(!b.hour && !b.day ? ['Запросы: без часового и дневного лимита'] : []),
    ].join('\n'),
  historyEmpty: 'Генераций пока нет.',
  historyTitle: 'Последние генерации (кнопка пришлёт результат ещё раз):',
  resend: (id) => `↻ #${id}`,
  notFound: 'Этой генерации больше нет.',
  status: { pending: 'в работе', completed: 'готово', failed: 'ошибка' },
  settingsTitle: (b) => `Настройки\nЯзык: ${b.language}\nЧат-модель: ${b.textModel}\nМодель картинок: ${b.imageModel}\nФормат картинок: ${b.imageFormat}`,
  settingsLanguage: '🌐 English',
  settingsTextModel: '💬 Чат-модель',
  settingsImageModel: '🖼 Модель картинок',
  settingsImageFormat: '🗂 Формат картинок',
  pickDefaultImageModel: 'Выберите модель, которой рисует диалог картинок:',
  pickImageFormat: 'Выберите формат картинок:',
  imageModelSet: (model) => `Модель картинок: ${model}.`,
  imageFormatSet: (format) => `Формат картинок: ${format}.`,
  askEveryTime: 'спрашивать каждый раз',
  pickTextModel: 'Выберите чат-модель:',
  languageSet: 'Язык: русский.',
  textModelSet: (model) => `Чат-модель: ${model}.`,
  tokensRange: (min, max) => countedRange('ru', min, max, 'token'),
  pickOption: (param) =>
    ({ size: 'Выберите размер:', aspect_ratio: 'Выберите соотношение сторон:', duration: 'Выберите длительность:', voice_id: 'Выберите голос:' } as Record<string, string | undefined>)[param] ??
    `Выберите ${param}:`,
  optionLabel: (param, value) => (param === 'duration' ? `${value} с` : String(value)),
  useButtons: 'Пожалуйста, нажмите одну из кнопок выше или /cancel.',
  confirmPrice: (b) => `${b.model}: ${counted('ru', b.price, 'token')} (у вас ${b.balance}). Запускаем?`,
  confirm: '✅ Запустить',
  cancel: '✖️ Отмена',
  started: (eta) => (eta ? `Запущено. Результат будет здесь примерно через ${eta} с.` : 'Запущено. Результат скоро будет здесь.'),
  expired: 'Эта кнопка устарела.',
  transcript: (text) => `🎙 ${text}`,
  noSpeech: 'Я не расслышал в нём ни слова.',
  noSttModel: 'На вашем тарифе сейчас нет доступной модели расшифровки.',
  fileTooBig: (limitMb) => `Файл больше ${limitMb} МБ: Telegram не даёт ботам скачивать такие файлы. Пришлите запись покороче.`,
  toolsHint: 'Пришлите фото. Назовите действие в подписи (убрать фон, увеличить, распознать текст, раскрасить, стиль, замена лица) или выберите его кнопкой.',
  pickTool: 'Что сделать с этим фото?',
  toolNames: { 'remove-bg': '✂️ Убрать фон', 'upscale-esrgan': '🔍 Увеличить', ocr: '🔤 Распознать текст', colorize: '🎨 Раскрасить', 'style-transfer': '🖌 Стиль', 'face-swap': '🙂 Замена лица' },
  noToolModel: 'Это действие сейчас недоступно на вашем тарифе.',
  askSecondPhoto: 'Теперь пришлите фото, на которое перенести это лицо.',
  sendPhoto: 'Пожалуйста, пришлите фото или /cancel.',
  refusalButtons: { balance: '💰 Баланс и лимиты', redeem: '🎟 Активировать код', cheaper: '↩️ Выбрать вариант дешевле' },
  unaffordable: (label) => `🚫 ${label}`,
  unaffordableToast: 'Вашего баланса не хватает на этот вариант.',
  working: {
    transcribe: '🎙 Расшифровываю…',
    'remove-bg': '✂️ Убираю фон…',
    'upscale-esrgan': '🔍 Увеличиваю…',
    ocr: '🔤 Распознаю текст…',
    colorize: '🎨 Раскрашиваю…',
    'style-transfer': '🖌 Меняю стиль…',
    'face-swap': '🙂 Меняю лица…',
  },
  downloadFailed: (what) =>
    `Не удалось скачать ${what === 'voice' ? 'вашу запись' : 'ваше фото'} из Telegram, поэтому ничего не запущено и ничего не списано. Пришлите ещё раз через минуту.`,
  insufficientTokens: (price, available) =>
    `Недостаточно токенов: это стоит ${counted('ru', price, 'token')}, а у вас доступно ${available}. Токены пополняются каждый месяц по тарифу.`,
  rateLimited: (seconds, at) => `Достигнут лимит запросов вашего тарифа. Попробуйте через ${formatWait(seconds, 'ru')} (в ${at} UTC).`,
  insufficientPlan: 'Эта модель доступна на более высоком тарифе.',
  invalidRequest: (message) => `Не могу это отправить: ${message}.`,
  modelUnavailable: 'Эта модель сейчас недоступна.',
  failed: (error) => `Генерация не удалась: ${error}. Ничего не списано.`,
  tooLarge: 'Результат слишком большой, чтобы отправить его через Telegram.',
  somethingWrong: 'У меня что-то пошло не так. Попробуйте ещё раз.',
  redeemAsk: 'Пришлите код для активации:',
  redeemSendText: 'Пожалуйста, пришлите код текстом или /cancel.',
  redeemedTokens: (tokens, balance) => `Готово: начислено ${counted('ru', tokens, 'bonusToken')}. Теперь у вас ${counted('ru', balance, 'token')}.`,
  redeemedPlan: (plan, until, balance) => `Готово: ваш тариф ${plan} до ${until}. У вас ${counted('ru', balance, 'token')}.`,
  redeemRefused: {
    invalid: 'Такого кода нет. Проверьте его и попробуйте ещё раз.',
    expired: 'Срок действия этого кода истёк.',
    spent: 'Этот код уже израсходован.',
    alreadyRedeemed: 'Вы уже активировали этот код.',
    downgrade: 'Этот код на тариф ниже вашего текущего; активируйте его, когда ваш тариф закончится.',
  },
  redeemTooManyAttempts: (seconds, at) => `Слишком много неверных кодов. Попробуйте через ${formatWait(seconds, 'ru')} (в ${at} UTC).`,
  stars: STARS_TEXTS.ru,
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
