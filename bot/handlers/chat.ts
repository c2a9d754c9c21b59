/**
 * Chat: any plain text is a turn with the chat's model; the bot keeps the conversation (trimmed to
 * the model's context) and the worker streams the reply (shared/telegram/chat-turn.ts). /new forgets it.
 */
import type { Bot } from 'grammy';
import { startChatTurn } from '../../shared/telegram/chat-turn';
import type { BotContext, BotServices } from '../context';
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

  bot.on('message:text', async (ctx) => {
    let text = ctx.message.text;
    if (text.startsWith('/')) return; // an unknown command
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
