/** A schedule as the contract shows it (spec 2.8). */
import type { Schedule } from '../../shared/db/entities';
import { iso } from './dates';

export function presentSchedule(s: Schedule) {
  return {
    id: s.id,
    name: s.name,
    cron: s.cron,
    model: s.model,
    prompt: s.prompt,
    params: JSON.parse(s.params) as Record<string, unknown>,
    is_active: Boolean(s.isActive),
    timezone: s.timezone,
    next_run_at: iso(s.nextRunAt),
    last_run_at: iso(s.lastRunAt),
    last_generation_id: s.lastGenerationId,
    last_error: s.lastError,
    created_at: iso(s.createdAt),
    updated_at: iso(s.updatedAt),
  };
}
