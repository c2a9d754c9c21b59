/**
 * The assistants marketplace: assistants are product data (product/assistants.json or
 * ASSISTANTS_PATH); installs and ratings are rows, so `installs` and `rating` are counted from
 * what users really did.
 */
import fs from 'node:fs';
import { z } from 'zod';
import type { Clock } from '../clock';
import type { Database } from '../db/database';
import { AssistantInstall } from '../db/entities';
import { AppError } from '../errors';
import { isDuplicateKey } from '../db/errors';

const AssistantSchema = z.object({
  id: z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/),
  name: z.string().min(1),
  description: z.string().default(''),
  category: z.string().min(1),
  model: z.string().min(1),
  system_prompt: z.string().default(''),
  default_params: z.record(z.string(), z.unknown()).default({}),
});
const AssistantFileSchema = z.object({ assistants: z.array(AssistantSchema) });

export type Assistant = z.infer<typeof AssistantSchema>;

export interface AssistantStats {
  installs: number;
  rating: number;
}

export function loadAssistants(file: string): Assistant[] {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`Cannot read assistants file ${file}: ${(error as Error).message}`);
  }
  const parsed = AssistantFileSchema.safeParse(raw);
  if (!parsed.success) {
    throw new Error(`Assistants file ${file} is invalid: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  const ids = new Set<string>();
  for (const a of parsed.data.assistants) {
    if (ids.has(a.id)) throw new Error(`Assistants file ${file}: id "${a.id}" is declared twice`);
    ids.add(a.id);
  }
  return parsed.data.assistants;
}


export class Assistants {
  private readonly byId: Map<string, Assistant>;

  constructor(
    assistants: Assistant[],
    private readonly db: Database,
    private readonly clock: Clock,
  ) {
    this.byId = new Map(assistants.map((a) => [a.id, a]));
  }

  find(id: string): Assistant | undefined {
    return this.byId.get(id);
  }

  /** Installs and average rating of each assistant, counted from the install rows. */
  async stats(ids: string[]): Promise<Map<string, AssistantStats>> {
    const stats = new Map<string, AssistantStats>(ids.map((id) => [id, { installs: 0, rating: 0 }]));
    if (ids.length === 0) return stats;
    const rows = await this.db
      .repo(AssistantInstall)
      .createQueryBuilder('i')
      .select('i.assistant_id', 'id')
      .addSelect('COUNT(*)', 'installs')
      .addSelect('AVG(i.rating)', 'rating')
      .where('i.assistant_id IN (:...ids)', { ids })
      .groupBy('i.assistant_id')
      .getRawMany<{ id: string; installs: string | number; rating: string | number | null }>();
    for (const row of rows) {
      stats.set(row.id, { installs: Number(row.installs), rating: row.rating === null ? 0 : Math.round(Number(row.rating) * 10) / 10 });
    }
    return stats;
  }

  /** Marketplace page: search by name (case-insensitive), optional category. */
  async marketplace(filter: { search?: string; category?: string; page: number; limit: number }) {
    const search = filter.search?.trim().toLowerCase();
    const matching = [...this.byId.values()].filter(
      (a) => (!search || a.name.toLowerCase().includes(search)) && (!filter.category || a.category === filter.category),
    );
    const page = matching.slice((filter.page - 1) * filter.limit, filter.page * filter.limit);
    const stats = await this.stats(page.map((a) => a.id));
    return { items: page.map((a) => ({ assistant: a, stats: stats.get(a.id) as AssistantStats })), total: matching.length };
  }

  /** Installs for the user; true when newly installed (201), false when it already was (200). */
  async install(userId: number, assistantId: string): Promise<boolean> {
    if (!this.byId.has(assistantId)) throw new AppError('not_found');
    try {
      return await this.db.transaction(async (em) => {
        if (await em.getRepository(AssistantInstall).countBy({ userId, assistantId })) return false;
        await em.getRepository(AssistantInstall).insert({ userId, assistantId, rating: null, createdAt: this.clock() });
        return true;
      });
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }

  async uninstall(userId: number, assistantId: string): Promise<void> {
    const deleted = await this.db.transaction(async (em) => (await em.getRepository(AssistantInstall).delete({ userId, assistantId })).affected);
    if (deleted !== 1) throw new AppError('not_found');
  }

  async installed(userId: number): Promise<Array<{ assistant: Assistant; install: AssistantInstall }>> {
    const rows = await this.db.repo(AssistantInstall).find({ where: { userId }, order: { id: 'ASC' } });
    return rows.flatMap((install) => {
      const assistant = this.byId.get(install.assistantId);
      return assistant ? [{ assistant, install }] : [];
    });
  }

  /** The assistant if the user installed it; otherwise 404 (decisions.md). */
  async requireInstalled(userId: number, assistantId: string): Promise<Assistant> {
    const assistant = this.byId.get(assistantId);
    if (!assistant || !(await this.db.repo(AssistantInstall).countBy({ userId, assistantId }))) {
      throw new AppError('not_found', { detail: 'Assistant not installed' });
    }
    return assistant;
  }

  async rate(userId: number, assistantId: string, rating: number): Promise<AssistantStats> {
    const updated = await this.db.transaction(async (em) => (await em.getRepository(AssistantInstall).update({ userId, assistantId }, { rating })).affected);
    if (updated !== 1) throw new AppError('not_found', { detail: 'Install an assistant before rating it' });
    return (await this.stats([assistantId])).get(assistantId) as AssistantStats;
  }
}
