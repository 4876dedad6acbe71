import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'drizzle-orm';
import { randomUUID } from 'node:crypto';
import { createSandbox, sampleEvent, waitFor, writeMigrations, type Sandbox } from '@cairn/testing';
import { Outbox, startService, type RunningService } from '../src/index.js';
import { outboxTablesSql } from './service-tables.js';

let sandbox: Sandbox;
let service: RunningService;
const applied: string[] = [];

beforeAll(async () => {
  sandbox = await createSandbox();
  const migrations = await writeMigrations([outboxTablesSql('webhook')]);
  service = await startService({
    name: 'webhook',
    configShape: {},
    migrationsFolder: migrations,
    // A short ceiling keeps the test quick; the sweep backs off to it while the outbox is empty.
    env: { ...sandbox.env, OUTBOX_SWEEP_MAX_MS: '2000' },
    register: (ctx) =>
      ctx.consume(`outbox-test-${randomUUID()}`, ['asset.signed'], async (event) => void applied.push(event.event_id)),
  });
}, 60_000);

afterAll(async () => {
  await service?.stop();
  await sandbox?.dispose();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('outbox relay', () => {
  it('publishes a row committed by a writer that crashed before its flush, with no wake-up of this process', async () => {
    // The relay has found nothing for a while: its sweep is at its back-off ceiling.
    await sleep(4000);
    const { db, bus } = service.context;
    const event = sampleEvent('asset.signed', 't_outbox', {});
    // Another replica's committed row: written straight to the table, so nothing in this process knows of it.
    await db.execute(
      sql`insert into webhook.outbox (event_id, subject, envelope) values (${event.event_id}, ${bus.subject(event.type)}, ${JSON.stringify(event)}::jsonb)`,
    );
    await waitFor('the orphaned outbox row delivered', () => applied.includes(event.event_id), 30_000);
    await waitFor('the row marked sent', async () => (await service.context.outbox.pendingCount()) === 0, 30_000);
  }, 60_000);

  it('relays the events of a commit in one transaction when its writer flushes', async () => {
    const { db, bus, logger, metrics } = service.context;
    // The service's own database, its transactions counted: a relay of its own over it (the service's relay runs
    // beside it; each skips the rows the other has locked, and both publish under the event id).
    let transactions = 0;
    const counted = new Proxy(db, {
      get: (target, name, receiver) =>
        name === 'transaction'
          ? (...args: Parameters<typeof db.transaction>) => {
              transactions += 1;
              return target.transaction(...args);
            }
          : (Reflect.get(target, name, receiver) as unknown),
    });
    const outbox = new Outbox(counted, 'webhook', bus, logger, metrics);
    const events = [1, 2, 3].map(() => sampleEvent('asset.signed', 't_outbox', {}));
    await db.transaction(async (tx) => {
      for (const event of events) await outbox.enqueue(tx, event);
    });
    await outbox.flush();
    // Every event leaves, and the outbox is read once: a batch short of full took all there was to take.
    await waitFor('the flushed events delivered', () => events.every((e) => applied.includes(e.event_id)), 30_000);
    expect(transactions).toBe(1);
  }, 60_000);

  it('publishes an event whose writer committed it and never flushed', async () => {
    await sleep(4000);
    const { db, outbox } = service.context;
    const event = sampleEvent('asset.signed', 't_outbox', {});
    await db.transaction((tx) => outbox.enqueue(tx, event));
    await waitFor('the unflushed event delivered', () => applied.includes(event.event_id), 30_000);
    expect(applied.filter((id) => id === event.event_id)).toHaveLength(1);
  }, 60_000);
});
