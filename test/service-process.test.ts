/**
 * What an operator sees of a service process: it drains on SIGTERM (health NOT_SERVING, new calls refused,
 * calls in flight finish, exit 0); a production gateway without CAIRN_DATA_KEY, or production services given a
 * public URL the outside cannot reach, refuse to start; JetStream stream settings reach the streams, or stop the
 * start-up with a reason.
 * Each service runs from its sources as a process of its own, against a sandbox of this file.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { billingV1, healthV1 } from '@cairn/proto';
import { createClient, ServingStatus } from '@cairn/rpc';
import { Bus } from '@cairn/bus';
import type { ServiceName } from '@cairn/config';
import { createSandbox, freePort, waitFor, type Sandbox } from '@cairn/testing';
import { refused } from './support/ports.js';
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
      PUBLIC_BASE_URL: 'https://cairn.example.com',
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

describe('production refuses public URLs the outside cannot reach', () => {
  const refusal = async (service: ServiceName, extra: NodeJS.ProcessEnv): Promise<string> => {
    const child = spawnService(service, {
      ...sandbox.env,
      CAIRN_ENV: 'production',
      GRPC_PORT: String(await freePort()),
      OPS_PORT: String(await freePort()),
      ...extra,
    });
    running.push(child);
    expect(await child.exit).toEqual({ code: 1, signal: null });
    return child.output();
  };

  it('the gateway: a plain-http localhost PUBLIC_BASE_URL', async () => {
    const output = await refusal('gateway', {
      PUBLIC_BASE_URL: 'http://localhost:8080',
      CAIRN_DATA_KEY: 'ab'.repeat(32),
    });
    expect(output).toMatch(
      /cairn-gateway: cannot start: Invalid configuration:\n {2}PUBLIC_BASE_URL: http:\/\/localhost:8080 must be https \(it is http\); production needs a public https URL/,
    );
  }, 60_000);

  it('the signer: a cluster-local OCSP_PUBLIC_URL (it would be written into every certificate)', async () => {
    const output = await refusal('signer', {
      PUBLIC_BASE_URL: 'https://cairn.example.com',
      OCSP_PUBLIC_URL: 'https://cairn-signer.cairn.svc.cluster.local:9471/ocsp',
    });
    expect(output).toMatch(
      /cairn-signer: cannot start: Invalid configuration:\n {2}OCSP_PUBLIC_URL: https:\/\/cairn-signer\.cairn\.svc\.cluster\.local:9471\/ocsp names cairn-signer\.cairn\.svc\.cluster\.local, a cluster-local name/,
    );
    expect(output).not.toMatch(/PUBLIC_BASE_URL:/);
  }, 60_000);

  it('the verifier: a private-address PUBLIC_BASE_URL', async () => {
    const output = await refusal('verifier', { PUBLIC_BASE_URL: 'https://10.0.0.5' });
    expect(output).toMatch(
      /cairn-verifier: cannot start: Invalid configuration:\n {2}PUBLIC_BASE_URL: https:\/\/10\.0\.0\.5 names a private address/,
    );
  }, 60_000);

  it('the audit service: AUDIT_EXPORT_DIR (the filesystem export sink)', async () => {
    const output = await refusal('audit', { AUDIT_EXPORT_DIR: '/var/cairn/audit' });
    expect(output).toMatch(
      /cairn-audit: cannot start: Invalid configuration:\n {2}AUDIT_EXPORT_DIR: the filesystem export sink is refused in production/,
    );
  }, 60_000);
});

describe('JetStream stream settings', () => {
  /** A stream and subject prefix of this test alone (streams may not share subjects). */
  const ownStream = (label: string) => ({
    NATS_STREAM: `${String(sandbox.env.NATS_STREAM)}_${label}`,
    NATS_SUBJECT_PREFIX: `${String(sandbox.env.NATS_SUBJECT_PREFIX)}_${label}`,
  });
  let admin: Bus;
  beforeAll(async () => {
    admin = await Bus.connect({
      url: String(sandbox.env.NATS_URL),
      stream: String(sandbox.env.NATS_STREAM),
      subjectPrefix: String(sandbox.env.NATS_SUBJECT_PREFIX),
    });
  });
  afterAll(async () => {
    for (const label of ['SIZED', 'R3'])
      await admin.jsm.streams.delete(ownStream(label).NATS_STREAM).catch(() => false); // R3 was never made
    await admin.close();
  });

  it('a service started with NATS_STREAM_MAX_BYTES creates its stream with that limit', async () => {
    const opsPort = await freePort();
    const billing = spawnService('billing', {
      ...sandbox.env,
      ...ownStream('SIZED'),
      NATS_STREAM_MAX_BYTES: '12345678',
      GRPC_PORT: String(await freePort()),
      OPS_PORT: String(opsPort),
      BILLING_SWEEP_INTERVAL_MS: '0',
    });
    running.push(billing);
    await ready(opsPort, billing);
    const info = await admin.jsm.streams.info(ownStream('SIZED').NATS_STREAM);
    expect(info.config).toMatchObject({ max_bytes: 12345678, num_replicas: 1, discard: 'old' });
    billing.child.kill('SIGTERM');
    expect(await billing.exit).toEqual({ code: 0, signal: null });
  }, 60_000);

  it('NATS_STREAM_REPLICAS=3 on a single NATS server stops the start-up, saying why', async () => {
    const billing = spawnService('billing', {
      ...sandbox.env,
      ...ownStream('R3'),
      NATS_STREAM_REPLICAS: '3',
      GRPC_PORT: String(await freePort()),
      OPS_PORT: String(await freePort()),
      BILLING_SWEEP_INTERVAL_MS: '0',
    });
    running.push(billing);
    expect(await billing.exit).toEqual({ code: 1, signal: null });
    expect(billing.output()).toMatch(
      /cairn-billing: cannot start: JetStream refused stream \w+_R3 with NATS_STREAM_REPLICAS=3 NATS_STREAM_MAX_BYTES=67108864: replicas > 1 not supported in non-clustered mode \(NATS_STREAM_REPLICAS=3 needs a clustered JetStream of at least 3 servers; set 1 on a single server\)/,
    );
    expect(billing.output()).not.toMatch(/Cannot reach NATS/);
  }, 60_000);
});
