/**
 * The metrics of a process without the API (worker, clock, bot) on METRICS_PORT: GET /metrics
 * with `Authorization: Bearer <METRICS_TOKEN>`, 401 without it, 404 for anything else. Started by
 * the lifecycle (lifecycle.ts) only when METRICS_PORT is set; a web process serves its metrics
 * at /metrics on PORT instead.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { bearerMatches } from './metrics-auth';
import type { Metrics } from './metrics';

export interface MetricsServer {
  /** The port it listens on (METRICS_PORT, or the one the system chose for 0). */
  port: number;
  close(): Promise<void>;
}

function answer(res: http.ServerResponse, status: number, body: string, contentType = 'application/json'): void {
  res.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store' });
  res.end(body);
}

export async function startMetricsServer(metrics: Metrics, options: { port: number; token: string; host?: string }): Promise<MetricsServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      answer(res, 404, JSON.stringify({ detail: 'Not found', code: 'not_found' }));
      return;
    }
    if (!bearerMatches(req.headers.authorization, options.token)) {
      res.setHeader('www-authenticate', 'Bearer');
      answer(res, 401, JSON.stringify({ detail: 'Invalid or expired token', code: 'invalid_token' }));
      return;
    }
    metrics.exposition().then(
      ({ contentType, text }) => answer(res, 200, req.method === 'HEAD' ? '' : text, contentType),
      () => answer(res, 500, JSON.stringify({ detail: 'Internal server error', code: 'internal_error' })),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
