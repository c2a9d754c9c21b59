/** Child processes for the benchmarks: start a role or tool, wait for it, read its RSS, stop it. */
import { ChildProcess, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

const repoRoot = path.join(__dirname, '..');

/** A built entry point (`npm run build` writes dist/; BENCH_DIST points at another build, an earlier commit's, to compare). */
export function distEntry(relative: string): string {
  return path.join(process.env.BENCH_DIST ?? path.join(repoRoot, 'dist'), relative);
}

export interface RoleProcess {
  pid: number;
  /** Resolves with the first line of its output matching `pattern`. */
  line(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

/** Starts `script` with node (and swc for TypeScript) with only `env` beside PATH and HOME. */
export function spawnRole(name: string, script: string, env: Record<string, string>, args: string[] = [], options: { typescript?: boolean; nodeArgs?: string[] } = {}): RoleProcess {
  const nodeArgs = [...(options.nodeArgs ?? []), ...(options.typescript ? ['-r', '@swc-node/register'] : []), script, ...args];
  const child: ChildProcess = spawn(process.execPath, nodeArgs, {
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const listeners = new Set<() => void>();
  const collect = (chunk: Buffer): void => {
    output += chunk.toString();
    if (output.length > 1_000_000) output = output.slice(-100_000);
    for (const listener of listeners) listener();
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    pid: child.pid ?? 0,
    exited,
    line(pattern, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const match = pattern.exec(output);
          if (match) {
            listeners.delete(check);
            clearTimeout(timer);
            resolve(match);
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`${name} printed no ${pattern} within ${timeoutMs} ms:\n${output.slice(-2000)}`));
        }, timeoutMs);
        listeners.add(check);
        void exited.then((code) => {
          if (listeners.has(check)) {
            listeners.delete(check);
            clearTimeout(timer);
            reject(new Error(`${name} exited (${code}) before printing ${pattern}:\n${output.slice(-2000)}`));
          }
        });
        check();
      });
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

export async function waitForHttp(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ok = await fetch(url).then((res) => res.ok, () => false);
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`);
}

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address() as net.AddressInfo;
      server.close(() => resolve(address.port));
    });
  });
}

/** A process's resident memory in MB (Linux: /proc/<pid>/status VmRSS). */
export function rssMb(pid: number): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    return kb / 1024;
  } catch {
    return 0;
  }
}

/** An account the benchmarks load: elite, with bonus tokens enough for any run. */
export interface BenchAccount {
  email: string;
  password: string;
}

/** Made through the real admin CLI (against the stores in `env`). */
export async function createEliteAccount(env: Record<string, string>): Promise<BenchAccount> {
  const account = { email: `bench-${crypto.randomBytes(4).toString('hex')}@example.test`, password: 'a long bench password' };
  const created = await spawnRole('admin', distEntry('cli/admin.js'), env, ['create-user', '--email', account.email, '--password', account.password, '--plan', 'elite', '--bonus-tokens', '1000000000']).exited;
  if (created !== 0) throw new Error('admin create-user failed');
  return account;
}

/** A new API key of `account`, made through the API at `url` (signed in with its password). */
export async function apiKeyOf(url: string, account: BenchAccount): Promise<string> {
  const login = (await (await fetch(`${url}/api/v2/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(account) })).json()) as { access_token: string };
  const created = await fetch(`${url}/api/v2/keys`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${login.access_token}` }, body: JSON.stringify({ name: 'bench' }) });
  return ((await created.json()) as { key: string }).key;
}

/** A new elite account's API key. */
export async function eliteKey(url: string, env: Record<string, string>): Promise<string> {
  return apiKeyOf(url, await createEliteAccount(env));
}
