/**
 * A small origin on 127.0.0.1 that the fuzzed app may fetch from (its `host:port` goes into
 * URL_FETCH_ALLOW): an image, a WAV, a webhook receiver, a 404, an HTML page and a redirect to a
 * private address. Every other URL the fuzzers generate is one the service must refuse without
 * connecting (loopback, private, link-local and metadata addresses, other schemes), so no
 * generated input ever reaches a real host.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LoopbackServer } from '../loopback-server';

/** An 8×8 PNG (sharp decodes it; the fake tools take any image). */
export const PNG_8 = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAACXBIWXMAAAPoAAAD6AG1e1JrAAAAEUlEQVR4nGM4ISeHFTEMLQkAkL9BAbKfPiIAAAAASUVORK5CYII=',
  'base64',
);
/** A WAV header and silence: sniffed as audio/wav (the fake recognizer reads nothing). */
export const WAV = Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from('WAVEfmt '), Buffer.alloc(200)]);

export class MediaSink extends LoopbackServer {
  /** Bodies posted to /hook (nothing should post there: the fuzzed app runs no worker). */
  readonly posted: string[] = [];

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'POST') {
      const chunks: Buffer[] = [];
      for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
      this.posted.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(204).end();
      return;
    }
    switch (path) {
      case '/img.png':
        res.writeHead(200, { 'content-type': 'image/png', 'content-length': PNG_8.length }).end(PNG_8);
        return;
      case '/a.wav':
        res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': WAV.length }).end(WAV);
        return;
      case '/page.html':
        res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>not media</body></html>');
        return;
      case '/empty':
        res.writeHead(200, { 'content-type': 'image/png', 'content-length': 0 }).end();
        return;
      case '/redirect-private':
        res.writeHead(302, { location: 'http://127.0.0.2:9/secret.png' }).end();
        return;
      default:
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not here');
    }
  }

  protected internalError(res: ServerResponse, message: string): void {
    res.writeHead(500, { 'content-type': 'text/plain' }).end(message);
  }

  /** `127.0.0.1:<port>`, for URL_FETCH_ALLOW. */
  get hostPort(): string {
    return this.baseUrl.slice('http://'.length);
  }
}
