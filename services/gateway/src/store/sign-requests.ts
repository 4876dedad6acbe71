import { randomUUID } from 'node:crypto';
import { and, eq, sql, type SQL } from 'drizzle-orm';
import { withTenant, type Database } from '@cairn/db';
import { CairnError } from '@cairn/errors';
import { newId } from '@cairn/ids';
import type { SignAnswer, SignClaim, SignRequests } from '../app/ports.js';
import { signRequests } from '../db/schema.js';

export type { SignAnswer, SignClaim } from '../app/ports.js';

/**
 * How long a claim stays live without being finished by default (SIGN_CLAIM_LEASE_SECONDS): longer than the
 * sign's own 120 s deadline plus the time to record its answer, so only a claim whose gateway died (or lost the
 * database) is ever taken over.
 */
export const SIGN_CLAIM_LEASE_SECONDS = 180;

/** What a duplicate is told to wait before retrying: a sign usually ends within seconds. */
const BUSY_RETRY_AFTER_SECONDS = 2;

/**
 * Exactly-once signing per (tenant, Idempotency-Key) as a row state machine, never a transaction held across
 * the sign: `claim` inserts an `in_progress` row with a lease and the asset id the sign will use, in one short
 * transaction; the sign runs with no connection held; `finish` records the answer (`done`) in a second one.
 * `abandon` drops the row when no sign of that asset id can have been recorded (the signer was not asked, or
 * refused), so the client may retry with the same key, or another body; `release` lets the lease lapse at once
 * but keeps the row when the outcome is unknown (the signer may have recorded it), so the retry signs under the
 * same asset id and the signer answers the recorded sign instead of signing twice. A claim whose lease ran out
 * (its gateway died mid-sign) is taken over the same way by the next request with the same key and body.
 * Leases are on the database's clock.
 */
export class SignRequestStore implements SignRequests {
  constructor(
    private readonly db: Database,
    private readonly leaseSeconds: number = SIGN_CLAIM_LEASE_SECONDS,
  ) {}

  async claim(tenantId: string, idempotencyKey: string, requestHash: string): Promise<SignClaim> {
    const claimId = randomUUID();
    const lease = sql`now() + make_interval(secs => ${this.leaseSeconds})`;
    const assetId = newId('asset');
    return withTenant(this.db, tenantId, async (tx) => {
      const inserted = await tx
        .insert(signRequests)
        .values({
          tenantId,
          idempotencyKey,
          requestHash,
          assetId,
          httpStatus: 0,
          response: {},
          state: 'in_progress',
          claimId,
          leaseExpiresAt: lease,
        })
        .onConflictDoNothing()
        .returning({ key: signRequests.idempotencyKey });
      if (inserted.length > 0) return { kind: 'run', claimId, assetId, takenOver: false } as const;
      const [previous] = await tx
        .select({
          requestHash: signRequests.requestHash,
          state: signRequests.state,
          claimId: signRequests.claimId,
          assetId: signRequests.assetId,
          httpStatus: signRequests.httpStatus,
          response: signRequests.response,
          leaseSecondsLeft: sql<number>`greatest(0, extract(epoch from ${signRequests.leaseExpiresAt} - now()))::float8`,
        })
        .from(signRequests)
        .where(and(eq(signRequests.tenantId, tenantId), eq(signRequests.idempotencyKey, idempotencyKey)));
      // Dropped by an abandon between our insert and this read: the client may simply retry.
      if (!previous) return { kind: 'busy', retryAfterSeconds: 1 } as const;
      if (previous.requestHash !== requestHash)
        throw new CairnError(
          'cairn.sign.idempotency_conflict',
          'This Idempotency-Key was used with a different asset, recipe or metadata.',
        );
      if (previous.state === 'done') {
        return {
          kind: 'replay',
          answer: {
            assetId: previous.assetId,
            httpStatus: previous.httpStatus,
            body: previous.response as Record<string, unknown>,
          },
        } as const;
      }
      if (previous.leaseSecondsLeft > 0) {
        return {
          kind: 'busy',
          retryAfterSeconds: Math.max(1, Math.min(BUSY_RETRY_AFTER_SECONDS, Math.ceil(previous.leaseSecondsLeft))),
        } as const;
      }
      // The lease ran out: take the claim over, with its asset id, unless another request took it over first
      // (then it is busy). (A claim written before asset ids were recorded with it has none: a new one then.)
      const taken = await tx
        .update(signRequests)
        .set({
          claimId,
          leaseExpiresAt: lease,
          assetId: sql`coalesce(nullif(${signRequests.assetId}, ''), ${assetId})`,
        })
        .where(
          and(
            eq(signRequests.tenantId, tenantId),
            eq(signRequests.idempotencyKey, idempotencyKey),
            eq(signRequests.state, 'in_progress'),
            sql`${signRequests.leaseExpiresAt} <= now()`,
          ),
        )
        .returning({ assetId: signRequests.assetId });
      return taken[0]
        ? ({ kind: 'run', claimId, assetId: taken[0].assetId, takenOver: true } as const)
        : ({ kind: 'busy', retryAfterSeconds: BUSY_RETRY_AFTER_SECONDS } as const);
    });
  }

  /**
   * Records the answer of the claim's sign. False when the claim was lost meanwhile (its lease ran out and
   * another request took it over): that request's answer is the one kept.
   */
  async finish(tenantId: string, idempotencyKey: string, claimId: string, answer: SignAnswer): Promise<boolean> {
    return withTenant(this.db, tenantId, async (tx) => {
      const done = await tx
        .update(signRequests)
        .set({
          state: 'done',
          assetId: answer.assetId,
          httpStatus: answer.httpStatus,
          response: answer.body,
          claimId: null,
          leaseExpiresAt: null,
        })
        .where(
          and(
            eq(signRequests.tenantId, tenantId),
            eq(signRequests.idempotencyKey, idempotencyKey),
            eq(signRequests.claimId, claimId),
          ),
        )
        .returning({ key: signRequests.idempotencyKey });
      return done.length > 0;
    });
  }

  /**
   * Ends the claim of a sign whose outcome is unknown (the signer may have recorded it) without forgetting it:
   * the lease lapses now, so the next request with the same key and body takes it over at once, under the same
   * asset id.
   */
  async release(tenantId: string, idempotencyKey: string, claimId: string): Promise<void> {
    await withTenant(this.db, tenantId, (tx) =>
      tx
        .update(signRequests)
        .set({ leaseExpiresAt: sql`now()` })
        .where(stillClaimed(tenantId, idempotencyKey, claimId)),
    );
  }

  /** Drops the claim of a sign that certainly recorded nothing, so the same key may be sent again. */
  async abandon(tenantId: string, idempotencyKey: string, claimId: string): Promise<void> {
    await withTenant(this.db, tenantId, (tx) =>
      tx.delete(signRequests).where(stillClaimed(tenantId, idempotencyKey, claimId)),
    );
  }
}

/** The row of a sign still in progress under this claim (not taken over, not finished). */
function stillClaimed(tenantId: string, idempotencyKey: string, claimId: string): SQL | undefined {
  return and(
    eq(signRequests.tenantId, tenantId),
    eq(signRequests.idempotencyKey, idempotencyKey),
    eq(signRequests.claimId, claimId),
    eq(signRequests.state, 'in_progress'),
  );
}
