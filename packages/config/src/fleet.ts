/** The ten services of the fleet and their default local ports: the one list every tool reads. */
export const SERVICE_NAMES = [
  'gateway',
  'signer',
  'verifier',
  'watermark',
  'softbinding',
  'anchor',
  'billing',
  'audit',
  'webhook',
  'tenant',
] as const;

export type ServiceName = (typeof SERVICE_NAMES)[number];

export interface ServicePorts {
  grpc: number;
  /** /healthz, /readyz, /metrics */
  ops: number;
}

/**
 * Every default port (and every port the local launcher shifts them to) stays below Linux's ephemeral range
 * (32768–60999): a port in it can be taken, between a check and a bind, by any outgoing connection's local end
 * (seen: a service failing to start with EADDRINUSE on a 5xxxx port while tests held many connections).
 */
export const DEFAULT_PORTS: Readonly<Record<ServiceName, ServicePorts>> = {
  gateway: { grpc: 9450, ops: 9460 },
  signer: { grpc: 9451, ops: 9461 },
  verifier: { grpc: 9452, ops: 9462 },
  watermark: { grpc: 9453, ops: 9463 },
  softbinding: { grpc: 9454, ops: 9464 },
  anchor: { grpc: 9455, ops: 9465 },
  billing: { grpc: 9456, ops: 9466 },
  audit: { grpc: 9457, ops: 9467 },
  webhook: { grpc: 9458, ops: 9468 },
  tenant: { grpc: 9459, ops: 9469 },
};

export const DEFAULT_GATEWAY_HTTP_PORT = 8080;

/**
 * The V8 flags every service process runs with: the image's CMD (Dockerfile, checked by test/deployment.test.ts),
 * `npm run up` and the tests that start services as processes. A 32 MiB semi-space (Node's default is 16) lets the
 * young generation hold a request's buffers and parsed messages until they die, instead of scavenging and
 * promoting them several times a request: garbage collection fell by about 30 % of main-thread samples over a
 * run of 1 MP signs (docs/performance.md), for up to 32 MiB more young generation per process.
 */
export const SERVICE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=32'];

/** Env var naming where a peer's gRPC server is, e.g. AUDIT_GRPC_ADDR=127.0.0.1:9457. */
export function grpcAddrVar(service: ServiceName): string {
  return `${service.toUpperCase()}_GRPC_ADDR`;
}

/**
 * The Postgres role a service connects as: it owns its schema and nothing else, so a compromised service
 * cannot read or write another's tables (and it is never superuser or BYPASSRLS: start-up checks).
 */
export function databaseRole(service: ServiceName): string {
  return `cairn_${service}`;
}
