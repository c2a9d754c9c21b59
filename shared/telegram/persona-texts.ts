/** What the bot says about personas (/mode), in both languages. */
import type { Language } from './language';

export interface PersonaTexts {
  title(current: string | null): string;
  /** An installed persona's button; the current one is ticked. */
  installedLabel(name: string, current: boolean): string;
  marketplaceLabel(name: string): string;
  plain: string;
  none: string;
  set(name: string, description: string): string;
  off: string;
  gone(name: string): string;
}

const en: PersonaTexts = {
  title: (current) =>
    `${current ? `Persona: ${current}.` : 'No persona: the plain chat.'}\nPick one: its instructions (and model, where your plan has it) shape every answer. /new starts a new conversation and keeps the persona.`,
  installedLabel: (name, current) => `${current ? '✅ ' : ''}${name}`,
  marketplaceLabel: (name) => `➕ ${name}`,
  plain: '💬 Plain chat',
  none: 'No chat personas are offered on this server.',
  set: (name, description) => `Persona: ${name}.${description ? ` ${description}` : ''}\nWrite your message.`,
  off: 'Persona off: the plain chat.',
  gone: (name) => `The persona ${name} is no longer installed on your account, so I switched back to the plain chat. Send your message again, or pick a persona with /mode.`,
};

const ru: PersonaTexts = {
  title: (current) =>
    `${current ? `Персона: ${current}.` : 'Без персоны: обычный чат.'}\nВыберите персону: её инструкции (и модель, если она есть на вашем тарифе) определяют каждый ответ. /new начинает новый разговор и оставляет персону.`,
  installedLabel: (name, current) => `${current ? '✅ ' : ''}${name}`,
  marketplaceLabel: (name) => `➕ ${name}`,
  plain: '💬 Обычный чат',
  none: 'На этом сервере нет персон для чата.',
  set: (name, description) => `Персона: ${name}.${description ? ` ${description}` : ''}\nНапишите сообщение.`,
  off: 'Персона выключена: обычный чат.',
  gone: (name) => `Персона ${name} больше не установлена в вашем аккаунте, поэтому я вернулся к обычному чату. Отправьте сообщение ещё раз или выберите персону через /mode.`,
};

export const PERSONA_TEXTS: Record<Language, PersonaTexts> = { en, ru };
