/**
 * Real processes for tests: a TypeScript entry point run by node with @swc-node/register, with
 * only the environment the test gives (plus PATH and HOME), its output collected.
 */
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';

export const repoRoot = path.join(__dirname, '..', '..');

export interface ChildRun {
  pid: number;
  exit: Promise<{ code: number | null; output: string }>;
  kill: (signal?: NodeJS.Signals) => void;
  /** Everything written to stdout and stderr so far. */
  output: () => string;
  /** Resolves with the output once it matches `pattern` (the child's log lines arrive through a pipe, a little after the fact). */
  waitForOutput: (pattern: RegExp, timeoutMs?: number) => Promise<string>;
}

/** `node -r @swc-node/register <args…>` in the repository root. */
export function runNode(args: string[], env: Record<string, string> = {}): ChildRun {
  const child = spawn(process.execPath, ['-r', '@swc-node/register', ...args], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const exit = new Promise<{ code: number | null; output: string }>((resolve) => child.on('exit', (code) => resolve({ code, output })));
  const waitForOutput = async (pattern: RegExp, timeoutMs = 10_000): Promise<string> => {
    const deadline = Date.now() + timeoutMs;
    while (!pattern.test(output) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    return output;
  };
  return { pid: child.pid ?? 0, exit, kill: (signal = 'SIGTERM') => child.kill(signal), output: () => output, waitForOutput };
}

/** One of the project's entry points (`main.ts`, `bot/main.ts`, …). */
export function runEntry(entry: string, env: Record<string, string>): ChildRun {
  return runNode([path.join(repoRoot, entry)], env);
}

/** A loopback port nobody listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address() as net.AddressInfo;
      server.close(() => resolve(address.port));
    });
  });
}
