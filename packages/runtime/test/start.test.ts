import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSandbox, databaseUrl, PG_ADMIN_URL, type Sandbox } from '@cairn/testing';
import { startService } from '../src/index.js';

let sandbox: Sandbox;
let migrationsFolder: string;

beforeAll(async () => {
  sandbox = await createSandbox();
  migrationsFolder = await mkdtemp(join(tmpdir(), 'cairn-empty-mig-'));
  await mkdir(join(migrationsFolder, 'meta'));
  await writeFile(
    join(migrationsFolder, 'meta', '_journal.json'),
    JSON.stringify({ version: '7', dialect: 'postgresql', entries: [] }),
  );
});
afterAll(() => sandbox.dispose());

function start(overrides: NodeJS.ProcessEnv) {
  return startService({
    name: 'webhook',
    configShape: {},
    migrationsFolder,
    env: { ...sandbox.env, ...overrides },
    register: async () => undefined,
  });
}

describe('startService', () => {
  it.each([
    ['Postgres', { DATABASE_URL: 'postgres://cairn@127.0.0.1:1/cairn' }],
    ['Redis', { REDIS_URL: 'redis://127.0.0.1:1' }],
    ['NATS JetStream', { NATS_URL: 'nats://127.0.0.1:1' }],
  ])(
    'refuses to start with a message naming %s when it is unreachable',
    async (name, overrides) => {
      await expect(start(overrides)).rejects.toThrow(new RegExp(`Cannot reach ${name}`));
    },
    20_000,
  );

  it('refuses to start as a superuser, naming the role', async () => {
    // The admin URL is a superuser: every row-level security policy would be skipped without a sign.
    const superuser = databaseUrl(PG_ADMIN_URL, sandbox.databaseName);
    const role = decodeURIComponent(new URL(superuser).username);
    await expect(start({ DATABASE_URL: superuser })).rejects.toThrow(
      new RegExp(`database role "${role}" has SUPERUSER`),
    );
  });

  it('refuses, in production, gRPC reachable off the host without TLS and NATS off the host without credentials', async () => {
    await expect(start({ CAIRN_ENV: 'production', GRPC_HOST: '0.0.0.0' })).rejects.toThrow(
      /GRPC_TLS_CA, GRPC_TLS_CERT, GRPC_TLS_KEY: required in production when gRPC listens on 0\.0\.0\.0/,
    );
    await expect(start({ CAIRN_ENV: 'production', NATS_URL: 'nats://nats.cairn.svc:4222' })).rejects.toThrow(
      /NATS_USER and NATS_PASSWORD \(or NATS_TOKEN\): required in production/,
    );
  });

  it('refuses an incomplete or unreadable set of TLS files, naming what is wrong', async () => {
    await expect(start({ GRPC_TLS_CA: '/nonexistent/ca.crt' })).rejects.toThrow(/give all three or none/);
    await expect(
      start({
        GRPC_TLS_CA: '/nonexistent/ca.crt',
        GRPC_TLS_CERT: '/nonexistent/webhook.crt',
        GRPC_TLS_KEY: '/nonexistent/webhook.key',
      }),
    ).rejects.toThrow(/cannot read GRPC_TLS_CA \/nonexistent\/ca\.crt/);
  });

  it('reports every invalid setting at once', async () => {
    await expect(start({ CAIRN_ENV: 'staging', GRPC_PORT: 'eighty' })).rejects.toThrow(
      /CAIRN_ENV[\s\S]*GRPC_PORT|GRPC_PORT[\s\S]*CAIRN_ENV/,
    );
  });

  it('starts, reports ready, then reports draining before it stops', async () => {
    // A shutdown hook that holds the drain open until the test has looked: the window in which in-flight work
    // finishes, and in which a load balancer must already see the service as not ready.
    let entered!: () => void;
    const draining = new Promise<void>((resolve) => (entered = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const service = await startService({
      name: 'webhook',
      configShape: {},
      migrationsFolder,
      env: sandbox.env,
      register: async (ctx) =>
        ctx.onShutdown(async () => {
          entered();
          await released;
        }),
    });
    const ops = `http://127.0.0.1:${service.opsPort}`;
    const ready = await fetch(`${ops}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready' });

    const stopping = service.stop();
    await draining;
    const during = await fetch(`${ops}/readyz`);
    expect(during.status).toBe(503);
    expect(await during.json()).toEqual({
      status: 'not_ready',
      checks: { postgres: 'ok', redis: 'ok', nats: 'ok', lifecycle: 'draining' },
    });
    release();
    await stopping;
    await expect(fetch(`${ops}/readyz`)).rejects.toThrow();
  });
});
