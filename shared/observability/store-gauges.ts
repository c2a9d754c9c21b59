/**
 * Gauges read from the stores and queues when scraped (never on a request's path): jobs waiting
 * per queue, holds outstanding, the MySQL pool's use and the Redis connection's state. With Redis
 * the queue depth and holds are the deployment's, so every process reports the same figure:
 * aggregate them with max(), not sum().
 */
import type { Database } from '../db/database';
import type { Redis } from '../redis';
import type { Queue } from '../queue/types';
import type { Metrics } from './metrics';

const HOLDS = "SELECT COUNT(*) AS holds, COALESCE(SUM(price), 0) AS tokens FROM generations WHERE status = 'pending'";

export function registerStoreGauges(metrics: Metrics, stores: { db: Database; redis: Redis | undefined; queue: Queue }): void {
  const { db, redis, queue } = stores;
  metrics.onScrape('gensvc_queue_depth', 'Jobs waiting, by queue and state (waiting: due; delayed: waiting for their delay)', ['queue', 'state'], async (set) => {
    for (const depth of await queue.depth()) {
      set({ queue: depth.queue, state: 'waiting' }, depth.waiting);
      set({ queue: depth.queue, state: 'delayed' }, depth.delayed);
    }
  });
  const readHolds = async (): Promise<{ holds: number; tokens: number }> => {
    const [row] = await db.read<{ holds: unknown; tokens: unknown }>({ sql: HOLDS, params: {} });
    return { holds: Number(row?.holds ?? 0), tokens: Number(row?.tokens ?? 0) };
  };
  metrics.onScrape('gensvc_holds_outstanding', 'Pending generations holding their price', [], async (set) => set({}, (await readHolds()).holds));
  metrics.onScrape('gensvc_held_tokens', 'Tokens held by pending generations', [], async (set) => set({}, (await readHolds()).tokens));
  metrics.onScrape('gensvc_db_pool_connections', 'MySQL pool: connections by state (open, idle, waiting requests, limit)', ['state'], (set) => {
    const usage = db.poolUsage();
    if (!usage) return;
    set({ state: 'open' }, usage.open);
    set({ state: 'idle' }, usage.idle);
    set({ state: 'waiting' }, usage.waiting);
    set({ state: 'limit' }, usage.limit);
  });
  // Without Redis these have no values (the families are still declared, for dashboards).
  metrics.onScrape('gensvc_redis_up', 'Whether the Redis connection is ready (1) or not (0), by connection (main: limits, state)', ['connection'], (set) => {
    if (redis) set({ connection: 'main' }, redis.status === 'ready' ? 1 : 0);
  });
  metrics.onScrape('gensvc_redis_commands_pending', 'Commands the Redis connection has sent or queued and not had answered, by connection', ['connection'], (set) => {
    if (!redis) return;
    const offline = (redis as unknown as { offlineQueue?: { length: number } }).offlineQueue?.length ?? 0;
    set({ connection: 'main' }, redis.commandQueue.length + offline);
  });
}
