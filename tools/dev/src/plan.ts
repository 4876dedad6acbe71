import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import {
  databaseRole,
  DEFAULT_GATEWAY_HTTP_PORT,
  DEFAULT_PORTS,
  grpcAddrVar,
  SERVICE_NAMES,
  type ServiceName,
} from '@cairn/config';

export interface ServicePlan {
  name: ServiceName;
  /** Which replica of the service this process is (0 for the first), and how it is named in logs: `signer` or `signer-1`. */
  replica: number;
  label: string;
  grpcPort: number;
  opsPort: number;
  /** The gateway's public REST port. */
  httpPort?: number;
  env: NodeJS.ProcessEnv;
}

export interface FleetPlan {
  services: ServicePlan[];
  /** Where the services listen (and where the launcher reaches them). */
  host: string;
  httpPort: number;
  /** Every gateway replica's HTTP port, the first being httpPort (and PUBLIC_BASE_URL's). */
  httpPorts: number[];
  replicas: number;
  publicBaseUrl: string;
  /** The local chain the launcher starts for the anchor service (absent when ANCHOR_RPC_URL names another). */
  chain?: { port: number; url: string };
}

/** Binding on all interfaces is reached through loopback. */
export function reachableHost(bindHost: string | undefined): string {
  if (!bindHost || bindHost === '0.0.0.0' || bindHost === '::' || bindHost === '[::]') return '127.0.0.1';
  return bindHost.includes(':') && !bindHost.startsWith('[') ? `[${bindHost}]` : bindHost;
}

/**
 * Replica r of every service listens on its ports shifted by r × this (on top of the port offset): with
 * --replicas 2, the signer's gRPC is on 9451 and 10451, the gateway's HTTP on 8080 and 9080. Larger than the span
 * of one fleet's ports (8080–9471), so no replica's port is another's.
 */
export const REPLICA_PORT_STRIDE = 1000;

/** The signer's OCSP responder: its URL goes into every signing certificate, so it follows the offset. */
export const DEFAULT_OCSP_PORT = 9471;

/** The local chain's JSON-RPC port (hardhat), also shifted by the offset. */
export const DEFAULT_CHAIN_PORT = 8545;

/** The database URL with its user replaced by the service's own role (trust or peer auth locally: no password). */
export function serviceDatabaseUrl(databaseUrl: string, name: ServiceName): string {
  const url = new URL(databaseUrl);
  url.username = databaseRole(name);
  url.password = '';
  return url.toString();
}

/** A peer's gRPC target: one address, or grpc-js's static list of every replica's (the client balances over them). */
export function grpcTarget(host: string, ports: readonly number[]): string {
  if (ports.length === 1) return `${host}:${ports[0]}`;
  return `${host.startsWith('[') ? 'ipv6' : 'ipv4'}:${ports.map((p) => `${host}:${p}`).join(',')}`;
}

/**
 * Every service's ports (the defaults of packages/config shifted by `offset`, and by REPLICA_PORT_STRIDE per
 * replica) and its environment: the caller's, plus the database, its own ports, every peer's gRPC target (all its
 * replicas) and the gateway's public URL.
 *
 * `serviceRoles`: each service connects as cairn_<service> (the launcher provisioned them); without it (the
 * caller gave DATABASE_URL and --no-provision) every service uses that URL as given.
 */
