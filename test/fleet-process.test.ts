/**
 * The local fleet as a user runs it: the launcher (tools/dev/src/fleet.ts) as a process, starting the nine
 * built bundles (services/*\/dist, which the test command builds before jest) as processes of their own,
 * against an isolated sandbox (database, NATS stream and prefix, Redis prefix) and a random port offset.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { healthV1 } from '@cairn/proto';
import { createClient } from '@cairn/rpc';
import { databaseRole, DEFAULT_GATEWAY_HTTP_PORT, DEFAULT_PORTS, SERVICE_NAMES } from '@cairn/config';
import { createSandbox, PG_ADMIN_URL, type Sandbox } from '@cairn/testing';
import { Launcher } from './support/fleet-launcher.js';
import { portFree, refused } from './support/ports.js';

function fleetPorts(offset: number): number[] {
  return [
    DEFAULT_GATEWAY_HTTP_PORT + offset,
    ...SERVICE_NAMES.flatMap((n) => [DEFAULT_PORTS[n].grpc + offset, DEFAULT_PORTS[n].ops + offset]),
  ];
}

/** An offset between 1000 and 5000 at which all nineteen ports are free right now. */
async function freeOffset(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const offset = 1000 + Math.floor(Math.random() * 4001);
    const free = await Promise.all(fleetPorts(offset).map(portFree));
    if (free.every(Boolean)) return offset;
  }
  throw new Error('no port offset between 1000 and 5000 has all the fleet ports free');
}

let sandbox: Sandbox;
let offset: number;
let launcher: Launcher;

const gateway = () => `http://127.0.0.1:${DEFAULT_GATEWAY_HTTP_PORT + offset}`;

beforeAll(async () => {
  sandbox = await createSandbox();
  offset = await freeOffset();
  const env: NodeJS.ProcessEnv = { ...process.env, ...sandbox.env, LOG_LEVEL: 'info' };
  // The launcher gives each service its own ports; jest's vm-modules flag is not for the services.
  for (const name of ['GRPC_PORT', 'OPS_PORT', 'HTTP_PORT', 'NODE_OPTIONS']) delete env[name];

  // Provisioning as `npm run up` does: the sandbox's database is there, the launcher adds one role per service.
  env.PG_ADMIN_URL = PG_ADMIN_URL;
  launcher = Launcher.spawn(['--port-offset', String(offset)], env);
  await launcher.untilReady(90);
}, 120_000);

afterAll(async () => {
  await launcher?.stop(20_000);
  await sandbox?.dispose();
}, 60_000);

describe('the local fleet launcher (tools/dev/src/fleet.ts)', () => {
  it.each(SERVICE_NAMES.map((n) => [n]))(
    'starts %s as a process and it is ready on its shifted ops port',
    async (name) => {
      const res = await fetch(`http://127.0.0.1:${DEFAULT_PORTS[name].ops + offset}/readyz`);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ status: 'ready' });
    },
  );

  it('runs every service as its own database role, each owning its schema (migrations ran as it)', async () => {
    const admin = await sandbox.adminClient();
    try {
      const owners = await admin.query<{ schema: string; owner: string }>(
        'select nspname as schema, nspowner::regrole::text as owner from pg_namespace where nspname = any($1) order by 1',
        [[...SERVICE_NAMES]],
      );
      expect(owners.rows).toEqual(
        [...SERVICE_NAMES].sort().map((name) => ({ schema: name, owner: databaseRole(name) })),
      );
    } finally {
      await admin.end();
    }
  });

  it('runs gRPC between the services as mutual TLS: a plaintext client is refused', async () => {
    expect(launcher.output()).toContain('gRPC between the services is mutual TLS');
    const health = createClient(healthV1.Health, `127.0.0.1:${DEFAULT_PORTS.billing.grpc + offset}`, {
      retries: 0,
      deadlineMs: 3000,
    });
    try {
      await expect(health.check({ service: '' })).rejects.toMatchObject({ code: 'cairn.unavailable' });
    } finally {
      health.close();
    }
  });

  it('prints the gateway URL and how to get a key', () => {
    const output = launcher.output();
    expect(output).toContain(gateway());
    expect(output).toContain('pnpm cairn admin bootstrap --name ACME');
    expect(output).toContain(`curl -X POST ${gateway()}/v1/onboard`);
  });

  it('serves the public API: self-onboarding gives a key that the API accepts', async () => {
    const onboard = await fetch(`${gateway()}/v1/onboard`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ email: 'fleet-process@example.com', tenant_name: 'Fleet Process', plan: 'free' }),
    });
    expect(onboard.status).toBe(201);
    const body = (await onboard.json()) as { api_key?: unknown };
    expect(typeof body.api_key).toBe('string');

    const recipes = await fetch(`${gateway()}/v1/recipes`, {
      headers: { authorization: `Bearer ${String(body.api_key)}` },
    });
    expect(recipes.status).toBe(200);
    const anonymous = await fetch(`${gateway()}/v1/recipes`);
    expect(anonymous.status).toBe(401);
  });

  it('drains every service on SIGINT and exits 0, leaving no service process behind', async () => {
    const ended = await launcher.interrupt(20_000);
    const output = launcher.output();
    expect({ ...ended, output: ended.code === 0 ? '' : output }).toEqual({ code: 0, signal: null, output: '' });
    expect(output).toContain('all services stopped cleanly');

    const ports = [DEFAULT_GATEWAY_HTTP_PORT + offset, ...SERVICE_NAMES.map((n) => DEFAULT_PORTS[n].ops + offset)];
    const gone = await Promise.all(ports.map(refused));
    expect(Object.fromEntries(ports.map((p, i) => [p, gone[i]]))).toEqual(
      Object.fromEntries(ports.map((p) => [p, true])),
    );
  }, 30_000);
});
