/** A webhook and its deliveries as the API shows them (decisions.md "Other records"); the secret only when it is made. */
import type { Webhook, WebhookDelivery } from '../../shared/db/entities';
import { iso } from './dates';

export function presentWebhook(hook: Webhook, withSecret: boolean) {
  return {
    id: hook.id,
    url: hook.url,
    events: JSON.parse(hook.events) as string[],
    ...(withSecret ? { secret: hook.secret } : {}),
    is_active: hook.disabledAt === null,
    failing_since: iso(hook.failingSince),
    disabled_at: iso(hook.disabledAt),
    created_at: iso(hook.createdAt),
  };
}

export function presentDelivery(d: WebhookDelivery) {
  return {
    id: d.id,
    event: d.event,
    generation_id: d.generationId,
    status: d.status,
    attempts: d.attempts,
    last_status_code: d.lastStatusCode,
    last_error: d.lastError,
    next_attempt_at: iso(d.nextAttemptAt),
    created_at: iso(d.createdAt),
    delivered_at: iso(d.deliveredAt),
  };
}
