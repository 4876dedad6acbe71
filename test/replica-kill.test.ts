/**
 * The fleet as two replicas of every service (the launcher's --replicas plan, built bundles as
 * processes of their own), callers spreading over both, while one replica of each service in turn is SIGKILLed and
 * started again under sign, verify, lookup and webhook traffic spread over both gateways. The proof comes from the
 * public API, and from the services' own tables and the audit service's own chain check where the API cannot tell.
 * The same run prints its figures as `pnpm bench:replica-kill`.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SERVICE_NAMES } from '@cairn/config';
import { ReplicaFleet } from './support/replica-fleet.js';
import { describeFigures, REPLICA_KILL_ENV, runReplicaKill, type ReplicaKillFigures } from './support/replica-kill.js';

let fleet: ReplicaFleet;
let figures: ReplicaKillFigures;

beforeAll(async () => {
  fleet = await ReplicaFleet.start(2, REPLICA_KILL_ENV);
  figures = await runReplicaKill(fleet, { minSigns: 16, downMs: 1500 });
  if (process.env.CHAOS_REPORT) console.log(describeFigures(figures));
}, 400_000);

afterAll(async () => {
  await fleet?.stop();
}, 60_000);

describe('two replicas of every service, one of each SIGKILLed in turn under traffic', () => {
  it('killed one replica of each service and started it again', () => {
    expect(figures.kills).toHaveLength(SERVICE_NAMES.length);
  });

  it('answered every call in the end: no failure that the client’s retry did not cure', () => {
    expect(figures.uncured).toEqual([]);
    expect(figures.signs.length).toBeGreaterThanOrEqual(16);
  });

  it('lost no asset and signed none twice: one asset per Idempotency-Key, each stored, downloadable and verifying', () => {
    for (const sign of figures.signs)
      expect({ key: sign.key, assets: sign.assetIds.size }).toEqual({ key: sign.key, assets: 1 });
    expect(figures.assetsStored).toBe(figures.signs.length);
    const verdicts = figures.signs.map((s) => s.verdict);
    expect(verdicts).toEqual(figures.signs.map(() => 'verified_manifest_and_watermark_match'));
    expect(figures.lookups).toBe(figures.signs.length);
  });

  it('settled every billing reservation: none left open, one sign committed per asset', () => {
    expect(figures.billing.filter((b) => b.status === 'reserved')).toEqual([]);
    const committed = figures.billing.find((b) => b.meter === 'image_sign' && b.status === 'committed');
    // Compared with the whole settlement beside it, so a miss shows how the rest ended (released, other meters).
    expect({ committed: committed?.count, settlement: figures.billing }).toEqual({
      committed: figures.assetsStored,
      settlement: figures.billing,
    });
  });

  it('delivered every webhook, an event received more than once only for an attempt beyond the first', () => {
    expect(figures.webhook.delivered).toBe(figures.webhook.deliveries);
    expect(figures.webhook.deliveries).toBe(figures.assetsStored);
    expect(figures.webhook.distinct).toBe(figures.webhook.deliveries);
    expect(figures.webhook.received - figures.webhook.distinct).toBeLessThanOrEqual(figures.webhook.extraAttempts);
  });

  it('confirmed every anchor batch, each manifest anchored once', () => {
    expect(figures.anchor.anchored).toBe(figures.anchor.batches);
    expect(figures.anchor.leaves).toBe(figures.assetsStored);
    expect(figures.anchor.distinctDigests).toBe(figures.anchor.leaves);
  });

  it('kept the tenant’s audit chain intact (the audit service’s own check)', () => {
    expect(figures.audit.intact).toBe(true);
    expect(figures.audit.entriesChecked).toBeGreaterThan(0);
  });

  it('gave every replica of every service a share of the calls and events', () => {
    for (const [name, counts] of Object.entries(figures.shares)) {
      const total = counts.reduce((a, b) => a + b, 0);
      expect({ name, replicas: counts.length, without: counts.filter((c) => c === 0).length }).toEqual({
        name,
        replicas: 2,
        without: 0,
      });
      expect(total).toBeGreaterThan(0);
    }
  });
});
