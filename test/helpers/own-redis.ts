/**
 * A Redis server a test owns (Debian's redis-server on a free loopback port, nothing kept on
 * disk), so it can restart it or flush its script cache without touching the shared one.
 */
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import Redis from 'ioredis';
import { freePort } from './child-process';

export function redisServerAvailable(): boolean {
  return spawnSync('redis-server', ['--version']).status === 0;
}

export class OwnRedis {
  private process: ChildProcess | null = null;

  private constructor(readonly port: number) {}

  static async start(): Promise<OwnRedis> {
    const redis = new OwnRedis(await freePort());
    await redis.up();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  private async up(): Promise<void> {
    this.process = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const client = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      const pong = await client.connect().then(() => client.ping()).catch(() => null);
      client.disconnect();
      if (pong === 'PONG') return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('redis-server did not start');
  }

  /** Kills the server (as a crash would: nothing is saved) and starts a new, empty one on the same port. */
  async restart(downMs = 0): Promise<void> {
    await this.kill();
    if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
    await this.up();
  }

  async kill(): Promise<void> {
    const child = this.process;
    this.process = null;
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  }

  async command(...args: string[]): Promise<unknown> {
    const client = new Redis(this.url, { maxRetriesPerRequest: 0 });
    try {
      return await client.call(args[0] as string, ...args.slice(1));
    } finally {
      client.disconnect();
    }
  }
}
