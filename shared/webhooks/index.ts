/**
 * Webhooks (the spec's planned feature, decisions.md "Other records"): users register URLs for
 * `generation.completed` / `generation.failed`; each event becomes a delivery row, POSTed by the
 * `webhook.deliver` job, signed `sha256=<hex HMAC-SHA-256 of "<timestamp>.<body>">`, retried with
 * exponential backoff for up to 24 h. A webhook whose deliveries have all failed for 24 h is
 * disabled. URLs follow the URL-input rules (no private addresses unless URL_FETCH_ALLOW).
 */
import crypto from 'node:crypto';
import { IsNull, LessThanOrEqual, Not } from 'typeorm';
import { addSeconds, Clock } from '../clock';
import type { Database } from '../db/database';
import { Generation, Webhook, WebhookDelivery } from '../db/entities';
import type { Row } from '../db/raw';
import { EntityRows } from '../db/rows';
import { AppError } from '../errors';
import type { Logger } from '../log';
import { UrlFetcher, UrlFetchError, UrlRefusedError } from '../net/url-fetch';
import type { Queue } from '../queue/types';
import { randomBase62 } from '../auth/secrets';
import { jobIds } from '../queue/job-ids';

export const WEBHOOK_EVENTS = ['generation.completed', 'generation.failed'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];
export const MAX_WEBHOOKS_PER_USER = 10;
export const RETRY_WINDOW_SECONDS = 24 * 3600;
const FIRST_RETRY_SECONDS = 30;
const MAX_RETRY_SECONDS = 3600;

