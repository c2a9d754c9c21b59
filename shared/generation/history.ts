/**
 * History (spec 4.8): the caller's generations with filters and paging; favorite, rate, delete.
 * Deleting hides the row (the ledger keeps referring to it) and removes its files.
 */
import { IsNull } from 'typeorm';
import type { Category } from '../catalog/types';
import type { Clock } from '../clock';
import type { Database } from '../db/database';
import { Generation, GenerationStatus, LedgerEntry } from '../db/entities';
import { AppError } from '../errors';
import type { Storage } from '../storage';
import type { Generations } from './service';
import { generationFiles } from './stored-input';

/**
 * The parameters a generation was asked with (as normalized at acceptance, defaults filled), for
 * running it again; null when its request was large enough to live in storage (a long chat
 * history), which a history list does not read.
 */
export function requestParams(generation: Pick<Generation, 'input'>): Record<string, unknown> | null {
  try {
    const parsed = JSON.parse(generation.input) as { $ref?: unknown; params?: unknown };
    if (parsed.$ref !== undefined) return null;
    return typeof parsed.params === 'object' && parsed.params !== null && !Array.isArray(parsed.params) ? (parsed.params as Record<string, unknown>) : {};
  } catch {
    return null;
  }
}

export interface HistoryFilter {
  page: number;
  limit: number;
  /** One category, or several (`type=audio` means tts, stt and music). */
  categories?: Category[];
  modelSlug?: string;
  status?: GenerationStatus;
  favoritesOnly?: boolean;
}

export interface Page<T> {
  items: T[];
  total: number;
  page: number;
  limit: number;
  pages: number;
}

export class History {
  constructor(
    private readonly db: Database,
    private readonly generations: Generations,
    private readonly storage: Storage,
    private readonly clock: Clock,
  ) {}

  async list(userId: number, filter: HistoryFilter): Promise<Page<Generation>> {
    const qb = this.db
      .repo(Generation)
      .createQueryBuilder('g')
      .where('g.user_id = :userId', { userId })
      .andWhere('g.hidden_at IS NULL');
    if (filter.categories?.length) qb.andWhere('g.category IN (:...categories)', { categories: filter.categories });
    if (filter.modelSlug) qb.andWhere('g.model_slug = :slug', { slug: filter.modelSlug });
    if (filter.status) qb.andWhere('g.status = :status', { status: filter.status });
    if (filter.favoritesOnly) qb.andWhere('g.is_favorited = :fav', { fav: true });
    const [items, total] = await qb
      .orderBy('g.id', 'DESC')
      .skip((filter.page - 1) * filter.limit)
      .take(filter.limit)
      .getManyAndCount();
    return { items, total, page: filter.page, limit: filter.limit, pages: Math.max(1, Math.ceil(total / filter.limit)) };
  }

  /**
   * The user's generations of `categories` after a cursor (a generation id), newest or oldest
   * first: the cursor pages of OpenAI's lists (/v1/videos), where a page number would skip or
   * repeat rows while new ones arrive.
   */
  async cursorPage(
    userId: number,
    filter: { categories: Category[]; after: number | null; limit: number; order: 'asc' | 'desc' },
  ): Promise<{ items: Generation[]; hasMore: boolean }> {
    const qb = this.db
      .repo(Generation)
      .createQueryBuilder('g')
      .where('g.user_id = :userId', { userId })
      .andWhere('g.hidden_at IS NULL')
      .andWhere('g.category IN (:...categories)', { categories: filter.categories });
    if (filter.after !== null) qb.andWhere(filter.order === 'desc' ? 'g.id < :after' : 'g.id > :after', { after: filter.after });
    const rows = await qb
      .orderBy('g.id', filter.order === 'desc' ? 'DESC' : 'ASC')
      .take(filter.limit + 1)
      .getMany();
    return { items: rows.slice(0, filter.limit), hasMore: rows.length > filter.limit };
  }

  async toggleFavorite(userId: number, id: number): Promise<{ id: number; isFavorited: boolean }> {
    return this.db.transaction(async (em) => {
      const row = await em.getRepository(Generation).findOneBy({ id, userId, hiddenAt: IsNull() });
      if (!row) throw new AppError('not_found');
      await em.getRepository(Generation).update({ id }, { isFavorited: !row.isFavorited });
      return { id, isFavorited: !row.isFavorited };
    });
  }

  async rate(userId: number, id: number, rating: number): Promise<{ id: number; userRating: number }> {
    return this.db.transaction(async (em) => {
      const result = await em.getRepository(Generation).update({ id, userId, hiddenAt: IsNull() }, { userRating: rating });
      if (result.affected !== 1) throw new AppError('not_found');
      return { id, userRating: rating };
    });
  }

  /** Hides the generation and removes its files; a pending one is cancelled first. */
  async delete(userId: number, id: number): Promise<void> {
    const row = await this.generations.get(userId, id);
    if (row.status === 'pending') await this.generations.cancel(userId, id);
    const current = await this.db.repo(Generation).findOneByOrFail({ id });
    const files = await generationFiles(current, this.storage);
    await this.db.transaction((em) =>
      em.getRepository(Generation).update({ id }, { hiddenAt: this.clock(), resultKey: null, thumbnailKey: null }),
    );
    for (const key of files) await this.storage.delete(key);
  }

  async ledger(userId: number, page: number, limit: number): Promise<Page<LedgerEntry>> {
    const [items, total] = await this.db.repo(LedgerEntry).findAndCount({
      where: { userId },
      order: { id: 'DESC' },
      skip: (page - 1) * limit,
      take: limit,
    });
    return { items, total, page, limit, pages: Math.max(1, Math.ceil(total / limit)) };
  }
}
