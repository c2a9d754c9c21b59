import Redis from 'ioredis';

/**
 * One ioredis client for limits and signals (bee-queue brings its own clients). Commands asked
 * for in the same turn of the event loop leave in one write (auto-pipelining): under load every
 * request asks for a provider slot and gives it back, and a socket write per command was the
 * web process's largest cost after MySQL's (README, the profiles). Nothing here blocks.
 */
export function createRedis(url: string): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: 2,
    enableOfflineQueue: true,
    lazyConnect: false,
    enableAutoPipelining: true,
  });
}

export type { Redis };
