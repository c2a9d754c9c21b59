/**
 * The assistants marketplace: assistants are product data (product/assistants.json or
 * ASSISTANTS_PATH); installs and ratings are rows, so `installs` and `rating` are counted from
 * what users really did.
 *
 * An assistant declares its `model` and, in order, the `fallback_models` to use when that one is
 * not offered here (no upstream configured, no GGUF file loaded, an engine missing). It uses the
 * first of them the catalog offers at the time it is asked; one with none offered is neither
 * listed nor installable, and applying it answers 404, so it never points at an unknown model.
 */
import fs from 'node:fs';
import { z } from 'zod';
import type { Catalog } from '../catalog';
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
  fallback_models: z.array(z.string().min(1)).default([]),
  system_prompt: z.string().default(''),
  default_params: z.record(z.string(), z.unknown()).default({}),
});
const AssistantFileSchema = z.object({ assistants: z.array(AssistantSchema) });

/** An assistant as the file declares it. */
export type AssistantDeclaration = z.infer<typeof AssistantSchema>;

/** An assistant as offered here: `model` is the first of its models the catalog offers now. */
export interface Assistant {
  id: string;
  name: string;
  description: string;
  category: string;
  model: string;
  system_prompt: string;
  default_params: Record<string, unknown>;
}

export interface AssistantStats {
  installs: number;
  rating: number;
}

/** The model slugs an assistant may use, in order of preference. */
export function modelsOf(declaration: AssistantDeclaration): string[] {
  return [declaration.model, ...declaration.fallback_models];
}

/** The assistant with the first of its models the catalog offers, or undefined when it offers none. */
export function resolveAssistant(declaration: AssistantDeclaration, catalog: Pick<Catalog, 'find'>): Assistant | undefined {
  const model = modelsOf(declaration).find((slug) => catalog.find(slug) !== undefined);
  if (model === undefined) return undefined;
  const { fallback_models: _fallbacks, ...assistant } = declaration;
  return { ...assistant, model };
}

export function loadAssistants(file: string): AssistantDeclaration[] {
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
  private readonly byId: Map<string, AssistantDeclaration>;

  constructor(
    assistants: AssistantDeclaration[],
    private readonly catalog: Pick<Catalog, 'find'>,
    private readonly db: Database,
    private readonly clock: Clock,
  ) {
    this.byId = new Map(assistants.map((a) => [a.id, a]));
  }

  /** The assistant with the model it uses now; undefined when unknown or none of its models is offered. */
  find(id: string): Assistant | undefined {
    const declaration = this.byId.get(id);
    return declaration && resolveAssistant(declaration, this.catalog);
  }

  /** Every assistant that can be used here now, in file order. */
  private available(): Assistant[] {
    return [...this.byId.values()].flatMap((declaration) => resolveAssistant(declaration, this.catalog) ?? []);
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
    const matching = this.available().filter(
      (a) => (!search || a.name.toLowerCase().includes(search)) && (!filter.category || a.category === filter.category),
    );
    const page = matching.slice((filter.page - 1) * filter.limit, filter.page * filter.limit);
    const stats = await this.stats(page.map((a) => a.id));
    return { items: page.map((a) => ({ assistant: a, stats: stats.get(a.id) as AssistantStats })), total: matching.length };
  }

  /** Installs for the user; true when newly installed (201), false when it already was (200). */
  async install(userId: number, assistantId: string): Promise<boolean> {
    if (!this.find(assistantId)) throw new AppError('not_found');
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
      const assistant = this.find(install.assistantId);
      return assistant ? [{ assistant, install }] : [];
    });
  }

  /**
   * The assistant, with the model it uses now, if the user installed it; otherwise 404
   * (decisions.md). Also 404 while none of its models is offered here.
   */
  async requireInstalled(userId: number, assistantId: string): Promise<Assistant> {
    if (!this.byId.has(assistantId) || !(await this.db.repo(AssistantInstall).countBy({ userId, assistantId }))) {
      throw new AppError('not_found', { detail: 'Assistant not installed' });
    }
    const assistant = this.find(assistantId);
    if (!assistant) throw new AppError('not_found', { detail: 'Assistant not available: none of its models is offered on this server' });
    return assistant;
  }

  async rate(userId: number, assistantId: string, rating: number): Promise<AssistantStats> {
    const updated = await this.db.transaction(async (em) => (await em.getRepository(AssistantInstall).update({ userId, assistantId }, { rating })).affected);
    if (updated !== 1) throw new AppError('not_found', { detail: 'Install an assistant before rating it' });
    return (await this.stats([assistantId])).get(assistantId) as AssistantStats;
  }
}
