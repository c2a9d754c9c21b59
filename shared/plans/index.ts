/**
 * Plans are product data: `product/plans.json` (or PLANS_PATH) declares every plan. This module
 * validates that file once at boot and answers questions about plans; nothing else hard-codes them.
 */
import fs from 'node:fs';
import { z } from 'zod';

import { PLAN_NAMES, PlanName } from '../db/entities/user';

export { PLAN_NAMES, type PlanName };
export const PlanNameSchema = z.enum(PLAN_NAMES);

export interface Plan {
  name: PlanName;
  displayName: string;
  /** Order of plans: a model with min_plan X is available to every plan of rank >= X's. */
  rank: number;
  /** Monthly token allowance (the subscription bucket after a refill). */
  tokenLimit: number;
  /** Accepted generations per hour; 0 = unlimited. */
  hourlyLimit: number;
  /** Accepted generations per day; 0 = unlimited. */
  dailyLimit: number;
  /** Days generated files are kept; null = forever. */
  retentionDays: number | null;
  apiAccess: boolean;
}

const PlanFileSchema = z.object({
  plans: z
    .array(
      z.object({
        name: PlanNameSchema,
        display_name: z.string().min(1),
        rank: z.number().int().min(0),
        token_limit: z.number().int().min(0),
        hourly_limit: z.number().int().min(0),
        daily_limit: z.number().int().min(0),
        retention_days: z.number().int().positive().nullable(),
        api_access: z.boolean(),
      }),
    )
    .refine((plans) => PLAN_NAMES.every((n) => plans.filter((p) => p.name === n).length === 1), {
      message: `must declare each of ${PLAN_NAMES.join(', ')} exactly once`,
    }),
});

export class PlanTable {
  private readonly byName: Map<PlanName, Plan>;

  constructor(plans: Plan[]) {
    this.byName = new Map(plans.map((p) => [p.name, p]));
  }

  get(name: PlanName): Plan {
    const plan = this.byName.get(name);
    if (!plan) throw new Error(`Unknown plan ${name}`);
    return plan;
  }

  all(): Plan[] {
    return [...this.byName.values()].sort((a, b) => a.rank - b.rank);
  }

  /** True when `plan` is at least `required` in the plan order. */
  allows(plan: PlanName, required: PlanName): boolean {
    return this.get(plan).rank >= this.get(required).rank;
  }
}

export function parsePlans(raw: unknown, source: string): PlanTable {
  const parsed = PlanFileSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`Plans file ${source} is invalid: ${problems}`);
  }
  return new PlanTable(
    parsed.data.plans.map((p) => ({
      name: p.name,
      displayName: p.display_name,
      rank: p.rank,
      tokenLimit: p.token_limit,
      hourlyLimit: p.hourly_limit,
      dailyLimit: p.daily_limit,
      retentionDays: p.retention_days,
      apiAccess: p.api_access,
    })),
  );
}

export function loadPlans(file: string): PlanTable {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`Cannot read plans file ${file}: ${(error as Error).message}`);
  }
  return parsePlans(raw, file);
}
