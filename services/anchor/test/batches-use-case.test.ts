// The batch use cases (app/batches.ts) over an in-memory fake of their store: what asset.signed's safety net does
// when the signer's Enqueue call already put the manifest in a batch. test/anchor-api.test.ts and anchor.test.ts run
// the same paths through the real service, Postgres and a chain.
import { describe, expect, it } from '@jest/globals';
import { Batches, type BatchQueries, type EnqueueInput } from '../src/app/batches.js';
import { enqueueSigned } from '../src/events.js';
import { sampleEvent } from '@cairn/testing';

/** Leaves by tenant and manifest, as store/batches.ts keeps them; counts the enqueue transactions it runs. */
class FakeStore implements Pick<BatchQueries, 'enqueue'> {
  readonly leaves = new Map<string, string>();
  transactions = 0;

  async enqueue(input: EnqueueInput): Promise<{ batchId: string; status: 'queued'; filled: boolean }> {
    this.transactions += 1;
    const key = `${input.tenantId}/${input.manifestId}`;
    const batchId = this.leaves.get(key) ?? 'b_1';
    this.leaves.set(key, batchId);
    return { batchId, status: 'queued', filled: false };
  }
}

function batchesOver(store: FakeStore): Batches {
  const unused = () => Promise.reject(new Error('not used here'));
  return new Batches(
    {
      enqueue: (input) => store.enqueue(input),
      getBatch: unused,
      tenantHasLeafIn: unused,
      tenantLeaf: unused,
      leavesOf: unused,
    },
    1000,
  );
}

const digest = 'ab'.repeat(32);
const signed = (tenantId: string, manifestId: string) =>
  sampleEvent('asset.signed', tenantId, {
    asset_id: 'a_1',
    manifest_id: manifestId,
    anchor: true,
    manifest_digest: digest,
  });

describe('asset.signed, the safety net of the Enqueue call', () => {
  it('runs no transaction for a manifest this process enqueued already', async () => {
    const store = new FakeStore();
    const batches = batchesOver(store);
    await batches.enqueue({ tenantId: 't_1', assetId: 'a_1', manifestId: 'm_1', manifestDigest: digest });
    await enqueueSigned(batches)(signed('t_1', 'm_1'));
    expect(store.transactions).toBe(1);
    expect([...store.leaves.keys()]).toEqual(['t_1/m_1']);
  });

  it('enqueues a manifest no call to this process enqueued (the anchor service was down, or another replica took it)', async () => {
    const store = new FakeStore();
    const batches = batchesOver(store);
    await batches.enqueue({ tenantId: 't_1', assetId: 'a_1', manifestId: 'm_1', manifestDigest: digest });
    await enqueueSigned(batches)(signed('t_1', 'm_2'));
    // The same manifest id under another tenant is another leaf.
    await enqueueSigned(batches)(signed('t_2', 'm_1'));
    expect(store.transactions).toBe(3);
    expect([...store.leaves.keys()]).toEqual(['t_1/m_1', 't_1/m_2', 't_2/m_1']);
  });
});
