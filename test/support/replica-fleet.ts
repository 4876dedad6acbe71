import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SERVICE_NAMES, SERVICE_NODE_FLAGS } from '@cairn/config';
import {
  createSandbox,
  freePort,
  makeDevPki,
  startHardhat,
  waitFor,
  type HardhatNode,
  type Sandbox,
  type TlsFiles,
} from '@cairn/testing';
import { portFree } from './ports.js';
import { provisionFleetRoles } from './fleet-setup.js';
import { allPorts, planFleet, type FleetPlan, type ServicePlan } from '../../tools/dev/src/plan.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Running {
  child: ChildProcess;
  output: string[];
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * The fleet as `npm run up -- --replicas N` plans it (tools/dev/src/plan.ts: ports shifted per replica, every
 * `<SVC>_GRPC_ADDR` an `ipv4:` list of all replicas, mutual TLS), each replica the built bundle
 * (services/<svc>/dist/main.js) in a process of its own, against a sandbox (database, NATS stream and subjects,
 * Redis prefix) and a hardhat chain of its own. Unlike the launcher, a replica that dies does not stop the rest:
 * the test kills and starts replicas as Kubernetes would restart a pod.
 */
export class ReplicaFleet {
  private readonly running = new Map<string, Running>();
  /** Counters of processes since killed, per replica label: a restart starts its counters at zero. */
  private readonly carried = new Map<string, Map<string, number>>();

  private constructor(
    readonly plan: FleetPlan,
    readonly sandbox: Sandbox,
    readonly chain: HardhatNode,
    readonly tls: Record<string, TlsFiles>,
    private readonly tlsDir: string,
  ) {}

  static async start(replicas: number, overrides: NodeJS.ProcessEnv = {}): Promise<ReplicaFleet> {
    const missing = SERVICE_NAMES.filter((name) => !existsSync(join(ROOT, `services/${name}/dist/main.js`)));
    if (missing.length) throw new Error(`build the bundles first (node tools/dev/build.mjs): ${missing.join(', ')}`);
    const sandbox = await createSandbox();
    await provisionFleetRoles(sandbox.databaseName);
    const chain = await startHardhat(await freePort());
    const tlsDir = join(tmpdir(), `cairn-replicas-tls-${sandbox.id}`);
    const tls = await makeDevPki(tlsDir, SERVICE_NAMES);
    const base: NodeJS.ProcessEnv = { ...sandbox.env, ANCHOR_RPC_URL: chain.url, ...overrides };
    // The plan gives each replica its own ports.
    for (const name of ['GRPC_PORT', 'OPS_PORT', 'HTTP_PORT', 'OCSP_PORT', 'OCSP_PUBLIC_URL', 'NODE_OPTIONS'])
      delete base[name];
    const plan = await freePlan(base, replicas, sandbox, tls);
    const fleet = new ReplicaFleet(plan, sandbox, chain, tls, tlsDir);
    try {
      await Promise.all(plan.services.map((s) => fleet.startReplica(s.label)));
    } catch (error) {
      await fleet.stop();
      throw error;
    }
    return fleet;
  }

  /** Every gateway replica's base URL. */
  get gateways(): string[] {
    return this.plan.httpPorts.map((port) => `http://127.0.0.1:${port}`);
  }

  service(label: string): ServicePlan {
    const found = this.plan.services.find((s) => s.label === label);
    if (!found) throw new Error(`no replica ${label}`);
    return found;
  }

