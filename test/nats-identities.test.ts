import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Bus, inboxPrefix, natsPasswordVar, WorkQueue } from '@cairn/bus';
import { type AnyEvent } from '@cairn/events';
import type { RunningService } from '@cairn/runtime';
import { createSandbox, freePort, waitFor, type Sandbox, sampleEvent } from '@cairn/testing';
import { SERVICE_NAMES, type ServiceName } from '../packages/config/src/index.js';
import {
  CHART_STREAM_NAMES,
  NATS_AUTH_FILE,
  renderChartNatsAuthorization,
} from '../tools/dev/src/nats-authorization.js';
import { startFleetService } from './support/stack.js';

// NATS identities (docs/decisions/0029-fleet-identities.md): a private nats-server runs the chart's own authorization
// file, so what is proved here is what a cluster running that file enforces.
// A letter first, as the chart makes them: nats-server reads a $VARIABLE's value as a config token, and a hex string
// such as "2e71…" would parse as a number (the server then refuses its configuration).
const passwords = Object.fromEntries(
  SERVICE_NAMES.map((name) => [name, `p${randomBytes(12).toString('hex')}`]),
) as Record<ServiceName, string>;
let server: ChildProcess;
let dir: string;
let url: string;
const buses: Bus[] = [];

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

async function busAs(service: ServiceName, password = passwords[service]): Promise<Bus> {
  const bus = await Bus.connect({
    url,
    ...CHART_STREAM_NAMES,
    name: `test-${service}`,
    user: `cairn-${service}`,
    password,
    inboxPrefix: inboxPrefix(service),
  });
  buses.push(bus);
  return bus;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cairn-nats-auth-'));
  const port = await freePort();
  url = `nats://127.0.0.1:${port}`;
  const conf = join(dir, 'nats.conf');
  await writeFile(
    conf,
    `listen: 127.0.0.1:${port}\njetstream { store_dir: "${join(dir, 'js')}" }\n${await readFile(NATS_AUTH_FILE, 'utf8')}`,
  );
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH };
  for (const name of SERVICE_NAMES) env[natsPasswordVar(name)] = passwords[name];
  server = spawn('nats-server', ['-c', conf], { stdio: 'ignore', env });
  await waitFor(`nats-server on ${port}`, () => listening(port), 15_000, 50);
}, 30_000);

afterAll(async () => {
  for (const bus of buses) await bus.close().catch(() => undefined); // some tests closed theirs already
  if (server.exitCode === null && server.signalCode === null) {
    server.kill('SIGKILL');
    await once(server, 'exit');
  }
  await rm(dir, { recursive: true, force: true });
});

describe('NATS identities (the chart authorization file)', () => {
  it('is the rendering of packages/bus/src/permissions.ts (regenerate with pnpm gen:nats-auth)', async () => {
    expect(await readFile(NATS_AUTH_FILE, 'utf8')).toBe(renderChartNatsAuthorization());
  });

  it('refuses a connection without credentials, or with another password', async () => {
    await expect(Bus.connect({ url, ...CHART_STREAM_NAMES, name: 'anonymous' })).rejects.toThrow(/Authorization/i);
    await expect(busAs('signer', passwords.gateway)).rejects.toThrow(/Authorization/i);
  });

  it("a service publishes its own events, and cannot publish another service's (the stream never holds the forgery)", async () => {
    const signer = await busAs('signer');
    const gateway = await busAs('gateway');
    const signed = sampleEvent('asset.signed', 'ten_identity', { asset_id: 'ast_real' });
    await expect(signer.publish(signed)).resolves.toMatchObject({ duplicate: false });
    const forged = sampleEvent('certificate.revoked', 'ten_identity', { reason: 'forged' });
    await expect(gateway.publish(forged)).rejects.toThrow(/Permissions Violation/i);
    // Tenant facts are the tenant service's (docs/decisions/0037-tenant-service.md): the gateway may no longer publish
    // them, it may.
    await expect(gateway.publish(sampleEvent('key.created', 'ten_identity', {}))).rejects.toThrow(
      /Permissions Violation/i,
    );
    const tenant = await busAs('tenant');
    await expect(tenant.publish(sampleEvent('key.created', 'ten_identity', {}))).resolves.toMatchObject({
      duplicate: false,
    });
    const info = await signer.jsm.streams.info(CHART_STREAM_NAMES.stream);
    expect(info.state.messages).toBe(2);
  });

  it("a service cannot listen on another service's inbox, nor delete the event stream", async () => {
    const webhook = await busAs('webhook');
    const denied = new Promise<Error>((resolve) => {
      const sub = webhook.nc.subscribe(`${inboxPrefix('signer')}.>`, {
        callback: (error) => {
          if (error) resolve(error);
        },
      });
      void sub.closed.catch((error: unknown) => resolve(error as Error));
    });
    await webhook.nc.flush();
    expect(String(await denied)).toMatch(/Permissions Violation/i);
    await expect(webhook.jsm.streams.delete(CHART_STREAM_NAMES.stream)).rejects.toThrow();
  });

  it("the signer's work queue and durable consumers work under these permissions", async () => {
    const signer = await busAs('signer');
    const queue = await WorkQueue.open<{ n: number }>(signer, 'sign');
    await expect(queue.enqueue({ n: 1 }, `job_${randomBytes(4).toString('hex')}`)).resolves.toBeUndefined();
    const audit = await busAs('audit');
    const seen: AnyEvent[] = [];
    const consumer = await audit.consume({
      durable: 'identity-test',
      types: 'all',
      handler: async (event) => void seen.push(event),
    });
    try {
      await waitFor('audit reads the stream', async () => seen.length >= 2, 10_000, 50);
      expect(seen.map((e) => e.type).sort()).toEqual(['asset.signed', 'key.created']);
    } finally {
      await consumer.stop();
    }
  });

  describe('a real service', () => {
    let sandbox: Sandbox;
    let running: RunningService | undefined;
    beforeAll(async () => {
      sandbox = await createSandbox();
    });
    afterAll(async () => {
      await running?.stop();
      await sandbox.dispose();
    });

    it('starts with its own NATS identity (stream limits and consumers set up under its permissions)', async () => {
      running = await startFleetService('webhook', {
        ...sandbox.env,
        NATS_URL: url,
        ...CHART_STREAM_NAMES_ENV,
        NATS_USER: 'cairn-webhook',
        NATS_PASSWORD: passwords.webhook,
      });
      const ready = await fetch(`http://127.0.0.1:${running.opsPort}/readyz`);
      expect(await ready.json()).toMatchObject({ status: 'ready', checks: { nats: 'ok' } });
      // The stream, made earlier without limits, now has the service's NATS_STREAM_MAX_BYTES: the update is
      // within its permissions.
      const info = await buses[0]!.jsm.streams.info(CHART_STREAM_NAMES.stream);
      expect(info.config.max_bytes).toBe(Number(sandbox.env.NATS_STREAM_MAX_BYTES));
    }, 30_000);
  });
});

const CHART_STREAM_NAMES_ENV = {
  NATS_STREAM: CHART_STREAM_NAMES.stream,
  NATS_SUBJECT_PREFIX: CHART_STREAM_NAMES.subjectPrefix,
};
