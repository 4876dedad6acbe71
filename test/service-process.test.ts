/**
 * What an operator sees of a service process: it drains on SIGTERM (health NOT_SERVING, new calls refused,
 * calls in flight finish, exit 0), and a production gateway without CAIRN_DATA_KEY refuses to start.
 * Each service runs from its sources as a process of its own, against a sandbox of this file.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { connect } from 'node:net';
import { billingV1, healthV1 } from '@cairn/proto';
import { createClient, ServingStatus } from '@cairn/rpc';
import { createSandbox, freePort, waitFor, type Sandbox } from '@cairn/testing';
import { spawnService, type ServiceProcess } from './support/process.js';

let sandbox: Sandbox;
const running: ServiceProcess[] = [];

beforeAll(async () => {
  sandbox = await createSandbox({ LOG_LEVEL: 'info' });
});
afterEach(() => {
  for (const p of running.splice(0)) p.kill();
});
afterAll(() => sandbox?.dispose());

/** True when nothing accepts connections on the port any more. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

async function ready(opsPort: number, service: ServiceProcess): Promise<void> {
  await waitFor(
    `the service ready on :${opsPort}; output:\n${service.output()}`,
    async () => (await fetch(`http://127.0.0.1:${opsPort}/readyz`).catch(() => undefined))?.status === 200, // not listening yet
    60_000,
    200,
  );
}

describe('a service process on SIGTERM', () => {
  it('turns NOT_SERVING, refuses new calls, lets the call in flight finish, then exits 0', async () => {
    const grpcPort = await freePort();
    const opsPort = await freePort();
    const billing = spawnService('billing', {
      ...sandbox.env,
      GRPC_PORT: String(grpcPort),
      OPS_PORT: String(opsPort),
      // Longer than the call is held below: the drain must wait for it, not cut it at the grace period.
      SHUTDOWN_GRACE_MS: '60000',
      BILLING_SWEEP_INTERVAL_MS: '0',
    });
    running.push(billing);
    await ready(opsPort, billing);

    const address = `127.0.0.1:${grpcPort}`;
    const client = createClient(billingV1.BillingService, address, { retries: 0, deadlineMs: 60_000 });
    const health = createClient(healthV1.Health, address);
    // Two superuser connections: one holds a lock, the other watches (activity statistics are a snapshot per
    // transaction, so the holder itself would never see the call arrive).
    const [locker, admin] = await Promise.all([sandbox.adminClient(), sandbox.adminClient()]);
    try {
      const statuses = health.watch({ service: '' })[Symbol.asyncIterator]();
      expect((await statuses.next()).value).toMatchObject({ status: ServingStatus.SERVING });

      // A call made slow on purpose: it waits on a lock this test holds on the table it reads.
      await locker.query('begin');
      await locker.query('lock table billing.counters in access exclusive mode');
      const inFlight = client.getUsage({ tenantId: 't_01JDRAINDRAINDRAINDRAINDRA', plan: 'developer' });
      await waitFor('the call waiting on the lock', async () => {
        const { rows } = await admin.query<{ n: number }>(
          "select count(*)::int as n from pg_stat_activity where datname = $1 and wait_event_type = 'Lock' and query ilike '%counters%'",
          [sandbox.databaseName],
        );
        return rows[0]!.n > 0;
      });

      billing.child.kill('SIGTERM');
      expect((await statuses.next()).value).toMatchObject({ status: ServingStatus.NOT_SERVING });
      // ...and the watch ends: an open watcher must not hold the drain (which waits for every open call).
      expect(await statuses.next()).toMatchObject({ done: true });
      const readyz = await fetch(`http://127.0.0.1:${opsPort}/readyz`);
      expect(readyz.status).toBe(503);
      expect(await readyz.json()).toMatchObject({ status: 'not_ready', checks: { lifecycle: 'draining' } });

      // New calls: the listener is closed, so a new caller is refused at once (UNAVAILABLE, not queued).
      await waitFor('the gRPC listener closed', () => refused(grpcPort));
      const late = createClient(billingV1.BillingService, address, { retries: 0 });
      await expect(
        late.getUsage({ tenantId: 't_01JDRAINDRAINDRAINDRAINDRA', plan: 'developer' }),
      ).rejects.toMatchObject({ code: 'cairn.unavailable' });
      late.close();
      expect(billing.child.exitCode).toBeNull();

      // Let the call in flight go: it answers normally, and only then does the process exit, with 0.
      await locker.query('commit');
      const usage = await inFlight;
      expect(usage.meters.map((m) => m.meter)).toContain('image_sign');
      expect(await billing.exit).toEqual({ code: 0, signal: null });
      expect(billing.output()).toContain('"msg":"stopped"');
    } finally {
      await Promise.all([locker.end(), admin.end()]);
      client.close();
      health.close();
    }
  }, 120_000);
});

describe('a production gateway', () => {
  const production = async (extra: NodeJS.ProcessEnv): Promise<{ env: NodeJS.ProcessEnv; opsPort: number }> => {
    const opsPort = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...sandbox.env,
      CAIRN_ENV: 'production',
      GRPC_PORT: String(await freePort()),
      OPS_PORT: String(opsPort),
      HTTP_PORT: String(await freePort()),
      // Everything else production asks for is given, so the data key is the only thing missing.
      PAYMENT_PROCESSOR_SECRET_KEY: 'sk_test_cairn_process_test',
      ...extra,
    };
    delete env.CAIRN_DATA_KEY;
    return { env: { ...env, ...extra }, opsPort };
  };

  it('refuses to start without CAIRN_DATA_KEY, saying so, and exits 1', async () => {
    const { env } = await production({});
    const gateway = spawnService('gateway', env);
    running.push(gateway);
    const exit = await gateway.exit;
    expect(exit).toEqual({ code: 1, signal: null });
    expect(gateway.output()).toMatch(/cairn-gateway: cannot start: CAIRN_DATA_KEY is required in production/);
  }, 60_000);

  it('starts with one (the refusal above is about the key, nothing else)', async () => {
    const { env, opsPort } = await production({ CAIRN_DATA_KEY: 'ab'.repeat(32) });
    const gateway = spawnService('gateway', env);
    running.push(gateway);
    await ready(opsPort, gateway);
    gateway.child.kill('SIGTERM');
    expect(await gateway.exit).toEqual({ code: 0, signal: null });
  }, 60_000);
});
