import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { auditV1, healthV1 } from '@cairn/proto';
import { createClient } from '@cairn/rpc';
import type { RunningService } from '@cairn/runtime';
import { createSandbox, type Sandbox } from '@cairn/testing';
import { SERVICE_NAMES } from '../packages/config/src/index.js';
import { startFleetService } from './support/stack.js';

let sandbox: Sandbox;
const fleet = new Map<string, RunningService>();

beforeAll(async () => {
  sandbox = await createSandbox();
  // Sequentially: nine services migrating one database at once is what the advisory lock is for, but
  // starting them in order keeps the log readable when one fails.
  // The tenant service first: the gateway authenticates and onboards through it, billing and audit ask it for plans.
  const tenant = await startFleetService('tenant', sandbox.env);
  fleet.set('tenant', tenant);
  const env = { ...sandbox.env, TENANT_GRPC_ADDR: `127.0.0.1:${tenant.grpcPort}` };
  for (const name of SERVICE_NAMES) if (name !== 'tenant') fleet.set(name, await startFleetService(name, env));
}, 120_000);

afterAll(async () => {
  for (const service of [...fleet.values()].reverse()) await service.stop();
  await sandbox.dispose();
});

describe('the fleet', () => {
  it.each(SERVICE_NAMES.map((n) => [n]))(
    '%s answers grpc.health.v1 SERVING, for the server and its API',
    async (name) => {
      const service = fleet.get(name)!;
      const health = createClient(healthV1.Health, `127.0.0.1:${service.grpcPort}`);
      try {
        expect((await health.check({ service: '' })).status).toBe(healthV1.HealthCheckResponse_ServingStatus.SERVING);
        const apiName = `cairn.${name}.v1.`;
        const services = service.context.rpc.serviceNames.filter((s) => s.startsWith(apiName));
        // The gateway is HTTP only (docs/decisions/0037-tenant-service.md): its gRPC server carries health and nothing
        // of its own.
        if (name === 'gateway') {
          expect(services).toEqual([]);
          return;
        }
        expect(services).toHaveLength(1);
        expect((await health.check({ service: services[0]! })).status).toBe(
          healthV1.HealthCheckResponse_ServingStatus.SERVING,
        );
        await expect(health.check({ service: 'no.such.Service' })).rejects.toMatchObject({ code: 'cairn.not_found' });
      } finally {
        health.close();
      }
    },
  );

  it.each(SERVICE_NAMES.map((n) => [n]))(
    '%s is ready on /readyz with Postgres, Redis and NATS reachable, and serves /metrics',
    async (name) => {
      const ops = `http://127.0.0.1:${fleet.get(name)!.opsPort}`;
      const ready = await fetch(`${ops}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ status: 'ready', checks: { postgres: 'ok', redis: 'ok', nats: 'ok' } });
      expect((await fetch(`${ops}/healthz`)).status).toBe(200);
      const metrics = await fetch(`${ops}/metrics`);
      expect(metrics.headers.get('content-type')).toContain('text/plain');
      expect(await metrics.text()).toContain(`cairn_process_cpu_user_seconds_total{service="${name}"}`);
    },
  );

  it('carries an event from onboarding (gateway → tenant service) to the audit log through the outbox and JetStream', async () => {
    const gateway = `http://127.0.0.1:${fleet.get('gateway')!.endpoints.http}`;
    const res = await fetch(`${gateway}/v1/onboard`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID(), 'user-agent': 'fleet-test/1' },
      body: JSON.stringify({ email: 'fleet@example.com', tenant_name: 'Fleet', plan: 'free' }),
    });
    expect(res.status).toBe(201);
    const { tenant_id: tenantId } = (await res.json()) as { tenant_id: string };
    const audit = createClient(auditV1.AuditService, `127.0.0.1:${fleet.get('audit')!.grpcPort}`);
    try {
      const deadline = Date.now() + 10_000;
      let types: string[] = [];
      while (Date.now() < deadline) {
        types = (await audit.listEntries({ tenantId, limit: 10 })).entries.map((e) => e.eventType).sort();
        if (types.length >= 2) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(types).toEqual(['key.created', 'tenant.created']);
      // The relay marked what it sent: nothing is left to publish again.
      expect(await fleet.get('tenant')!.context.outbox.pendingCount()).toBe(0);
    } finally {
      audit.close();
    }
  });

  it('stops serving when drained: health goes NOT_SERVING before the port closes', async () => {
    const webhook = fleet.get('webhook')!;
    const health = createClient(healthV1.Health, `127.0.0.1:${webhook.grpcPort}`, { retries: 0, deadlineMs: 2000 });
    const statuses: number[] = [];
    const watch = (async () => {
      try {
        for await (const update of health.watch({ service: '' })) statuses.push(update.status);
      } catch {
        // The stream ends when the server shuts down.
      }
    })();
    while (statuses.length === 0) await new Promise((r) => setTimeout(r, 10));
    await webhook.stop();
    fleet.delete('webhook');
    await watch;
    health.close();
    expect(statuses[0]).toBe(healthV1.HealthCheckResponse_ServingStatus.SERVING);
    expect(statuses).toContain(healthV1.HealthCheckResponse_ServingStatus.NOT_SERVING);
  });
});
