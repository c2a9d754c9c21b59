/**
 * "What this account's credentials show changed": a key deleted or revoked, the plan moved or
 * its expiry changed, the profile or settings edited, the account deleted. Announced after the
 * change commits and heard in every process at once, so a cache of who owns an API key
 * (api-keys.ts) drops the account's entries before the next request: revocation stays
 * immediate with the cache on.
 *
 * In one process (embedded) an EventEmitter is enough. With Redis every process also hears it
 * over one pub/sub channel; the announcing process drops its own entries synchronously first.
 * While the subscription is not in place (connecting, or Redis lost) `listening` is false and
 * the cache keeps nothing, since announcements could be missed; a reconnection clears it.
 */
import { EventEmitter } from 'node:events';
import type { Redis } from '../redis';

/** An account id, or every account (the subscription was lost: anything may have changed). */
export type ChangedAccount = number | 'all';

export interface AccountChangesOptions {
  /** Opens an ioredis client for the subscription (a subscriber cannot publish). Absent: in-process only. */
  connect?: () => Redis;
  /** The client announcements are published on (the process's shared one). */
  publisher?: Redis;
  /** Namespace of the channel (the deployment's REDIS_KEY_PREFIX). */
  prefix?: string;
  onError?: (error: Error) => void;
}

export class AccountChanges {
  private readonly local = new EventEmitter();
  private readonly channel: string;
  private subscriber: Redis | undefined;
  private subscribing: Promise<void> | undefined;
  private subscribed = false;
  private closed = false;

  constructor(private readonly options: AccountChangesOptions = {}) {
    this.channel = `${options.prefix ?? 'gensvc'}:account-changes`;
    this.local.setMaxListeners(0);
  }

  /**
   * Whether every announcement from now on reaches this process. In-process: always. With
   * Redis: once subscribed (the first call starts the subscription; until it is in place, false).
   */
  listening(): boolean {
    if (!this.options.connect) return true;
    if (!this.subscribing && !this.closed) this.subscribing = this.subscribe(this.options.connect).catch((error: unknown) => this.report(error));
    return this.subscribed;
  }

  /** Calls `listener` for every announcement heard in this process (its own included). */
  onChange(listener: (account: ChangedAccount) => void): void {
    this.local.on('change', listener);
  }

  /** Tells every process that `userId`'s account changed. Never throws: a lost publish is logged. */
  async announce(userId: number): Promise<void> {
    this.local.emit('change', userId);
    const publisher = this.options.publisher;
    if (!publisher || this.closed) return;
    try {
      await publisher.publish(this.channel, String(userId));
    } catch (error) {
      // The other processes' caches then hold the account until their entries expire (seconds).
      this.report(error);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.subscribed = false;
    this.local.removeAllListeners();
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    if (subscriber) await subscriber.quit().then(() => undefined, () => subscriber.disconnect());
  }

  private async subscribe(connect: () => Redis): Promise<void> {
    const subscriber = connect();
    this.subscriber = subscriber;
    subscriber.on('error', (error: Error) => this.report(error));
    subscriber.on('message', (channel: string, message: string) => {
      if (channel !== this.channel) return;
      const userId = Number(message);
      if (Number.isSafeInteger(userId)) this.local.emit('change', userId);
    });
    const lost = (): void => {
      if (!this.subscribed) return;
      this.subscribed = false;
      this.local.emit('change', 'all');
    };
    subscriber.on('close', lost);
    subscriber.on('end', lost);
    subscriber.on('ready', () => {
      // ioredis subscribes again on reconnection; asking once more is harmless and tells us when.
      if (this.closed || this.subscribed) return;
      subscriber.subscribe(this.channel).then(
        () => {
          if (this.closed) return;
          this.local.emit('change', 'all');
          this.subscribed = true;
        },
        (error: unknown) => this.report(error),
      );
    });
    await subscriber.subscribe(this.channel);
    if (!this.closed) this.subscribed = true;
  }

  private report(error: unknown): void {
    this.options.onError?.(error instanceof Error ? error : new Error(String(error)));
  }
}
