/**
 * Chaos: a service killed with SIGKILL in the middle of a stream of signs, then started again,
 * loses no event and applies none twice. The service under test runs as a real process of its own (the rest of
 * the fleet in this process); the proof is taken from the outside: the answers the clients got and the rows in
 * the audit schema.
 */
import { describe, expect, it } from '@jest/globals';
import type { ServiceName } from '@cairn/config';
import { waitFor } from '@cairn/testing';
import { chaosFleetForFile, killAndRestart, signOnce, signStreamWith, type SignOutcome } from './support/chaos.js';

const STREAM = 16;
const fleet = chaosFleetForFile(
  ['watermark', 'verifier', 'softbinding', 'gateway'],
  ['signer', 'audit'],
  { SIGN_CONCURRENCY_PER_TENANT: '100' },
  'growth',
);

/** Audit entries recorded per event id for this tenant's asset.signed events, by asset. */
async function auditedSigns(): Promise<Map<string, number>> {
  const { rows } = await fleet.admin.query<{ asset_id: string; n: number }>(
    "select data->>'asset_id' as asset_id, count(*)::int as n from audit.entries where tenant_id = $1 and event_type = 'asset.signed' group by 1",
    [fleet.tenant.tenant_id],
  );
  return new Map(rows.map((r) => [r.asset_id, r.n]));
}

/** Waits until every asset of `signed` has an audit entry; answers the entries per asset. */
function untilAudited(what: string, signed: string[]): Promise<Map<string, number>> {
  return waitFor(
    what,
    async () => {
      const counts = await auditedSigns();
      return signed.every((id) => counts.has(id)) ? counts : undefined;
    },
    60_000,
    250,
  );
}

/** Signs `STREAM` images two at a time; after the first few answers, SIGKILLs `victim` and starts it again. */
function streamWithKill(victim: ServiceName): Promise<SignOutcome[]> {
  return signStreamWith(fleet.stack, fleet.tenant.api_key, {
    count: STREAM,
    disruptAfter: 4,
    disrupt: killAndRestart(fleet.processes, victim),
  });
}

describe('kill -9 in the middle of a stream of signs', () => {
  it('audit: every signed asset ends with exactly one asset.signed audit entry; the chain has no gap', async () => {
    const outcomes = await streamWithKill('audit');
    // The audit service is not on the sign path: every sign answers 200 while it is down.
    expect(outcomes.map((o) => o.status)).toEqual(outcomes.map(() => 200));
    const signed = outcomes.map((o) => o.asset_id!);
    const audited = await untilAudited('every sign audited', signed);
    for (const id of signed) expect(audited.get(id)).toBe(1);
    const { rows } = await fleet.admin.query<{ n: number; max: number; events: number }>(
      'select count(*)::int as n, max(seq)::int as max, count(distinct event_id)::int as events from audit.entries where tenant_id = $1',
      [fleet.tenant.tenant_id],
    );
    expect(rows[0]!.max).toBe(rows[0]!.n);
    expect(rows[0]!.events).toBe(rows[0]!.n);
  }, 180_000);

  it('signer: each sign either answers 200 and is audited once, or fails with a clean 5xx-free problem; signs work again after restart', async () => {
    const outcomes = await streamWithKill('signer');
    for (const o of outcomes) {
      // A sign cut by the kill fails as "unavailable" (503 with a problem), never a 500; the client retries it.
      if (o.status !== 200)
        expect({ status: o.status, code: o.code }).toMatchObject({
          status: 503,
          code: expect.stringMatching(/^cairn\./),
        });
    }
    const signed = outcomes.filter((o) => o.status === 200).map((o) => o.asset_id!);
    expect(signed.length).toBeGreaterThan(0);
    const after = await signOnce(fleet.stack, fleet.tenant.api_key);
    expect(after.status).toBe(200);
    signed.push(after.asset_id!);
    const audited = await untilAudited('every successful sign audited', signed);
    for (const id of signed) expect(audited.get(id)).toBe(1);
    // A sign whose answer the kill cut may still have completed: then it is an asset the tenant can fetch.
    for (const id of audited.keys()) {
      const content = await fleet.stack.request(`/v1/assets/${id}/content`, { key: fleet.tenant.api_key });
      await content.arrayBuffer();
      expect(content.status).toBe(200);
    }
    if (process.env.CHAOS_REPORT) console.log(outcomes.map((o) => `${o.status} ${o.code ?? ''}`).join(', '));
  }, 240_000);
});
