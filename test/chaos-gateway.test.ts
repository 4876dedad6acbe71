/**
 * Chaos: the gateway killed with SIGKILL while signs are in flight, then started again. The
 * signer (in this process) finishes the signs the dead gateway had asked for; the clients, cut off, retry each
 * Idempotency-Key that got no answer, with the same file, until it answers. Before the fix a retry that took over
 * the dead gateway's claim (lease run out) signed again under a new asset id: two assets and two asset.signed for
 * one key, about one run in two. Now the claim carries the asset id, and the signer answers a recorded id with its
 * recorded sign. The gateway runs as a real process of its own, with a 2 s lease so retries take claims over soon.
 * The proof is taken from the outside: the answers, the signer's assets, the audit trail of asset.signed, billing's
 * reservations, and a verify of each asset.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { waitFor } from '@cairn/testing';
import { chaosFleetForFile, killAndRestart, retryUntilSigned, signStreamWith } from './support/chaos.js';
import { multipart } from './support/stack.js';

const STREAM = 12;

// The gateway runs as its own process and answers on the stack's own HTTP port.
const fleet = chaosFleetForFile(
  ['gateway', 'signer', 'watermark', 'verifier', 'billing', 'audit'],
  ['gateway'],
  {
    SIGN_CONCURRENCY_PER_TENANT: '100',
    // A claim of the killed gateway lapses 2 s after it was taken, so the clients' retries take it over.
    SIGN_CLAIM_LEASE_SECONDS: '2',
    DATABASE_POOL_MAX: '4',
  },
  'growth',
);

/** The signer's assets made from this upload (each key has a file of its own). */
async function assetsOfUpload(bytes: Buffer): Promise<Array<{ asset_id: string; manifest_id: string }>> {
  const { rows } = await fleet.admin.query<{ asset_id: string; manifest_id: string }>(
    'select asset_id, manifest_id from signer.assets where tenant_id = $1 and upload_sha256 = $2',
    [fleet.tenant.tenant_id, createHash('sha256').update(bytes).digest('hex')],
  );
  return rows;
}

/** asset.signed events audited for this tenant, by asset. */
async function auditedSigns(): Promise<Map<string, number>> {
  const { rows } = await fleet.admin.query<{ asset_id: string; n: number }>(
    "select data->>'asset_id' as asset_id, count(*)::int as n from audit.entries where tenant_id = $1 and event_type = 'asset.signed' group by 1",
    [fleet.tenant.tenant_id],
  );
  return new Map(rows.map((r) => [r.asset_id, r.n]));
}

async function verifyAsset(assetId: string): Promise<{ httpStatus: number; status?: string }> {
  const content = await fleet.stack.request(`/v1/assets/${assetId}/content`, { key: fleet.tenant.api_key });
  expect(content.status).toBe(200);
  const bytes = Buffer.from(await content.arrayBuffer());
  const res = await fleet.stack.request('/v1/verify', {
    method: 'POST',
    key: fleet.tenant.api_key,
    body: multipart({}, { field: 'file', bytes, name: 'signed.png' }),
  });
  return { httpStatus: res.status, ...((await res.json()) as { status?: string }) };
}

describe('kill -9 the gateway while signs are in flight', () => {
  it('every Idempotency-Key ends with exactly one asset and one asset.signed, its retry names it, billed once', async () => {
    const outcomes = await signStreamWith(fleet.stack, fleet.tenant.api_key, {
      count: STREAM,
      concurrency: 4,
      disruptAfter: 3,
      disrupt: killAndRestart(fleet.processes, 'gateway'),
    });
    const cut = outcomes.filter((o) => o.status !== 200);
    const settled = await Promise.all(
      outcomes.map((first) =>
        retryUntilSigned(fleet.stack, fleet.tenant.api_key, first, (outcome) => {
          // Cut by the kill (no answer: 0), the gateway not listening yet (0), or a retry that finds the dead
          // gateway's sign still running in the signer or its claim still live (409 in_progress). Never a 500.
          if (outcome.status !== 0)
            expect({ status: outcome.status, code: outcome.code }).toEqual({
              status: 409,
              code: 'cairn.idempotency.in_progress',
            });
        }),
      ),
    );
    expect(settled.map((o) => o.status)).toEqual(settled.map(() => 200));
    // One asset per key, and the answer names it (the signer's row for that key's file).
    for (const o of settled) {
      const made = await assetsOfUpload(o.bytes);
      expect(made).toEqual([{ asset_id: o.asset_id, manifest_id: o.manifest_id }]);
    }
    const ids = settled.map((o) => o.asset_id!);
    expect(new Set(ids).size).toBe(STREAM);
    const { rows } = await fleet.admin.query<{ n: number }>(
      'select count(*)::int as n from signer.assets where tenant_id = $1',
      [fleet.tenant.tenant_id],
    );
    expect(rows[0]!.n).toBe(STREAM);
    // Exactly one asset.signed per key: each asset audited once, and no other.
    const audited = await waitFor(
      'every sign audited',
      async () => {
        const counts = await auditedSigns();
        return ids.every((id) => counts.has(id)) ? counts : undefined;
      },
      60_000,
      250,
    );
    expect([...audited.keys()].sort()).toEqual([...ids].sort());
    for (const id of ids) expect(audited.get(id)).toBe(1);

    // Billed once per key: the dead gateway's reservations are committed from asset.signed, a takeover's spare
    // one is released (or left to the expiry sweep), never committed.
    const committed = async () => {
      const { rows: byStatus } = await fleet.admin.query<{ n: number }>(
        "select count(*)::int as n from billing.reservations where tenant_id = $1 and meter = 'image_sign' and status = 'committed'",
        [fleet.tenant.tenant_id],
      );
      return byStatus[0]!.n;
    };
    await waitFor('every sign billed', async () => (await committed()) >= STREAM, 60_000, 250).catch(() => 0);
    expect(await committed()).toBe(STREAM);
    const usage = await fleet.stack.request('/v1/usage', { key: fleet.tenant.api_key });
    expect(usage.status).toBe(200);
    expect(((await usage.json()) as { meters: Record<string, { used: number }> }).meters.image_sign?.used).toBe(STREAM);

    for (const id of ids)
      expect(await verifyAsset(id)).toMatchObject({
        httpStatus: 200,
        status: 'verified_manifest_and_watermark_match',
      });
    if (process.env.CHAOS_REPORT)
      console.log({
        cut_by_the_kill: cut.map((o) => `${o.status} ${o.code ?? ''}`),
        // Keys whose retry got the sign the dead gateway had asked for (the case that used to sign twice).
        answered_by_the_dead_gateways_sign: settled.filter((o) => o.replayed && cut.some((c) => c.key === o.key))
          .length,
      });
  }, 300_000);
});
