/**
 * Where the result of a generation the bot started goes (chat, placeholder message, language),
 * one row per generation, and the state of sending it: pending → delivering (one sender at a
 * time, by a conditional update) → delivered, failed or blocked.
 */
import type { Clock } from '../clock';
import type { Database } from '../db/database';
import { BotDelivery, BotDeliveryKind, BotDeliveryState } from '../db/entities';
import { isDuplicateKey } from '../db/errors';

export class BotDeliveries {
  constructor(private readonly deps: { db: Database; clock: Clock }) {}

  get(generationId: number): Promise<BotDelivery | null> {
    return this.deps.db.repo(BotDelivery).findOneBy({ generationId });
  }

  /** Records where a result goes; false when a row for this generation exists already. */
  async create(row: { generationId: number; chatId: string; messageId: number | null; kind: BotDeliveryKind; language: string; prompt: string | null }): Promise<boolean> {
    try {
      await this.deps.db.transaction((em) =>
        em.getRepository(BotDelivery).insert({ ...row, state: 'pending', createdAt: this.deps.clock(), deliveredAt: null }),
      );
      return true;
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }

  /** pending → delivering; true for the one caller that may send. */
  async claim(generationId: number): Promise<boolean> {
    const result = await this.deps.db.transaction((em) =>
      em.getRepository(BotDelivery).update({ generationId, state: 'pending' }, { state: 'delivering' }),
    );
    return result.affected === 1;
  }

  async release(generationId: number): Promise<void> {
    await this.deps.db.transaction((em) => em.getRepository(BotDelivery).update({ generationId, state: 'delivering' }, { state: 'pending' }));
  }

  async finish(generationId: number, state: BotDeliveryState): Promise<void> {
    await this.deps.db.transaction((em) =>
      em.getRepository(BotDelivery).update({ generationId }, { state, deliveredAt: this.deps.clock() }),
    );
  }
}
