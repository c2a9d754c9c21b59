/** The command list Telegram shows, and the main menu (inline keyboard). */
import { InlineKeyboard } from 'grammy';
import type { BotCommand } from 'grammy/types';
import { Language, Texts, TEXTS } from '../shared/telegram/texts';

const COMMANDS = ['start', 'new', 'image', 'video', 'music', 'voice', 'balance', 'history', 'settings', 'help', 'link', 'redeem', 'buy', 'paysupport', 'cancel'] as const;

/** The commands shown in Telegram's menu, per language. */
export function commandList(language: Language): BotCommand[] {
  const c = TEXTS[language].commands;
  return COMMANDS.map((command) => ({ command, description: c[command] }));
}

export function mainMenu(texts: Texts): InlineKeyboard {
  const m = texts.menu;
  return new InlineKeyboard()
    .text(m.chat, 'menu:chat')
    .text(m.image, 'menu:image')
    .row()
    .text(m.video, 'menu:video')
    .text(m.music, 'menu:music')
    .row()
    .text(m.voice, 'menu:voice')
    .text(m.tools, 'menu:tools')
    .row()
    .text(m.balance, 'menu:balance')
    .text(m.history, 'menu:history')
    .row()
    .text(m.settings, 'menu:settings')
    .text(m.help, 'menu:help')
    .row()
    .text(m.buy, 'menu:buy');
}
