/** The HTTP plumbing of a fake upstream on 127.0.0.1: start, base URL, close, and a 500 on a bug. */
import http, { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export abstract class LoopbackServer {
  private readonly server: http.Server;

  constructor() {
    this.server = http.createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) this.internalError(res, String(error));
        else res.destroy();
      });
    });
  }

  protected abstract handle(req: IncomingMessage, res: ServerResponse): Promise<void>;

  /** Answers a failure of the fake itself in the provider's error shape. */
  protected abstract internalError(res: ServerResponse, message: string): void;

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
    return this;
  }

  /** `http://127.0.0.1:<port>`, without a path: adapters add theirs (`/v1/…`). */
  get baseUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
