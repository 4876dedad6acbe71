/**
 * Chaos: billing killed with SIGKILL in the middle of a stream of signs, then started again.
 * Every sign a client got 200 for is metered exactly once, whether billing died before its reserve, between
 * its reserve and its commit, or during the commit. The client does what the API tells it: a 503 is retried
 * with the same Idempotency-Key. Billing runs as its own process; the rest of the fleet in this process.
 */
import { describe, expect, it } from '@jest/globals';
import { waitFor } from '@cairn/testing';
import {
  chaosFleetForFile,
  killAndRestart,
  retryUntilSigned,
  signStreamWith,
  type SignOutcome,
} from './support/chaos.js';

const STREAM = 16;
/**
 * How long billing stays down: longer than a call's whole retry budget (deadline 10 s), as when a pod takes its
 * time to come back, so a commit due meanwhile is lost for good on the gateway's side, not just delayed.
 */
const DOWN_MS = 12_000;
// growth: units above the quota are billed, never refused, so every sign here is metered.
const fleet = chaosFleetForFile(
  ['watermark', 'signer', 'gateway'],
  ['billing'],
  { SIGN_CONCURRENCY_PER_TENANT: '100' },
  'growth',
);

/** Retries a sign that did not answer 200 with its own Idempotency-Key, as a client should, until it does. */
function untilSigned(first: SignOutcome): Promise<SignOutcome> {
  return retryUntilSigned(
    fleet.stack,
    fleet.tenant.api_key,
    first,
    (outcome) => {
      // Billing down is a clean 503 with a problem (never a 500); a retry that finds its first attempt still
      // running (waiting on billing) is told so (409 in_progress, Retry-After). Anything else is a bug.
      expect([503, 409]).toContain(outcome.status);
      expect(outcome.code).toMatch(outcome.status === 409 ? /^cairn\.idempotency\.in_progress$/ : /^cairn\./);
    },
    20,
  );
}

describe('kill -9 billing in the middle of a stream of signs', () => {
  it('meters every sign that answered 200 exactly once: /v1/usage and billing rows agree with the assets', async () => {
    const outcomes = await signStreamWith(fleet.stack, fleet.tenant.api_key, {
      count: STREAM,
      disruptAfter: 4,
      disrupt: killAndRestart(fleet.processes, 'billing', DOWN_MS),
    });
    const first = outcomes.filter((o) => o.status !== 200).map((o) => `${o.status} ${o.code ?? ''}`);
    const settled = await Promise.all(outcomes.map(untilSigned));
    expect(settled.map((o) => o.status)).toEqual(settled.map(() => 200));
    const assets = new Set(settled.map((o) => o.asset_id!));
    // One asset per Idempotency-Key: a retry replayed the recorded sign or ran the one that never happened.
    expect(assets.size).toBe(STREAM);

    const usage = async () => {
      const res = await fleet.stack.request('/v1/usage', { key: fleet.tenant.api_key });
      if (res.status !== 200) return undefined; // billing still starting
      return ((await res.json()) as { meters: Record<string, { used: number }> }).meters.image_sign?.used ?? 0;
    };
    // A commit billing could not take while it was down comes from asset.signed once it is back.
    // (A wait that runs out leaves the assertion below to say how many were metered.)
    await waitFor('every sign metered', async () => ((await usage()) ?? 0) >= STREAM, 60_000, 250).catch(() => 0);
    expect(await usage()).toBe(STREAM);
    const { rows } = await fleet.admin.query<{ status: string; n: number }>(
      "select status, count(*)::int as n from billing.reservations where tenant_id = $1 and meter = 'image_sign' group by 1",
      [fleet.tenant.tenant_id],
    );
    const byStatus = Object.fromEntries(rows.map((r) => [r.status, r.n]));
    expect(byStatus.committed).toBe(STREAM);
    // What else may exist: reservations whose reserve billing took but could not answer (the sign then failed
    // and was retried); never committed, the expiry sweep frees them.
    if (process.env.CHAOS_REPORT) console.log({ first_failures: first, reservations: byStatus });
  }, 240_000);
});
