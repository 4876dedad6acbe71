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
 * Every service's ports (the defaults of packages/config shifted by `offset`) and its environment: the
 * caller's, plus the database, its own ports, every peer's gRPC address and the gateway's public URL.
 */
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

/**
 * `serviceRoles`: each service connects as cairn_<service> (the launcher provisioned them); without it (the
 * caller gave DATABASE_URL and --no-provision) every service uses that URL as given.
 */
export function planFleet(
  base: NodeJS.ProcessEnv,
  options: {
    offset: number;
    databaseUrl: string;
    dataKey: string;
    blobStoreUrl: string;
    serviceRoles?: boolean;
    /** Each service's gRPC certificate (mutual TLS between the services); plaintext gRPC when absent. */
    tls?: Readonly<Record<string, { ca: string; cert: string; key: string }>>;
  },
): FleetPlan {
  const host = reachableHost(base.GRPC_HOST);
  const chainPort = DEFAULT_CHAIN_PORT + options.offset;
  const chain = base.ANCHOR_RPC_URL ? undefined : { port: chainPort, url: `http://127.0.0.1:${chainPort}` };
  const httpPort = DEFAULT_GATEWAY_HTTP_PORT + options.offset;
  const publicBaseUrl = `http://127.0.0.1:${httpPort}`;
  const peers: NodeJS.ProcessEnv = {};
  for (const name of SERVICE_NAMES) peers[grpcAddrVar(name)] = `127.0.0.1:${DEFAULT_PORTS[name].grpc + options.offset}`;
  const services = SERVICE_NAMES.map((name): ServicePlan => {
    const grpcPort = DEFAULT_PORTS[name].grpc + options.offset;
    const opsPort = DEFAULT_PORTS[name].ops + options.offset;
    const env: NodeJS.ProcessEnv = {
      ...base,
      DATABASE_URL: options.serviceRoles ? serviceDatabaseUrl(options.databaseUrl, name) : options.databaseUrl,
      GRPC_PORT: String(grpcPort),
      OPS_PORT: String(opsPort),
      ...peers,
      PUBLIC_BASE_URL: publicBaseUrl,
      CAIRN_DATA_KEY: options.dataKey,
      BLOB_STORE_URL: base.BLOB_STORE_URL ?? options.blobStoreUrl,
      OCSP_PORT: base.OCSP_PORT ?? String(DEFAULT_OCSP_PORT + options.offset),
      OCSP_PUBLIC_URL:
        base.OCSP_PUBLIC_URL ?? `http://127.0.0.1:${base.OCSP_PORT ?? DEFAULT_OCSP_PORT + options.offset}/ocsp`,
    };
    const tls = options.tls?.[name];
    if (tls) Object.assign(env, { GRPC_TLS_CA: tls.ca, GRPC_TLS_CERT: tls.cert, GRPC_TLS_KEY: tls.key });
    if (name === 'anchor') env.ANCHOR_RPC_URL = base.ANCHOR_RPC_URL ?? chain?.url;
    if (name === 'gateway') {
      env.HTTP_PORT = String(httpPort);
      return { name, grpcPort, opsPort, httpPort, env };
    }
    delete env.HTTP_PORT;
    return { name, grpcPort, opsPort, env };
  });
  return { services, host, httpPort, publicBaseUrl, ...(chain ? { chain } : {}) };
}

export function allPorts(plan: FleetPlan): Array<{ port: number; what: string }> {
  const signer = plan.services.find((s) => s.name === 'signer');
  const ocsp = signer?.env.OCSP_PORT ? [{ port: Number(signer.env.OCSP_PORT), what: 'signer OCSP' }] : [];
  const chain = plan.chain ? [{ port: plan.chain.port, what: 'local chain (hardhat)' }] : [];
  return [
    ...ocsp,
    ...chain,
    ...plan.services.flatMap((s) => [
      { port: s.grpcPort, what: `${s.name} gRPC` },
      { port: s.opsPort, what: `${s.name} ops` },
      ...(s.httpPort === undefined ? [] : [{ port: s.httpPort, what: `${s.name} HTTP` }]),
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
