/**
 * Fresh stores for one test app: a temporary SQLite file, or (in the mysql+redis project) a new
 * MySQL database and a unique Redis key prefix, removed again on close.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Redis from 'ioredis';
import { createMysqlDatabase, dropMysqlDatabase } from '../../shared/db/mysql-admin';

export type StoreKind = 'embedded' | 'mysql-redis';

export function storeKind(): StoreKind {
  return process.env.GENSVC_TEST_STORES === 'mysql-redis' ? 'mysql-redis' : 'embedded';
}

export interface TestStores {
  kind: StoreKind;
  env: Record<string, string>;
  dataDir: string;
  cleanup(): Promise<void>;
}

export async function freshStores(
  kind: StoreKind = storeKind(),
  servers: { DATABASE_URL?: string; REDIS_URL?: string } = { DATABASE_URL: process.env.TEST_DATABASE_URL, REDIS_URL: process.env.TEST_REDIS_URL },
): Promise<TestStores> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gensvc-test-'));
  const env: Record<string, string> = { DATA_DIR: dataDir, LOG_LEVEL: 'silent' };
  let databaseUrl: string | undefined;
  let redisPrefix: string | undefined;
  const redisServer = servers.REDIS_URL;
  if (kind === 'mysql-redis') {
    const serverUrl = servers.DATABASE_URL;
    const redisUrl = servers.REDIS_URL;
    if (!serverUrl || !redisUrl) throw new Error('the mysql+redis project needs TEST_DATABASE_URL and TEST_REDIS_URL');
    databaseUrl = await createMysqlDatabase(serverUrl, 'gensvc_t');
    redisPrefix = `gensvc-test-${crypto.randomBytes(4).toString('hex')}`;
    Object.assign(env, {
      DATABASE_URL: databaseUrl,
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: redisPrefix,
      JWT_SECRET: crypto.randomBytes(32).toString('hex'),
    });
  }
  return {
    kind,
    env,
    dataDir,
    async cleanup() {
      if (databaseUrl) await dropMysqlDatabase(databaseUrl);
      if (redisPrefix && redisServer) {
        const redis = new Redis(redisServer);
        try {
          let cursor = '0';
          do {
            const [next, keys] = await redis.scan(cursor, 'MATCH', `${redisPrefix}*`, 'COUNT', 500);
            cursor = next;
            if (keys.length > 0) await redis.del(...keys);
          } while (cursor !== '0');
        } finally {
          redis.disconnect();
        }
      }
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