  /** Starts (or starts again) one replica and waits until its /readyz answers 200. */
  async startReplica(label: string): Promise<void> {
    const s = this.service(label);
    const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, join(ROOT, `services/${s.name}/dist/main.js`)], {
      cwd: ROOT,
      env: s.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output: string[] = [];
    const keep = (chunk: Buffer) => {
      output.push(chunk.toString());
      if (output.length > 200) output.splice(0, output.length - 200);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('close', (code, signal) => resolve({ code, signal })),
    );
    this.running.set(label, { child, output, exit });
    await waitFor(
      `${label} ready`,
      async () => {
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${label} exited`);
        const res = await fetch(`http://127.0.0.1:${s.opsPort}/readyz`).catch(() => undefined); // not listening yet
        return res?.status === 200;
      },
      120_000,
      250,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; its output:\n${output.join('')}`);
    });
  }

  /** SIGKILL: the process has no chance to finish anything. Its counters so far are kept (handledCalls). */
  async kill(label: string): Promise<void> {
    const running = this.running.get(label);
    if (!running) throw new Error(`${label} is not running`);
    const before = await this.ownCounts(label).catch(() => new Map<string, number>());
    const carried = this.carried.get(label) ?? new Map<string, number>();
    for (const [key, value] of before) carried.set(key, (carried.get(key) ?? 0) + value);
    this.carried.set(label, carried);
    running.child.kill('SIGKILL');
    const exit = await running.exit;
    if (exit.signal !== 'SIGKILL') throw new Error(`${label} ended ${JSON.stringify(exit)}, not by SIGKILL`);
    this.running.delete(label);
  }

  /**
   * What a replica served, over all its processes: gRPC calls its handlers answered by method
   * (cairn_grpc_server_handled_total), events its durable consumers handled, and a gateway's HTTP requests.
   */
  async handledCalls(label: string): Promise<Map<string, number>> {
    const total = new Map(this.carried.get(label) ?? []);
    for (const [key, value] of await this.ownCounts(label)) total.set(key, (total.get(key) ?? 0) + value);
    return total;
  }

  private async ownCounts(label: string): Promise<Map<string, number>> {
    const text = await (await fetch(`http://127.0.0.1:${this.service(label).opsPort}/metrics`)).text();
    const counts = new Map<string, number>();
    for (const line of text.split('\n')) {
      const grpc = /^cairn_grpc_server_handled_total\{.*method="(\/cairn\.[^"]+)".*\} (\d+)/.exec(line);
      const http = /^cairn_http_request_duration_seconds_count\{.*route="(\/v1\/[^"]*)".*\} (\d+)/.exec(line);
      const event = /^cairn_events_consumed_total\{.*durable="([^"]+)".*\} (\d+)/.exec(line);
      const match = grpc ?? http ?? (event ? [event[0], `event ${event[1]}`, event[2]] : null);
      const key = match?.[1];
      if (key) counts.set(key, (counts.get(key) ?? 0) + Number(match[2]));
    }
    return counts;
  }

  output(label: string): string {
    return this.running.get(label)?.output.join('') ?? '';
  }

  async stop(): Promise<void> {
    for (const running of this.running.values()) running.child.kill('SIGTERM');
    await Promise.all(
      [...this.running.values()].map(async (running) => {
        const timer = setTimeout(() => running.child.kill('SIGKILL'), 10_000);
        await running.exit;
        clearTimeout(timer);
      }),
    );
    this.running.clear();
    await this.chain.stop();
    await this.sandbox.dispose();
    await rm(this.tlsDir, { recursive: true, force: true });
  }
}

/**
 * The launcher's plan at a port offset where every port of every replica is free right now, kept between 10000
 * and 20000 (freePort hands out 20000 and up; the fleet-process test's offsets start at 1000).
 */
async function freePlan(
  base: NodeJS.ProcessEnv,
  replicas: number,
  sandbox: Sandbox,
  tls: Record<string, TlsFiles>,
): Promise<FleetPlan> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const offset = 5500 + Math.floor(Math.random() * (9500 - (replicas - 1) * 1000 - 5500));
    const plan = planFleet(base, {
      offset,
      replicas,
      databaseUrl: sandbox.databaseUrl,
      dataKey: String(sandbox.env.CAIRN_DATA_KEY),
      blobStoreUrl: String(sandbox.env.BLOB_STORE_URL),
      serviceRoles: true,
      tls,
    });
    const free = await Promise.all(allPorts(plan).map((p) => portFree(p.port)));
    if (free.every(Boolean)) return plan;
  }
  throw new Error('no port offset has every replica port free');
}
