import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { IntColumn, StringColumn, TimestampColumn } from '../columns';

/**
 * Key/value state of the Telegram bot when no Redis is configured: chat histories and settings,
 * conversation (dialog) state. Values are versioned JSON written by shared/telegram/state.ts.
 */
@Entity('bot_state')
@Index('ix_bot_state_expires', ['expiresAt'])
export class BotState {
  @PrimaryColumn({ name: 'state_key', type: 'varchar', length: 191 })
  key!: string;

  @Column({ name: 'value', type: 'text' })
  value!: string;

  @TimestampColumn('updated_at')
  updatedAt!: Date;

  /** Null: kept until deleted. */
  @TimestampColumn('expires_at', { nullable: true })
  expiresAt!: Date | null;
}

export type BotDeliveryKind = 'chat' | 'media';
export type BotDeliveryState = 'pending' | 'delivering' | 'delivered' | 'blocked' | 'failed';

/**
 * Where the result of a generation the bot started goes: the chat, the message that shows its
 * progress, the language. A worker claims the row (pending → delivering) before sending, so a
 * result is delivered once even when the job runs twice.
 */
@Entity('bot_deliveries')
@Index('ix_bot_deliveries_chat', ['chatId', 'createdAt'])
export class BotDelivery {
  @PrimaryColumn({ name: 'generation_id', type: 'int' })
  generationId!: number;

  @StringColumn('chat_id', 32)
  chatId!: string;

  /** The message that shows progress (edited as a reply streams). */
  @IntColumn('message_id', { nullable: true })
  messageId!: number | null;

  @StringColumn('kind', 16)
  kind!: BotDeliveryKind;

  @StringColumn('language', 8)
  language!: string;

  /** The user's turn of a chat, added to the chat's history with the reply. */
  @Column({ name: 'prompt', type: 'text', nullable: true })
  prompt!: string | null;

  @StringColumn('state', 16)
  state!: BotDeliveryState;

  @TimestampColumn('created_at')
  createdAt!: Date;

  @TimestampColumn('delivered_at', { nullable: true })
  deliveredAt!: Date | null;
}
