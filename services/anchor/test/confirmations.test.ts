import { describe, expect, it } from '@jest/globals';
import { newId } from '@cairn/ids';
import { commonV1 } from '@cairn/proto';
import { waitFor } from '@cairn/testing';
import { anchorFleetFor, batchIn, manifestOf } from './support/anchor-fleet.js';

const fleet = anchorFleetFor({
  ANCHOR_BATCH_MAX_AGE_MS: '200',
  ANCHOR_POLL_MS: '100',
  ANCHOR_CONFIRMATIONS: '3',
});

const watched = (batchId: string) => async () =>
  (
    await fleet.admin.query<{ status: string; confirmations: number; block_number: string | null }>(
      'select status, confirmations, block_number from anchor.batches where batch_id = $1',
      [batchId],
    )
  ).rows[0];

/** The anchor.confirmed events the outbox holds for the batch. */
const confirmedEvents = async (batchId: string) =>
  (
    await fleet.admin.query(
      `select 1 from anchor.outbox where envelope->>'type' = 'anchor.confirmed' and envelope->'data'->>'batch_id' = $1`,
      [batchId],
    )
  ).rowCount;

describe('ANCHOR_CONFIRMATIONS = 3', () => {
  it('keeps a mined batch pending until two more blocks are on it, then anchors it', async () => {
    const item = manifestOf(newId('tenant'), 'c');
    const { batchId } = await fleet.anchor.enqueue(item);
    const row = watched(batchId);

    // hardhat mines the transaction at once (automine) and nothing else: one confirmation, seen by the watcher.
    const mined = await waitFor('the transaction mined and seen with 1 confirmation', async () => {
      const r = await row();
      return r?.status === 'pending' && r.confirmations === 1 ? r : undefined;
    });
    expect(mined.block_number).not.toBeNull();
    expect((await fleet.anchor.getBatch({ batchId })).batch?.status).toBe(commonV1.AnchorBatchState.PENDING);
    expect(
      await fleet.anchor.checkAnchor({ assetId: item.assetId, manifestDigest: item.manifestDigest }),
    ).toMatchObject({
      status: commonV1.AnchorBatchState.PENDING,
      match: false,
    });
    expect(await confirmedEvents(batchId)).toBe(0);

    await fleet.chain.rpc('hardhat_mine', ['0x1']);
    const second = await waitFor('2 confirmations seen', async () => {
      const r = await row();
      return r && r.confirmations >= 2 ? r : undefined;
    });
    // Seen with 2 of 3: still pending, no event.
    expect(second).toMatchObject({ status: 'pending', confirmations: 2 });
    expect((await fleet.anchor.getBatch({ batchId })).batch?.status).toBe(commonV1.AnchorBatchState.PENDING);

    await fleet.chain.rpc('hardhat_mine', ['0x1']);
    const done = await batchIn(fleet.anchor, batchId, commonV1.AnchorBatchState.ANCHORED, 'anchored');
    expect(Number(done.blockNumber)).toBe(Number(mined.block_number));
    expect(await row()).toMatchObject({ status: 'anchored', confirmations: 3 });
    expect(await confirmedEvents(batchId)).toBe(1);
    expect(
      await fleet.anchor.checkAnchor({ assetId: item.assetId, manifestDigest: item.manifestDigest }),
    ).toMatchObject({
      status: commonV1.AnchorBatchState.ANCHORED,
      match: true,
    });
  });
});
