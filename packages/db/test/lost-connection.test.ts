import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'drizzle-orm';
import type pg from 'pg';
import { createSandbox, waitFor, type Sandbox } from '@cairn/testing';
import { createDb, createPool } from '../src/index.js';

// A connection cut while a client is checked out (Postgres restarting, a network cut) must not keep that client
// checked out forever: each one used to cost the pool a slot for good and made pool.end() (a service's shutdown)
// wait forever (docs/decisions/0018-bounded-shutdown.md).

let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await createSandbox();
});
afterAll(async () => {
  await sandbox.dispose();
});

/** Cuts the socket of the next client the pool hands out, before its holder sends anything. */
function cutNextCheckout(pool: pg.Pool): void {
  pool.once('acquire', (client) => {
    (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
  });
}

describe('a connection lost while checked out', () => {
  it('a transaction whose BEGIN fails gives its slot back, and the pool still ends', async () => {
    const pool = createPool(sandbox.databaseUrl, 1);
    const db = createDb(pool);
    await db.execute(sql`select 1`);
    cutNextCheckout(pool);
    await expect(db.transaction(async (tx) => tx.execute(sql`select 1`))).rejects.toThrow();
    // The one slot is free again: the next transaction gets a fresh connection instead of waiting for ever.
    const answer = await db.transaction(async (tx) => (await tx.execute<{ n: number }>(sql`select 2 as n`)).rows[0]);
    expect(answer).toEqual({ n: 2 });
    await pool.end();
  });

  it('a holder that releases after the loss does no harm (released once, by the pool)', async () => {
    const pool = createPool(sandbox.databaseUrl, 1);
    cutNextCheckout(pool);
    const client = await pool.connect();
    await expect(client.query('select 1')).rejects.toThrow();
    await waitFor('the lost client dropped from the pool', () => pool.totalCount === 0);
    expect(() => client.release()).not.toThrow();
    await pool.end();
  });
});
