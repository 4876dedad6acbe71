/**
 * Chaos: the anchor service killed with SIGKILL while batches are open, closing and being
 * sent, in the middle of a stream of signs, then started again. Every signed asset ends in exactly one batch
 * confirmed on chain, and no batch is sent twice: the chain holds one transaction per anchored batch, carrying
 * its root. The anchor service runs as its own process against a local hardhat node (the public chain's
 * stand-in); the rest of the fleet in this process.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type pg from 'pg';
import { freePort, startHardhat, waitFor, type HardhatNode } from '@cairn/testing';
import { killAndRestart, signStreamWith, startChaosFleet, stopChaosFleet } from './support/chaos.js';
import type { ServiceProcesses } from './support/service-processes.js';
import type { Stack } from './support/stack.js';

const STREAM = 16;
let chain: HardhatNode;
let stack: Stack;
let tenant: { tenant_id: string; api_key: string };
let admin: pg.Client;
let processes: ServiceProcesses;

beforeAll(async () => {
  chain = await startHardhat(await freePort());
  // Small batches closing fast: several are open, closed and sent while the stream runs.
  ({ stack, processes, tenant, admin } = await startChaosFleet(['watermark', 'signer', 'gateway'], ['anchor'], {
    SIGN_CONCURRENCY_PER_TENANT: '100',
    ANCHOR_RPC_URL: chain.url,
    ANCHOR_BATCH_MAX: '3',
    ANCHOR_BATCH_MAX_AGE_MS: '800',
    ANCHOR_POLL_MS: '100',
    ANCHOR_RETRY_MAX_MS: '1000',
  }));
}, 240_000);

afterAll(async () => {
  await stopChaosFleet({ processes, admin, stack });
  await chain?.stop();
});

async function rpc<T>(method: string, params: unknown[]): Promise<T> {
  const res = await fetch(chain.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return ((await res.json()) as { result: T }).result;
}

/** Every mined transaction sent from `from`, read block by block from the node. */
async function minedFrom(from: string): Promise<Array<{ hash: string; input: string }>> {
  const head = Number(await rpc<string>('eth_blockNumber', []));
  const sent: Array<{ hash: string; input: string }> = [];
  for (let n = 0; n <= head; n++) {
    const block = await rpc<{ transactions: Array<{ hash: string; from: string; input: string }> }>(
      'eth_getBlockByNumber',
      [`0x${n.toString(16)}`, true],
    );
    for (const tx of block.transactions)
      if (tx.from.toLowerCase() === from.toLowerCase()) sent.push({ hash: tx.hash, input: tx.input });
  }
  return sent;
}

describe('kill -9 the anchor service in the middle of a stream of signs', () => {
  it('anchors every signed asset in exactly one confirmed batch and sends no batch twice', async () => {
    const outcomes = await signStreamWith(stack, tenant.api_key, {
      count: STREAM,
      disruptAfter: 6,
      disrupt: killAndRestart(processes, 'anchor'),
    });
    // The anchor service is not on the sign path: a manifest it could not take is anchored from asset.signed.
    expect(outcomes.map((o) => o.status)).toEqual(outcomes.map(() => 200));
    const manifests = outcomes.map((o) => o.manifest_id!);

    const placed = await waitFor(
      'every manifest in an anchored batch',
      async () => {
        const { rows } = await admin.query<{ manifest_id: string; batches: number; anchored: number }>(
          `select l.manifest_id, count(*)::int as batches, count(*) filter (where b.status = 'anchored')::int as anchored
             from anchor.leaves l join anchor.batches b using (batch_id)
            where l.tenant_id = $1 group by 1`,
          [tenant.tenant_id],
        );
        const byManifest = new Map(rows.map((r) => [r.manifest_id, r]));
        return manifests.every((id) => byManifest.get(id)?.anchored) ? byManifest : undefined;
      },
      90_000,
      250,
    );
    for (const id of manifests) expect(placed.get(id)).toMatchObject({ batches: 1, anchored: 1 });
    expect(placed.size).toBe(STREAM);

    const { rows: batches } = await admin.query<{
      batch_id: string;
      merkle_root: string;
      tx_hash: string;
      from_address: string;
    }>("select batch_id, merkle_root, tx_hash, from_address from anchor.batches where status = 'anchored'");
    const senders = new Set(batches.map((b) => b.from_address));
    expect(senders.size).toBe(1);
    const onChain = await minedFrom([...senders][0]!);
    // One mined transaction per anchored batch, each the batch's own, carrying its root; no root twice.
    expect(onChain.map((t) => t.hash).sort()).toEqual(batches.map((b) => b.tx_hash).sort());
    expect(onChain.map((t) => t.input).sort()).toEqual(batches.map((b) => b.merkle_root).sort());
    expect(new Set(onChain.map((t) => t.input)).size).toBe(onChain.length);
    if (process.env.CHAOS_REPORT) console.log({ batches: batches.length, transactions: onChain.length });
  }, 240_000);
});
