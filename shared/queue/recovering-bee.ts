/**
 * bee-queue loads its Lua scripts into Redis once, at start-up, and then only calls them by hash
 * (EVALSHA). After Redis restarts, fails over or has its script cache flushed, every call fails
 * with NOSCRIPT until the process restarts (bee-queue's open issue #489): async generations,
 * webhooks, bot deliveries, schedules and maintenance would all stop. This queue answers a
 * NOSCRIPT the way ioredis does for its own scripts: it runs the script by its source (EVAL),
 * which also puts it back in the cache, so the next EVALSHA finds it again.
 */
import BeeQueue from 'bee-queue';

/** bee-queue's script sources by name (read when the first queue becomes ready). */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const lua = require('bee-queue/lib/lua') as { scripts: Record<string, string> };

type Callback = (error: Error | null, result?: unknown) => void;
interface Commandable {
  evalsha(...args: unknown[]): unknown;
  eval(...args: unknown[]): unknown;
}
interface ScriptCaller {
  _evalScriptOn(commandable: Commandable, args: unknown[]): Promise<unknown>;
}

const original = (BeeQueue.prototype as unknown as ScriptCaller)._evalScriptOn;

export function isNoScript(error: unknown): boolean {
  return error instanceof Error && /NOSCRIPT/.test(error.message);
}

export class RecoveringBeeQueue<T> extends BeeQueue<T> {
  /** bee-queue's script call, by name; on NOSCRIPT, the same call by the script's source. */
  _evalScriptOn(commandable: Commandable, args: unknown[]): Promise<unknown> {
    const name = String(args[0]);
    const rest = args.slice(1);
    // The original rewrites args[0] into the hash and appends its callback: give it a copy.
    return original.call(this, commandable, [...args]).catch((error: unknown) => {
      const source = lua.scripts[name];
      // A batch (pipelined saveAll, unused here) reports its errors per command, not here.
      if (!isNoScript(error) || source === undefined || typeof commandable.eval !== 'function') throw error;
      return new Promise((resolve, reject) => {
        const done: Callback = (err, result) => (err ? reject(err) : resolve(result));
        commandable.eval(source, ...rest, done);
      });
    });
  }
}
