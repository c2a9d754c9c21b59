import Redis from 'ioredis';

/** One ioredis client for limits and signals (bee-queue brings its own clients). */
export function createRedis(url: string): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: 2,
    enableOfflineQueue: true,
    lazyConnect: false,
  });
}

export type { Redis };
