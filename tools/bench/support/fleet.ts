// The fleet as separate processes, one per service, for the benches that measure what a deployment pays
// (`bench:load`, `bench:fleet-cost`, `bench:c2pa-corpus`): a sandbox (database with a role per service, NATS stream, Redis prefix,
// blob directory), every service on free loopback ports, each started in dependency order and waited for on
// its /readyz.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { databaseRole, grpcAddrVar, SERVICE_NAMES, type ServiceName } from '../../../packages/config/src/index.js';
import {
  createSandbox,
  databaseUrl,
  freePort,
  makeDevPki,
  PG_ADMIN_URL,
  startHardhat,
  waitFor,
  type HardhatNode,
  type Sandbox,
} from '@cairn/testing';
import { FLEET_ORDER, provisionFleetRoles } from '../../../test/support/fleet-setup.js';
import { spawnService, type ServiceProcess } from '../../../test/support/process.js';

export { FLEET_ORDER };

export interface ProcessFleetOptions {
  /** Environment on top of the sandbox's, for every service. */
  overrides?: NodeJS.ProcessEnv;
  /** `bundle`: services/<svc>/dist/main.js as `npm run up` runs them; `source`: src/main.ts through tsx. */
  entry?: 'source' | 'bundle';
  /** Mutual TLS between the services (a development CA), as `npm run up` sets up. */
  tls?: boolean;
  /** A hardhat chain for the anchor service, as `npm run up` starts; without it anchoring fails and retries. */
  chain?: boolean;
}

export interface ProcessFleet {
  /** The gateway's base URL. */
  base: string;
  sandbox: Sandbox;
  processes: Map<ServiceName, ServiceProcess>;
  /** Each service's loopback ports (gRPC, and ops: /healthz, /readyz, /metrics). */
  ports: Map<ServiceName, { grpc: number; ops: number }>;
  chain: HardhatNode | undefined;
  stop(): Promise<void>;
}

export async function startProcessFleet(options: ProcessFleetOptions = {}): Promise<ProcessFleet> {
  const chain = options.chain ? await startHardhat(await freePort()) : undefined;
  const sandbox = await createSandbox({
    ...(chain ? { ANCHOR_RPC_URL: chain.url } : { ANCHOR_RPC_URL: 'http://127.0.0.1:1' }),
    ...options.overrides,
  });
  const processes = new Map<ServiceName, ServiceProcess>();
  const tlsDir = options.tls ? await mkdtemp(join(tmpdir(), 'cairn-bench-tls-')) : undefined;
  const stop = async () => {
    for (const child of processes.values()) child.child.kill('SIGTERM');
    await Promise.all(
      [...processes.values()].map(async (child) => {
        const timer = setTimeout(() => child.kill(), 10_000);
        await child.exit;
        clearTimeout(timer);
      }),
    );
    await chain?.stop();
    await sandbox.dispose();
    if (tlsDir) await rm(tlsDir, { recursive: true, force: true });
  };
  try {
    await provisionFleetRoles(sandbox.databaseName);
    const tls = tlsDir ? await makeDevPki(tlsDir, SERVICE_NAMES) : undefined;
    const httpPort = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...sandbox.env,
      HTTP_PORT: String(httpPort),
      PUBLIC_BASE_URL: `http://127.0.0.1:${httpPort}`,
    };
    const ports = new Map<ServiceName, { grpc: number; ops: number }>();
    for (const name of FLEET_ORDER) ports.set(name, { grpc: await freePort(), ops: await freePort() });
    for (const [name, p] of ports) env[grpcAddrVar(name)] = `127.0.0.1:${p.grpc}`;
    for (const name of FLEET_ORDER) {
      const p = ports.get(name)!;
      const own = tls?.[name];
      const child = spawnService(
        name,
        {
          ...env,
          DATABASE_URL: databaseUrl(PG_ADMIN_URL, sandbox.databaseName, databaseRole(name)),
          GRPC_PORT: String(p.grpc),
          OPS_PORT: String(p.ops),
          ...(own ? { GRPC_TLS_CA: own.ca, GRPC_TLS_CERT: own.cert, GRPC_TLS_KEY: own.key } : {}),
        },
        options.entry ?? 'source',
      );
      processes.set(name, child);
      await waitFor(
        `${name} ready`,
        async () => {
          if (child.child.exitCode !== null) throw new Error(`${name} exited:\n${child.output().slice(-4000)}`);
          return (await fetch(`http://127.0.0.1:${p.ops}/readyz`).catch(() => undefined))?.status === 200; // not listening yet
        },
        120_000,
        250,
      );
    }
    return { base: `http://127.0.0.1:${httpPort}`, sandbox, processes, ports, chain, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A new tenant through the public onboarding route; answers its API key. */
export async function onboardTenant(base: string, name: string, plan = 'growth'): Promise<string> {
  const res = await fetch(`${base}/v1/onboard`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': crypto.randomUUID() },
    body: JSON.stringify({
      email: `${name.toLowerCase()}@example.com`,
      tenant_name: name,
      plan,
      payment_method_id: 'pm_card_visa',
    }),
  });
  if (res.status !== 200 && res.status !== 201) throw new Error(`onboard ${name}: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { api_key: string }).api_key;
}