export function signatureOf(secret: string, timestamp: number, body: string): string {
  return `sha256=${crypto.createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/** Seconds until the next attempt after `attempts` failures: 30 s, 1 min, 2 min, … capped at 1 h. */
export function retryDelaySeconds(attempts: number): number {
  return Math.min(MAX_RETRY_SECONDS, FIRST_RETRY_SECONDS * 2 ** Math.max(0, attempts - 1));
}

export function eventPayload(generation: Generation, publicBaseUrl: string) {
  return {
    event: generation.status === 'completed' ? 'generation.completed' : 'generation.failed',
    generation_id: generation.id,
    status: generation.status,
    model_slug: generation.modelSlug,
    result_url: generation.resultKey ? `${publicBaseUrl}/files/${generation.resultKey}` : null,
    tokens_spent: generation.tokensSpent,
    error: generation.error,
    created_at: generation.createdAt.toISOString(),
    completed_at: generation.completedAt ? generation.completedAt.toISOString() : null,
  };
}

export class Webhooks {
  private readonly rows: EntityRows<Webhook>;
  private readonly activeHooksSql: string;

  constructor(
    private readonly db: Database,
    private readonly fetcher: UrlFetcher,
    private readonly queue: Queue,
    private readonly clock: Clock,
    private readonly publicBaseUrl: string,
    private readonly log: Logger,
  ) {
    this.rows = new EntityRows(db.source, Webhook);
    this.activeHooksSql = `SELECT ${this.rows.selectList('w', '')} FROM webhooks w WHERE w.user_id = :userId AND w.disabled_at IS NULL ORDER BY w.id`;
  }

  async create(userId: number, url: string, events: WebhookEvent[]): Promise<Webhook> {
    try {
      await this.fetcher.check(url);
    } catch (error) {
      if (error instanceof UrlRefusedError || error instanceof UrlFetchError) {
        throw AppError.validation('url', `cannot be used: ${error instanceof UrlRefusedError ? error.reason : error.message}`);
      }
      throw error;
    }
    return this.db.transaction(async (em) => {
      if ((await em.getRepository(Webhook).countBy({ userId })) >= MAX_WEBHOOKS_PER_USER) {
        throw new AppError('limit_reached', { detail: `At most ${MAX_WEBHOOKS_PER_USER} webhooks per account` });
      }
      const row = em.getRepository(Webhook).create({
        userId,
        url,
        events: JSON.stringify([...new Set(events)]),
        secret: `whsec_${randomBase62(40)}`,
        createdAt: this.clock(),
        failingSince: null,
        disabledAt: null,
      });
      const inserted = await em.getRepository(Webhook).insert(row);
      row.id = Number(inserted.identifiers[0]?.id);
      return row;
    });
  }

  list(userId: number): Promise<Webhook[]> {
    return this.db.repo(Webhook).find({ where: { userId }, order: { id: 'ASC' } });
  }

  async get(userId: number, id: number): Promise<Webhook> {
    const row = await this.db.repo(Webhook).findOneBy({ id, userId });
    if (!row) throw new AppError('not_found');
    return row;
  }

  async delete(userId: number, id: number): Promise<void> {
    const deleted = await this.db.transaction(async (em) => (await em.getRepository(Webhook).delete({ id, userId })).affected);
    if (deleted !== 1) throw new AppError('not_found');
  }

  /**
   * Turns a webhook that was disabled after a day of failures back on, its failure streak
   * forgotten (so the 24 h window starts again with the next failure). Conditional on the row
   * still being disabled: enabling an active webhook changes nothing and is not an error.
   */
  async enable(userId: number, id: number): Promise<Webhook> {
    await this.get(userId, id);
    await this.db.transaction((em) => em.getRepository(Webhook).update({ id, userId, disabledAt: Not(IsNull()) }, { disabledAt: null, failingSince: null }));
    return this.get(userId, id);
  }

  async deliveries(userId: number, id: number, page: number, limit: number) {
    await this.get(userId, id);
    const [items, total] = await this.db.repo(WebhookDelivery).findAndCount({ where: { webhookId: id }, order: { id: 'DESC' }, skip: (page - 1) * limit, take: limit });
    return { items, total, page, limit, pages: Math.max(1, Math.ceil(total / limit)) };
  }

  /** Called when a generation ends: one delivery per active webhook of its owner that wants the event. */
  async onGenerationEnded(generation: Generation): Promise<void> {
    const payload = eventPayload(generation, this.publicBaseUrl);
    // Plain SQL: this runs once for every generation that ends, and most users have no webhook.
    const hooks = (await this.db.read<Row>({ sql: this.activeHooksSql, params: { userId: generation.userId } })).map((row) => this.rows.hydrate(row));
    for (const hook of hooks) {
      if (!(JSON.parse(hook.events) as string[]).includes(payload.event)) continue;
      await this.enqueueDelivery(hook, payload.event, generation.id, payload);
    }
  }

  /** A pending delivery row for one event to one webhook. */
  private async insertDelivery(hook: Webhook, event: string, generationId: number | null, payload: object): Promise<WebhookDelivery> {
    const now = this.clock();
    return this.db.transaction(async (em) => {
      const row = em.getRepository(WebhookDelivery).create({
        webhookId: hook.id,
        event,
        generationId,
        payload: JSON.stringify(payload),
        status: 'pending',
        attempts: 0,
        lastStatusCode: null,
        lastError: null,
        nextAttemptAt: now,
        createdAt: now,
        deliveredAt: null,
      });
      const inserted = await em.getRepository(WebhookDelivery).insert(row);
      row.id = Number(inserted.identifiers[0]?.id);
      return row;
    });
  }

  private async enqueueDelivery(hook: Webhook, event: string, generationId: number | null, payload: object): Promise<WebhookDelivery> {
    const delivery = await this.insertDelivery(hook, event, generationId, payload);
    await this.queue.enqueue('webhook.deliver', { deliveryId: delivery.id }, { jobId: jobIds.webhookDelivery(delivery.id, 0) });
    return delivery;
  }

  /** POST /webhooks/{id}/test: a `ping` delivered now (and retried like any other if it fails). */
  async ping(userId: number, id: number): Promise<WebhookDelivery> {
    const hook = await this.get(userId, id);
    const delivery = await this.insertDelivery(hook, 'ping', null, { event: 'ping', webhook_id: hook.id, sent_at: this.clock().toISOString() });
    await this.deliver(delivery.id);
    return this.db.repo(WebhookDelivery).findOneByOrFail({ id: delivery.id });
  }

  /**
   * One attempt of a delivery (the `webhook.deliver` job). Idempotent: a delivery that already
   * succeeded or gave up, or whose next attempt is not due, is left alone.
   */
  async deliver(deliveryId: number, signal?: AbortSignal): Promise<void> {
    const delivery = await this.db.repo(WebhookDelivery).findOneBy({ id: deliveryId });
    if (!delivery || delivery.status !== 'pending') return;
    const now = this.clock();
    if (delivery.nextAttemptAt && delivery.nextAttemptAt.getTime() > now.getTime() + 1000) return;
    const hook = await this.db.repo(Webhook).findOneBy({ id: delivery.webhookId });
    if (!hook || hook.disabledAt) {
      await this.finish(delivery.id, 'failed', { lastError: 'webhook disabled' });
      return;
    }
    const timestamp = Math.floor(now.getTime() / 1000);
    let status = 0;
    let error: string | null = null;
    try {
      ({ status } = await this.fetcher.post(
        hook.url,
        Buffer.from(delivery.payload),
        {
          'content-type': 'application/json',
          'x-webhook-id': String(delivery.id),
          'x-webhook-timestamp': String(timestamp),
          'x-webhook-signature': signatureOf(hook.secret, timestamp, delivery.payload),
        },
        signal,
      ));
      if (status < 200 || status >= 300) error = `HTTP ${status}`;
    } catch (e) {
      error = e instanceof UrlRefusedError ? `refused: ${e.reason}` : (e as Error).message;
    }
    const attempts = delivery.attempts + 1;
    // One line per attempt: with the request id of the generation's request (log context), an
    // operator follows a request to its webhooks.
    const attemptFields = { deliveryId: delivery.id, webhookId: hook.id, event: delivery.event, attempt: attempts, status: status || null };
    if (!error) {
      this.log.info(attemptFields, 'webhook delivered');
      await this.finish(delivery.id, 'succeeded', { attempts, lastStatusCode: status, lastError: null, deliveredAt: now });
      await this.db.transaction((em) => em.getRepository(Webhook).update({ id: hook.id }, { failingSince: null }));
      return;
    }
    this.log.info({ ...attemptFields, err: error.slice(0, 200) }, 'webhook delivery failed');
    const failingSince = hook.failingSince ?? now;
    if (!hook.failingSince) await this.db.transaction((em) => em.getRepository(Webhook).update({ id: hook.id }, { failingSince: now }));
    if (now.getTime() - failingSince.getTime() >= RETRY_WINDOW_SECONDS * 1000) {
      await this.db.transaction((em) => em.getRepository(Webhook).update({ id: hook.id, disabledAt: IsNull() }, { disabledAt: now }));
      this.log.warn({ webhookId: hook.id }, 'webhook disabled after failing for 24 h');
    }
    const next = addSeconds(now, retryDelaySeconds(attempts));
    const giveUp = next.getTime() - delivery.createdAt.getTime() > RETRY_WINDOW_SECONDS * 1000;
    await this.finish(delivery.id, giveUp ? 'failed' : 'pending', {
      attempts,
      lastStatusCode: status || null,
      lastError: error.slice(0, 500),
      nextAttemptAt: giveUp ? null : next,
    });
    if (!giveUp) {
      await this.queue.enqueue(
        'webhook.deliver',
        { deliveryId },
        { jobId: jobIds.webhookDelivery(deliveryId, attempts), delayMs: next.getTime() - now.getTime() },
      );
    }
  }

  private async finish(id: number, status: WebhookDelivery['status'], fields: Partial<WebhookDelivery>): Promise<void> {
    await this.db.transaction((em) => em.getRepository(WebhookDelivery).update({ id, status: 'pending' }, { ...fields, status }));
  }

  async attemptsOf(deliveryId: number): Promise<number> {
    return (await this.db.repo(WebhookDelivery).findOneBy({ id: deliveryId }))?.attempts ?? 0;
  }

  /** Pending deliveries that are due (after a restart lost the in-process queue), for the sweep. */
  async due(): Promise<number[]> {
    const rows = await this.db.repo(WebhookDelivery).find({
      where: { status: 'pending', nextAttemptAt: LessThanOrEqual(this.clock()) },
      select: { id: true },
      take: 1000,
    });
    return rows.map((r) => r.id);
  }
}
