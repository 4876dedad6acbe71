import { createServer, type Server } from 'node:http';
import type { ServiceMetrics } from '@cairn/telemetry';

export interface ReadinessReport {
  /** Can serve: Postgres reachable and not draining (503 otherwise). */
  ready: boolean;
  /** Serving without a dependency it can do without for a while (Redis, NATS): 200 with status "degraded". */
  degraded?: boolean;
  /** Per dependency: 'ok', or what failed. */
  checks: Record<string, string>;
}

/**
 * The ops port: /healthz (the process is alive), /readyz (it can serve: 200 `ready`, or 200 `degraded` when a
 * dependency it can do without for a while is down; 503 `not_ready` when it cannot serve), /metrics (Prometheus). Kept off the public port so probes and scrapes never meet auth or limits.
 */
export function createOpsServer(metrics: ServiceMetrics, readiness: () => Promise<ReadinessReport>): Server {
  return createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return send(405, 'application/json', '{"status":"method not allowed"}');
    if (path === '/healthz') return send(200, 'application/json', '{"status":"ok"}');
    if (path === '/readyz') {
      readiness().then(
        (report) =>
          send(
            report.ready ? 200 : 503,
            'application/json',
            JSON.stringify({
              status: report.ready ? (report.degraded ? 'degraded' : 'ready') : 'not_ready',
              checks: report.checks,
            }),
          ),
        (error: unknown) =>
          send(503, 'application/json', JSON.stringify({ status: 'not_ready', error: String(error) })),
      );
      return;
    }
    if (path === '/metrics') {
      metrics.render().then(
        (text) => send(200, metrics.contentType, text),
        () => send(500, 'text/plain', 'metrics unavailable'),
      );
      return;
    }
    send(404, 'application/json', '{"status":"not found"}');
  });
}

export function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : port);
    });
  });
}

export function closeServer(server: Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      server.closeAllConnections();
      resolve();
    }, graceMs);
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    server.closeIdleConnections();
  });
}
