/**
 * Server-sent events on a Koa response: `text/event-stream`, unbuffered by proxies, each event's
 * data one line of JSON. Also the signal of a client that went away, which stops (and does not
 * charge) the work it was waiting for.
 */
import { PassThrough } from 'node:stream';
import type { AppContext } from './context';

export class EventStream {
  private readonly body = new PassThrough();

  constructor(ctx: AppContext) {
    // Counted open until the response is over, however it ends (finished or the client gone).
    ctx.res.once('close', ctx.container.metrics.sseStreamOpened());
    ctx.status = 200;
    ctx.set('Content-Type', 'text/event-stream; charset=utf-8');
    ctx.set('Cache-Control', 'no-cache, no-transform');
    ctx.set('X-Accel-Buffering', 'no');
    ctx.body = this.body;
  }

  /** One event; without a name, a bare `data:` line (as OpenAI-style streams send). */
  send(event: string | null, data: unknown): void {
    this.body.write(`${event === null ? '' : `event: ${event}\n`}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
  }

  end(): void {
    this.body.end();
  }
}

/** Aborts when the client closes the connection before the response has been written whole. */
export function clientGone(ctx: AppContext): AbortSignal {
  const gone = new AbortController();
  ctx.res.on('close', () => {
    if (!ctx.res.writableFinished) gone.abort(new Error('client disconnected'));
  });
  return gone.signal;
}

/**
 * Writes `events` to the stream as they come and ends it, whatever happens: a failure of the
 * writer itself is logged (the generation's own failure arrives as its last event).
 */
export function pipeEvents(stream: EventStream, events: AsyncIterable<{ event: string | null; data: unknown }>, onError: (error: unknown) => void): void {
  void (async () => {
    for await (const { event, data } of events) stream.send(event, data);
  })()
    .catch(onError)
    .finally(() => stream.end());
}
