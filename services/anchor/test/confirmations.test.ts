import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type pg from 'pg';
import { newId } from '@cairn/ids';
import { commonV1 } from '@cairn/proto';
import { type HardhatNode, waitFor } from '@cairn/testing';
import { type AnchorFleet, startAnchorFleet, stopAnchorFleet } from './support/anchor-fleet.js';

let fleet: AnchorFleet;
let chain: HardhatNode;
let anchor: AnchorFleet['anchor'];
let admin: pg.Client;

beforeAll(async () => {
  fleet = await startAnchorFleet({
    ANCHOR_BATCH_MAX_AGE_MS: '200',
    ANCHOR_POLL_MS: '100',
    ANCHOR_CONFIRMATIONS: '3',
  });
  ({ chain, anchor, admin } = fleet);
});

afterAll(() => stopAnchorFleet(fleet));

const watched = (batchId: string) => async () =>
  (
    await admin.query<{ status: string; confirmations: number; block_number: string | null }>(
      'select status, confirmations, block_number from anchor.batches where batch_id = $1',
      [batchId],
    )
  ).rows[0];

describe('ANCHOR_CONFIRMATIONS = 3', () => {
  it('keeps a mined batch pending until two more blocks are on it, then anchors it', async () => {
    const item = {
      tenantId: newId('tenant'),
      assetId: newId('asset'),
      manifestId: newId('manifest'),
      manifestDigest: createHash('sha256').update(`c ${Math.random()}`).digest('hex'),
    };
    const { batchId } = await anchor.enqueue(item);
    const row = watched(batchId);

    // hardhat mines the transaction at once (automine) and nothing else: one confirmation, seen by the watcher.
    const mined = await waitFor('the transaction mined and seen with 1 confirmation', async () => {
      const r = await row();
      return r?.status === 'pending' && r.confirmations === 1 ? r : undefined;
    });
    expect(mined.block_number).not.toBeNull();
    expect((await anchor.getBatch({ batchId })).batch?.status).toBe(commonV1.AnchorBatchState.PENDING);
    expect(await anchor.checkAnchor({ assetId: item.assetId, manifestDigest: item.manifestDigest })).toMatchObject({
      status: commonV1.AnchorBatchState.PENDING,
      match: false,
    });
    expect(
      (
        await admin.query(
          `select 1 from anchor.outbox where envelope->>'type' = 'anchor.confirmed' and envelope->'data'->>'batch_id' = $1`,
          [batchId],
        )
      ).rowCount,
    ).toBe(0);

    await chain.rpc('hardhat_mine', ['0x1']);
    const second = await waitFor('2 confirmations seen', async () => {
      const r = await row();
      return r && r.confirmations >= 2 ? r : undefined;
    });
    // Seen with 2 of 3: still pending, no event.
    expect(second).toMatchObject({ status: 'pending', confirmations: 2 });
    expect((await anchor.getBatch({ batchId })).batch?.status).toBe(commonV1.AnchorBatchState.PENDING);

    await chain.rpc('hardhat_mine', ['0x1']);
    const done = await waitFor('anchored', async () => {
      const { batch } = await anchor.getBatch({ batchId });
      return batch?.status === commonV1.AnchorBatchState.ANCHORED ? batch : undefined;
    });
    expect(Number(done.blockNumber)).toBe(Number(mined.block_number));
    expect(await row()).toMatchObject({ status: 'anchored', confirmations: 3 });
    expect(
      (
        await admin.query(
          `select 1 from anchor.outbox where envelope->>'type' = 'anchor.confirmed' and envelope->'data'->>'batch_id' = $1`,
          [batchId],
        )
      ).rowCount,
    ).toBe(1);
    expect(await anchor.checkAnchor({ assetId: item.assetId, manifestDigest: item.manifestDigest })).toMatchObject({
      status: commonV1.AnchorBatchState.ANCHORED,
      match: true,
    });
  });
});
