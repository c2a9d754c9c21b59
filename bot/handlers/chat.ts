/**
 * Chat: any plain text is a turn with the chat's model; the bot keeps the conversation (trimmed to
 * the model's context) and the worker streams the reply (shared/telegram/chat-turn.ts). /new forgets it.
 */
import type { Bot } from 'grammy';
import { startChatTurn } from '../../shared/telegram/chat-turn';
import type { BotContext, BotServices } from '../context';
import { lockedFeatures, mainMenu } from '../menu';
import { chatModel } from '../models';

export function registerChat(bot: Bot<BotContext>, services: BotServices): { chatHint(ctx: BotContext): Promise<void> } {
  const { container, chats } = services;

  bot.command('new', async (ctx) => {
    if (!ctx.chat) return;
    await chats.update(ctx.chat.id, (state) => {
      state.history = [];
    });
    await ctx.reply(services.account(ctx).texts.newChat);
  });

  async function chatHint(ctx: BotContext): Promise<void> {
    const a = services.account(ctx);
    const model = chatModel(container.catalog, a.plan, ctx.chat ? (await chats.load(ctx.chat.id)).textModel : null);
    await ctx.reply(model ? a.texts.chatHint(model.name) : a.texts.noTextModel);
  }

  /**
   * A command no handler took. In a private chat it is a person trying something: say what the
   * bot can do rather than nothing. In a group it may be meant for another bot, so only one
   * addressed to this bot by name (`/foo@thisbot`) gets the answer.
   */
  async function unknownCommand(ctx: BotContext, text: string): Promise<void> {
    const [command = '/', target] = (text.split(/\s/, 1)[0] ?? '').split('@');
    const addressed = ctx.chat?.type === 'private' || (target !== undefined && target.toLowerCase() === ctx.me.username.toLowerCase());
    if (!addressed) return;
    const a = services.account(ctx);
    await ctx.reply(`${a.texts.unknownCommand(command)}\n\n${a.texts.help}`, { reply_markup: mainMenu(a.texts, lockedFeatures(container.catalog, container.plans, a.plan)) });
  }

  bot.on('message:text', async (ctx) => {
    let text = ctx.message.text;
    if (text.startsWith('/')) return unknownCommand(ctx, text);
    if (ctx.me.username) text = text.replace(new RegExp(`@${ctx.me.username}\\b`, 'gi'), '').trim();
    if (!text) return;
    const a = services.account(ctx);
    await startChatTurn(container, services.api, {
      user: a.user,
      plan: a.plan,
      language: a.language,
      chatId: String(ctx.chat.id),
      text,
      idempotencyKey: services.idempotencyKey(ctx.me, ctx.update.update_id),
      replyTo: ctx.chat.type !== 'private' ? ctx.message.message_id : undefined,
    });
  });

  return { chatHint };
}
