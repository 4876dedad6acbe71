/** The nine services of the fleet and their default local ports: the one list every tool reads. */
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
] as const;

export type ServiceName = (typeof SERVICE_NAMES)[number];

export interface ServicePorts {
  grpc: number;
  /** /healthz, /readyz, /metrics */
  ops: number;
}

export const DEFAULT_PORTS: Readonly<Record<ServiceName, ServicePorts>> = {
  gateway: { grpc: 50050, ops: 9460 },
  signer: { grpc: 50051, ops: 9461 },
  verifier: { grpc: 50052, ops: 9462 },
  watermark: { grpc: 50053, ops: 9463 },
  softbinding: { grpc: 50054, ops: 9464 },
  anchor: { grpc: 50055, ops: 9465 },
  billing: { grpc: 50056, ops: 9466 },
  audit: { grpc: 50057, ops: 9467 },
  webhook: { grpc: 50058, ops: 9468 },
};

export const DEFAULT_GATEWAY_HTTP_PORT = 8080;

/** Env var naming where a peer's gRPC server is, e.g. AUDIT_GRPC_ADDR=127.0.0.1:50057. */
export function grpcAddrVar(service: ServiceName): string {
  return `${service.toUpperCase()}_GRPC_ADDR`;
}
