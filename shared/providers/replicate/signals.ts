/**
 * Wakes a polling adapter early when the provider's webhook for its prediction arrives. In one
 * process an EventEmitter is enough; with Redis the webhook may land on a web process while the
 * job polls on a worker, so the id also goes over one pub/sub channel. A signal only makes the
 * adapter poll now: the poll stays the one source of truth, so a forged or replayed webhook can
 * never finish a job by itself.
 */
import { EventEmitter } from 'node:events';
import type { Redis } from '../../redis';

export interface PredictionSignalsOptions {
  /** Opens an ioredis client (two are opened: a subscriber cannot publish). Absent: in-process only. */
  connect?: () => Redis;
  /** Namespace of the channel (the deployment's REDIS_KEY_PREFIX). */
  prefix?: string;
  onError?: (error: Error) => void;
}

export class PredictionSignals {
  private readonly local = new EventEmitter();
  private readonly channel: string;
  private publisher: Redis | undefined;
  private subscriber: Redis | undefined;
  private subscribed: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly options: PredictionSignalsOptions = {}) {
    this.channel = `${options.prefix ?? 'gensvc'}:provider-predictions`;
    // One listener per running prediction; many may run at once in a worker.
    this.local.setMaxListeners(0);
  }

  /** Calls `listener` whenever a signal for `predictionId` arrives, until the returned function is called. */
  async watch(predictionId: string, listener: () => void): Promise<() => void> {
    this.local.on(predictionId, listener);
    const unwatch = () => {
      this.local.off(predictionId, listener);
    };
    if (this.options.connect && !this.closed) {
      this.subscribed ??= this.subscribe(this.options.connect);
      // Without the subscription the poll still finds the result, only later.
      await this.subscribed.catch((error: unknown) => this.report(error));
    }
    return unwatch;
  }

  /** Wakes whoever polls `predictionId`, in this process and (with Redis) in every other. */
  async notify(predictionId: string): Promise<void> {
    if (!this.options.connect || this.closed) {
      this.local.emit(predictionId);
      return;
    }
    this.publisher ??= this.open(this.options.connect);
    try {
      // Our own subscriber (if this process polls) hears it too and wakes the local listeners.
      const receivers = await this.publisher.publish(this.channel, predictionId);
      if (receivers === 0) this.local.emit(predictionId);
    } catch (error) {
      this.report(error);
      this.local.emit(predictionId);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.local.removeAllListeners();
    const clients = [this.publisher, this.subscriber].filter((c): c is Redis => c !== undefined);
    this.publisher = undefined;
    this.subscriber = undefined;
    await Promise.all(clients.map((c) => c.quit().then(() => undefined, () => c.disconnect())));
  }

  private async subscribe(connect: () => Redis): Promise<void> {
    const subscriber = this.open(connect);
    this.subscriber = subscriber;
    subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.channel) this.local.emit(message);
    });
    await subscriber.subscribe(this.channel);
  }

  private open(connect: () => Redis): Redis {
    const client = connect();
    client.on('error', (error: Error) => this.report(error));
    return client;
  }

  private report(error: unknown): void {
    this.options.onError?.(error instanceof Error ? error : new Error(String(error)));
  }
}
