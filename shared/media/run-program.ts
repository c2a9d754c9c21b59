/**
 * Running an external program (ffmpeg, pocketsphinx, fluidsynth) to the end: spawned with the
 * caller's abort signal (SIGKILL on abort), stdin fed from a buffer, stdout collected as bytes, a
 * non-zero exit turned into a ProviderError with the end of stderr.
 */
import { spawn } from 'node:child_process';
import { abortError } from '../providers/abort';
import { ProviderError } from '../providers/types';
import type { ProviderErrorKind } from '../providers/types';

export interface RunOptions {
  signal: AbortSignal;
  /** Written to the process's stdin, which is then closed. */
  stdin?: Buffer;
  /** The kind of ProviderError a non-zero exit becomes (default `unavailable`). */
  failureKind?: ProviderErrorKind;
  cwd?: string;
}

export interface RunResult {
  stdout: Buffer;
  stderr: string;
}

/** Runs `binary args` to the end; see the module comment. */
export function runProgram(label: string, binary: string, args: string[], options: RunOptions): Promise<RunResult> {
  const { signal } = options;
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(abortError(signal));
      return;
    }
    const child = spawn(binary, args, {
      signal,
      killSignal: 'SIGKILL',
      cwd: options.cwd,
      stdio: [options.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    let stderr = '';
    let settled = false;
    const settle = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      fn();
    };
    child.stdout?.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-4000);
    });
    if (options.stdin && child.stdin) {
      // The process may exit before reading everything (an error, or an abort): ignore EPIPE.
      child.stdin.on('error', () => undefined);
      child.stdin.end(options.stdin);
    }
    child.on('error', (error) => {
      // A process that never started emits no 'close' of its own on every platform: settle here.
      // An abort of a running one is settled on 'close', once it is really gone (not writing into
      // a temp dir that the caller is about to remove).
      if (child.pid === undefined) settle(() => reject(signal.aborted ? abortError(signal) : new ProviderError('unavailable', `${label} could not be started: ${error.message}`)));
    });
    child.on('close', (code, killedBy) => {
      if (signal.aborted) settle(() => reject(abortError(signal)));
      else if (code === 0) settle(() => resolve({ stdout: Buffer.concat(out), stderr }));
      else {
        const tail = stderr.trim().split('\n').slice(-3).join(' | ');
        settle(() => reject(new ProviderError(options.failureKind ?? 'unavailable', `${label} failed (${code ?? killedBy ?? 'unknown'}): ${tail}`)));
      }
    });
  });
}
