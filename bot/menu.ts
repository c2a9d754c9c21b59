/** The command list Telegram shows, and the main menu (inline keyboard). */
import { InlineKeyboard } from 'grammy';
import type { BotCommand } from 'grammy/types';
import type { Catalog } from '../shared/catalog';
import type { Category } from '../shared/catalog/types';
import type { Plan, PlanTable } from '../shared/plans';
import { modelsFor } from '../shared/telegram/chat-turn';
import { Language, Texts, TEXTS } from '../shared/telegram/texts';

const COMMANDS = ['start', 'new', 'mode', 'image', 'video', 'music', 'voice', 'balance', 'history', 'settings', 'help', 'link', 'redeem', 'buy', 'paysupport', 'cancel'] as const;

/** The menu entries that make something, and the catalog category each needs. */
export const FEATURE_CATEGORIES = { image: 'image', video: 'video', music: 'music', voice: 'tts', tools: 'tool' } as const satisfies Record<string, Category>;
export type Feature = keyof typeof FEATURE_CATEGORIES;

/**
 * The features this plan has no model for, each with the display name of the lowest plan that
 * has one (null: no plan on this server offers it). The menu shows them locked instead of
 * opening a dialog that can only refuse.
 */
export type LockedFeatures = Partial<Record<Feature, string | null>>;

export function lockedFeatures(catalog: Catalog, plans: PlanTable, plan: Plan): LockedFeatures {
  const locked: LockedFeatures = {};
  for (const [feature, category] of Object.entries(FEATURE_CATEGORIES) as Array<[Feature, Category]>) {
    if (modelsFor(catalog, plan, category).length > 0) continue;
    const unlocking = plans.all().find((p) => p.rank > plan.rank && modelsFor(catalog, p, category).length > 0);
    locked[feature] = unlocking?.displayName ?? null;
  }
  return locked;
}

/** A feature's name in a sentence: its menu label without the emoji. */
export function featureName(texts: Texts, feature: Feature): string {
  return texts.menu[feature].replace(/^\S+\s/, '');
}

/** What a press on a locked feature (or its command) answers. */
export function lockedText(texts: Texts, feature: Feature, unlockingPlan: string | null): string {
  return texts.locked(featureName(texts, feature), unlockingPlan);
}

/** The commands shown in Telegram's menu, per language. */
export function commandList(language: Language): BotCommand[] {
  const c = TEXTS[language].commands;
  return COMMANDS.map((command) => ({ command, description: c[command] }));
}

export function mainMenu(texts: Texts, locked: LockedFeatures = {}): InlineKeyboard {
  const m = texts.menu;
  // A locked feature keeps its place (menus that move confuse people) and says which plan opens it.
  const feature = (name: Feature): [string, string] => {
    const plan = locked[name];
    return plan === undefined ? [m[name], `menu:${name}`] : [texts.lockedLabel(m[name], plan), `menu:locked:${name}`];
  };
  return new InlineKeyboard()
    .text(m.chat, 'menu:chat')
    .text(...feature('image'))
    .row()
    .text(...feature('video'))
    .text(...feature('music'))
    .row()
    .text(...feature('voice'))
    .text(...feature('tools'))
    .row()
    .text(m.balance, 'menu:balance')
    .text(m.history, 'menu:history')
    .row()
    .text(m.mode, 'menu:mode')
    .text(m.settings, 'menu:settings')
    .row()
    .text(m.buy, 'menu:buy')
    .text(m.help, 'menu:help');
}
