/** An assistant of the marketplace, and one a user installed (spec 2.7). */
import type { Assistant, AssistantStats } from '../../shared/assistants';
import type { AssistantInstall } from '../../shared/db/entities';
import { iso } from './dates';

export function presentAssistant(assistant: Assistant, stats: AssistantStats) {
  return {
    id: assistant.id,
    name: assistant.name,
    description: assistant.description,
    model: assistant.model,
    category: assistant.category,
    installs: stats.installs,
    rating: stats.rating,
  };
}

export function presentInstalledAssistant(assistant: Assistant, stats: AssistantStats, install: Pick<AssistantInstall, 'rating' | 'createdAt'>) {
  return {
    ...presentAssistant(assistant, stats),
    system_prompt: assistant.system_prompt,
    default_params: assistant.default_params,
    user_rating: install.rating,
    installed_at: iso(install.createdAt),
  };
}
