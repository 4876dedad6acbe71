import { expect } from '@jest/globals';
import { databaseRole, grpcAddrVar, type ServiceName } from '@cairn/config';
import { databaseUrl, freePort, PG_ADMIN_URL, waitFor } from '@cairn/testing';
import { spawnService, type ServiceProcess } from './process.js';
import { startStack, type Stack } from './stack.js';

/**
 * Services of a stack run as real processes of their own (for kill -9), each on fixed ports chosen up front so
 * the in-process rest of the fleet finds whichever process answers there. Usage: `reserve` the ports, start the
 * stack with `addresses()` among its overrides and these names as `external`, then `start` each.
 */
export class ServiceProcesses {
  private readonly running = new Map<ServiceName, ServiceProcess>();
  private stack: Stack | undefined;

  private constructor(private readonly ports: Map<ServiceName, { grpc: number; ops: number }>) {}

  static async reserve(names: ServiceName[]): Promise<ServiceProcesses> {
    const ports = new Map<ServiceName, { grpc: number; ops: number }>();
    for (const name of names) ports.set(name, { grpc: await freePort(), ops: await freePort() });
    return new ServiceProcesses(ports);
  }

  /**
   * A stack of `names` (as startStack takes them) whose `external` services run as processes of their own,
   * started in that order once the in-process rest is up; `overrides` go to both. What every chaos test sets up
   * before it kills anything.
   */
  static async startWithStack(
    names: ServiceName[],
    external: ServiceName[],
    overrides: NodeJS.ProcessEnv = {},
  ): Promise<{ stack: Stack; processes: ServiceProcesses }> {
    const processes = await ServiceProcesses.reserve(external);
    // The in-process services find the external ones at fixed addresses, whichever process answers there.
    const stack = await startStack(names, { ...processes.addresses(), ...overrides }, undefined, {
      external: processes.names,
    });
    for (const name of external) await processes.start(name, stack);
    return { stack, processes };
  }

  /** The gRPC address variables of these services, for startStack's overrides. */
  addresses(): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = {};
    for (const [name, own] of this.ports) env[grpcAddrVar(name)] = `127.0.0.1:${own.grpc}`;
    return env;
  }

  get names(): ServiceName[] {
    return [...this.ports.keys()];
  }

  /** Starts (or starts again) `name` with the stack's environment, as its own role, and waits until it is ready. */
  async start(name: ServiceName, stack: Stack | undefined = this.stack): Promise<ServiceProcess> {
    if (!stack) throw new Error('start the first process with its stack');
    this.stack = stack;
    const own = this.ports.get(name)!;
    const child = spawnService(name, {
      ...stack.env,
      DATABASE_URL: databaseUrl(PG_ADMIN_URL, stack.sandbox.databaseName, databaseRole(name)),
      GRPC_PORT: String(own.grpc),
      OPS_PORT: String(own.ops),
      // CHAOS_LOG_LEVEL=info shows what the process did (its output is in the failure message of start).
      LOG_LEVEL: process.env.CHAOS_LOG_LEVEL ?? 'warn',
    });
    this.running.set(name, child);
    await waitFor(
      `${name} ready`,
      async () => (await fetch(`http://127.0.0.1:${own.ops}/readyz`).catch(() => undefined))?.status === 200, // not listening yet
      90_000,
      200,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; its output:\n${child.output()}`);
    });
    return child;
  }

  /** SIGKILL, no chance to finish anything: the process is gone when this resolves. */
  async kill9(name: ServiceName): Promise<void> {
    const child = this.running.get(name)!;
    child.child.kill('SIGKILL');
    expect((await child.exit).signal).toBe('SIGKILL');
  }

  /** Sends SIGKILL at once, without waiting (from a synchronous callback, e.g. a receiver mid-request). */
  kill9Now(name: ServiceName): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    const child = this.running.get(name)!;
    child.child.kill('SIGKILL');
    return child.exit;
  }

  output(name: ServiceName): string {
    return this.running.get(name)?.output() ?? '';
  }

  /** For afterAll: whatever still runs is killed. */
  stopAll(): void {
    for (const child of this.running.values()) child.kill();
  }
}