export function planFleet(
  base: NodeJS.ProcessEnv,
  options: {
    offset: number;
    /** Processes per service (default 1). */
    replicas?: number;
    databaseUrl: string;
    dataKey: string;
    blobStoreUrl: string;
    serviceRoles?: boolean;
    /** Each service's gRPC certificate (mutual TLS between the services); plaintext gRPC when absent. */
    tls?: Readonly<Record<string, { ca: string; cert: string; key: string }>>;
  },
): FleetPlan {
  const host = reachableHost(base.GRPC_HOST);
  const replicas = options.replicas ?? 1;
  const shifts = Array.from({ length: replicas }, (_, r) => options.offset + r * REPLICA_PORT_STRIDE);
  const chainPort = DEFAULT_CHAIN_PORT + options.offset;
  const chain = base.ANCHOR_RPC_URL ? undefined : { port: chainPort, url: `http://127.0.0.1:${chainPort}` };
  const httpPorts = shifts.map((shift) => DEFAULT_GATEWAY_HTTP_PORT + shift);
  const httpPort = httpPorts[0]!;
  const publicBaseUrl = `http://127.0.0.1:${httpPort}`;
  // The first replica's responder: the URL is written into every certificate, so it must not depend on which
  // replica signed. While that replica is down, OCSP queries fail (a cluster puts a Service in front of them all).
  const ocspBase = base.OCSP_PORT ? Number(base.OCSP_PORT) : DEFAULT_OCSP_PORT + options.offset;
  const ocspPublicUrl = base.OCSP_PUBLIC_URL ?? `http://127.0.0.1:${ocspBase}/ocsp`;
  const peers: NodeJS.ProcessEnv = {};
  for (const name of SERVICE_NAMES)
    peers[grpcAddrVar(name)] = grpcTarget(
      '127.0.0.1',
      shifts.map((shift) => DEFAULT_PORTS[name].grpc + shift),
    );
  const services = SERVICE_NAMES.flatMap((name) =>
    shifts.map((shift, replica): ServicePlan => {
      const grpcPort = DEFAULT_PORTS[name].grpc + shift;
      const opsPort = DEFAULT_PORTS[name].ops + shift;
      const label = replicas > 1 ? `${name}-${replica}` : name;
      const env: NodeJS.ProcessEnv = {
        ...base,
        DATABASE_URL: options.serviceRoles ? serviceDatabaseUrl(options.databaseUrl, name) : options.databaseUrl,
        GRPC_PORT: String(grpcPort),
        OPS_PORT: String(opsPort),
        ...peers,
        PUBLIC_BASE_URL: publicBaseUrl,
        CAIRN_DATA_KEY: options.dataKey,
        BLOB_STORE_URL: base.BLOB_STORE_URL ?? options.blobStoreUrl,
        OCSP_PORT: String(ocspBase + replica * REPLICA_PORT_STRIDE),
        OCSP_PUBLIC_URL: ocspPublicUrl,
      };
      const tls = options.tls?.[name];
      if (tls) Object.assign(env, { GRPC_TLS_CA: tls.ca, GRPC_TLS_CERT: tls.cert, GRPC_TLS_KEY: tls.key });
      if (name === 'anchor') env.ANCHOR_RPC_URL = base.ANCHOR_RPC_URL ?? chain?.url;
      if (name === 'gateway') {
        const ownHttp = httpPorts[replica]!;
        env.HTTP_PORT = String(ownHttp);
        return { name, replica, label, grpcPort, opsPort, httpPort: ownHttp, env };
      }
      delete env.HTTP_PORT;
      return { name, replica, label, grpcPort, opsPort, env };
    }),
  );
  return { services, host, httpPort, httpPorts, replicas, publicBaseUrl, ...(chain ? { chain } : {}) };
}

export function allPorts(plan: FleetPlan): Array<{ port: number; what: string }> {
  const ocsp = plan.services
    .filter((s) => s.name === 'signer' && s.env.OCSP_PORT)
    .map((s) => ({ port: Number(s.env.OCSP_PORT), what: `${s.label} OCSP` }));
  const chain = plan.chain ? [{ port: plan.chain.port, what: 'local chain (hardhat)' }] : [];
  return [
    ...ocsp,
    ...chain,
    ...plan.services.flatMap((s) => [
      { port: s.grpcPort, what: `${s.label} gRPC` },
      { port: s.opsPort, what: `${s.label} ops` },
      ...(s.httpPort === undefined ? [] : [{ port: s.httpPort, what: `${s.label} HTTP` }]),
    ]),
  ];
}

function portFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ host: host.replace(/^\[|\]$/g, ''), port, exclusive: true }, () =>
      server.close(() => resolve(true)),
    );
  });
}

/** The ports some other process already holds (a fleet left running, say). */
export async function busyPorts(
  host: string,
  ports: Array<{ port: number; what: string }>,
): Promise<Array<{ port: number; what: string }>> {
  const free = await Promise.all(ports.map((p) => portFree(host, p.port)));
  return ports.filter((_, i) => !free[i]);
}

/**
 * The gateway's data key (sealing secrets at rest), created once in `.cairn/data-key` (gitignored, 0600) so
 * that what one run seals the next can open.
 */
export async function localDataKey(
  root: string,
): Promise<{ key: string; path: string; created: boolean; warning?: string }> {
  const dir = join(root, '.cairn');
  const path = join(dir, 'data-key');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const fresh = randomBytes(32).toString('hex');
  try {
    await writeFile(path, `${fresh}\n`, { flag: 'wx', mode: 0o600 });
    await chmod(path, 0o600); // whatever the umask
    return { key: fresh, path, created: true };
  } catch (error) {
    if (!(error instanceof Error && 'code' in error && error.code === 'EEXIST')) throw error;
  }
  const key = (await readFile(path, 'utf8')).trim();
  if (!/^[0-9a-fA-F]{64}$/.test(key)) {
    throw new Error(
      `${path} does not hold a data key (64 hex characters). Delete it to create a new one; values sealed with the old key will no longer open.`,
    );
  }
  const mode = (await stat(path)).mode & 0o777;
  const warning =
    mode & 0o077 ? `${path} is readable by other users (mode ${mode.toString(8)}); chmod 600 it.` : undefined;
  return warning ? { key, path, created: false, warning } : { key, path, created: false };
}
