import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'drizzle-orm';
import {
  createSandbox,
  databaseUrl,
  PG_ADMIN_URL,
  sampleEvent,
  waitFor,
  writeMigrations,
  type Sandbox,
} from '@cairn/testing';
import { startService } from '../src/index.js';

let sandbox: Sandbox;
let migrationsFolder: string;
/** Just what a consumer needs: the service's processed_events table (packages/db events.ts). */
let serviceMigrations: string;

beforeAll(async () => {
  sandbox = await createSandbox();
  migrationsFolder = await writeMigrations();
  serviceMigrations = await writeMigrations([
    'CREATE SCHEMA IF NOT EXISTS "webhook";\n--> statement-breakpoint\n' +
      'CREATE TABLE "webhook"."processed_events" ("consumer" text NOT NULL, "event_id" text NOT NULL, ' +
      '"processed_at" timestamptz DEFAULT now() NOT NULL, PRIMARY KEY ("consumer", "event_id"));\n',
  ]);
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

  it('stops past the grace with a handler stuck in the database: the event is handed back, its session cut, and the next instance applies it', async () => {
    // A handler waiting on Postgres for good (a lock, a runaway query): its transaction holds the event's dedupe
    // row. Before the fence the stop waited for its pool connection forever, and had it not, the open transaction
    // would have blocked the next instance's claim of the same event until the ack wait brought it back.
    let entered!: () => void;
    const stuckIn = new Promise<void>((resolve) => (entered = resolve));
    const env = { ...sandbox.env, SHUTDOWN_GRACE_MS: '300' };
    const durable = 'fence-test';
    const first = await startService({
      name: 'webhook',
      configShape: {},
      migrationsFolder: serviceMigrations,
      env,
      register: (ctx) =>
        ctx.consume(durable, ['asset.signed'], async (_event, tx) => {
          entered();
          await tx.execute(sql`select pg_sleep(3600)`);
        }),
    });
    const event = sampleEvent('asset.signed', 't_fence', { asset_id: 'a_fence' });
    await first.context.bus.publish(event);
    await stuckIn;
    await first.stop();

    const admin = await sandbox.adminClient();
    try {
      const sleeping = await admin.query(
        "select pid from pg_stat_activity where query like '%pg_sleep(3600)%' and pid <> pg_backend_pid()",
      );
      expect(sleeping.rows).toEqual([]);
    } finally {
      await admin.end();
    }

    const applied: string[] = [];
    const second = await startService({
      name: 'webhook',
      configShape: {},
      migrationsFolder: serviceMigrations,
      env,
      register: (ctx) => ctx.consume(durable, ['asset.signed'], async (handled) => void applied.push(handled.event_id)),
    });
    try {
      // Within 20 s, where the consumer's ack wait is 30 s: only the stop's hand-back brings it this soon.
      await waitFor('the event applied by the next instance', () => applied.includes(event.event_id), 20_000);
      expect(applied).toEqual([event.event_id]);
    } finally {
      await second.stop();
    }
  }, 60_000);
});
