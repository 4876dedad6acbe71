/**
 * A service running as several replicas behind one target (docs/decisions/0030-chart-keys-and-scale-out.md): calls
 * spread over every address, a replica killed with SIGKILL stops getting calls (only the one the reset caught fails),
 * mutual TLS still checks the service's name whatever address is dialled, and a server's max connection age makes its
 * clients reconnect without failing a call.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from '@jest/globals';
import { CairnError } from '@cairn/errors';
import { healthV1 } from '@cairn/proto';
import { makeDevPki } from '@cairn/testing';
import {
  createClient,
  HealthState,
  readTlsFiles,
  RpcServer,
  serviceTlsName,
  ServingStatus,
  type ServerOptions,
  type TlsMaterial,
} from '../src/index.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** An in-process replica counting the calls its handler answered. */
async function replica(
  options: ServerOptions = {},
  tls?: TlsMaterial,
): Promise<{ port: number; calls: () => number; server: RpcServer }> {
  let calls = 0;
  const server = new RpcServer(options);
  server.add(healthV1.Health, {
    check: async () => {
      calls++;
      return { status: ServingStatus.SERVING };
    },
    watch: new HealthState().impl().watch,
  });
  const port = await server.listen('127.0.0.1', 0, tls);
  cleanups.push(() => server.shutdown(100));
  return { port, calls: () => calls, server };
}

/** A replica in a process of its own (fixtures/counting-server.ts), to SIGKILL. */
async function processReplica(): Promise<{ port: number; calls: () => number; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL('./fixtures/counting-server.ts', import.meta.url))],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  cleanups.push(() => void child.kill('SIGKILL'));
  const lines = createInterface({ input: child.stdout });
  let calls = 0;
  const port = await new Promise<number>((resolve) =>
    lines.on('line', (line) => {
      if (line === 'called') calls++;
      else if (line.startsWith('port ')) resolve(Number(line.slice(5)));
    }),
  );
  return { port, calls: () => calls, child };
}

const target = (...ports: number[]) => `ipv4:${ports.map((p) => `127.0.0.1:${p}`).join(',')}`;

async function callMany(client: { check(r: { service: string }): Promise<unknown> }, n: number): Promise<void> {
  for (let i = 0; i < n; i++) await client.check({ service: '' });
}

describe('a target with several replicas', () => {
  it('spreads calls round-robin over every address of an ipv4: list', async () => {
    const [a, b] = [await replica(), await replica()];
    const client = createClient(healthV1.Health, target(a.port, b.port));
    cleanups.push(() => client.close());
    await callMany(client, 40);
    expect(a.calls() + b.calls()).toBe(40);
    // Round-robin over two connected replicas: within a few calls of half each (the first calls may all go to the
    // replica connected first).
    expect(Math.min(a.calls(), b.calls())).toBeGreaterThanOrEqual(15);
  });

  it('sends no call to a replica SIGKILLed, every call after the one the reset caught landing on the live one', async () => {
    const victim = await processReplica();
    const survivor = await replica();
    // Health.Check is not declared idempotent: only a call that never reached a handler may be retried.
    const client = createClient(healthV1.Health, target(victim.port, survivor.port), { deadlineMs: 5000 });
    cleanups.push(() => client.close());
    await callMany(client, 20);
    expect(victim.calls()).toBeGreaterThan(0);
    expect(survivor.calls()).toBeGreaterThan(0);

    const exited = new Promise((resolve) => victim.child.once('exit', resolve));
    victim.child.kill('SIGKILL');
    await exited;
    const before = { victim: victim.calls(), survivor: survivor.calls() };
    // Straight after the kill, before the channel has noticed on its own. A call written to the dead replica's socket
    // before the channel reads its reset is cut ("Connection dropped"): the client cannot tell it from a call the
    // replica was running when it died, so a method with effects is not run again (retrySafe). Round-robin picks
    // the dead replica at most once before the reset is read, so only one of the first two calls can be that one.
    const failed: Array<{ call: number; code: string }> = [];
    for (let call = 0; call < 40; call++) {
      await client.check({ service: '' }).catch((error: unknown) => {
        failed.push({ call, code: error instanceof CairnError ? error.code : String(error) });
      });
    }
    expect(failed.length).toBeLessThanOrEqual(1);
    for (const failure of failed)
      expect(failure).toMatchObject({ call: expect.any(Number), code: 'cairn.unavailable' });
    expect(failed.every(({ call }) => call < 2)).toBe(true);
    expect({ victim: victim.calls() - before.victim, survivor: survivor.calls() - before.survivor }).toEqual({
      victim: 0,
      survivor: 40 - failed.length,
    });
  });

  it('checks the service name of mutual TLS (serverName), not the dialled address, on every replica', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cairn-rpc-replicas-pki-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const pki = await makeDevPki(dir, ['billing', 'gateway']);
    const billing = readTlsFiles(pki.billing!);
    const gateway = readTlsFiles(pki.gateway!);
    const [a, b] = [await replica({}, billing), await replica({}, billing)];

    const client = createClient(healthV1.Health, target(a.port, b.port), {
      tls: gateway,
      serverName: serviceTlsName('billing'),
    });
    cleanups.push(() => client.close());
    await callMany(client, 20);
    expect(a.calls() + b.calls()).toBe(20);
    expect(Math.min(a.calls(), b.calls())).toBeGreaterThan(0);

    // The same replicas dialled as if they were the signer: their certificate does not name it, so no call gets in.
    const impostor = createClient(healthV1.Health, target(a.port, b.port), {
      tls: gateway,
      serverName: serviceTlsName('signer'),
      retries: 0,
      deadlineMs: 3000,
    });
    cleanups.push(() => impostor.close());
    await expect(impostor.check({ service: '' })).rejects.toMatchObject({ code: 'cairn.unavailable' });
    expect(a.calls() + b.calls()).toBe(20);
  });

  it('closes connections at their max age; the client reconnects and no call fails', async () => {
    const server = await replica({ maxConnectionAgeMs: 200, maxConnectionAgeGraceMs: 1000 });
    // A TCP relay in front of the server counts the connections the client opens.
    const sockets: Socket[] = [];
    let connections = 0;
    const relay: Server = createServer((inbound) => {
      connections++;
      const upstream = connect(server.port, '127.0.0.1');
      sockets.push(inbound, upstream);
      inbound.pipe(upstream).pipe(inbound);
      const close = () => (inbound.destroy(), upstream.destroy());
      inbound.on('error', close).on('close', close);
      upstream.on('error', close).on('close', close);
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => relay.close(() => resolve()));
    });
    const relayPort = (relay.address() as { port: number }).port;
    // Not one retry: a connection closed for its age must not fail a call at all.
    const client = createClient(healthV1.Health, `127.0.0.1:${relayPort}`, { retries: 0 });
    cleanups.push(() => client.close());
    let failures = 0;
    for (let i = 0; i < 60; i++) {
      await client.check({ service: '' }).catch(() => failures++);
      await new Promise((r) => setTimeout(r, 25));
    }
    expect({ failures, answered: server.calls() }).toEqual({ failures: 0, answered: 60 });
    // About 1.5 s of calls against a 200 ms age: the client connected again and again.
    expect(connections).toBeGreaterThanOrEqual(3);
  });
});
