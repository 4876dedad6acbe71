import { and, eq } from 'drizzle-orm';
import { withTenant, type Database } from '@cairn/db';
import { CairnError } from '@cairn/errors';
import { signRequests } from '../db/schema.js';

export interface SignAnswer {
  assetId: string;
  httpStatus: number;
  body: Record<string, unknown>;
}

/**
 * Exactly-once signing per (tenant, Idempotency-Key). The key's row is inserted first, inside the
 * transaction that records the answer: a concurrent duplicate waits on it and then replays the committed
 * answer; a failed sign rolls the claim back, so the client may retry with the same key.
 */
export class SignRequestStore {
  constructor(private readonly db: Database) {}

  async once(tenantId: string, idempotencyKey: string, requestHash: string, run: () => Promise<SignAnswer>): Promise<SignAnswer & { replayed: boolean }> {
    return withTenant(this.db, tenantId, async (tx) => {
      const claimed = await tx
        .insert(signRequests)
        .values({ tenantId, idempotencyKey, requestHash, assetId: '', httpStatus: 0, response: {} })
        .onConflictDoNothing()
        .returning({ key: signRequests.idempotencyKey });
      if (claimed.length === 0) {
        const [previous] = await tx.select().from(signRequests).where(and(eq(signRequests.tenantId, tenantId), eq(signRequests.idempotencyKey, idempotencyKey)));
        if (!previous) throw new CairnError('cairn.sign.idempotency_conflict', 'This Idempotency-Key is in use by a request that did not complete; retry.');
        if (previous.requestHash !== requestHash) throw new CairnError('cairn.sign.idempotency_conflict', 'This Idempotency-Key was used with a different asset, recipe or metadata.');
        return { assetId: previous.assetId, httpStatus: previous.httpStatus, body: previous.response as Record<string, unknown>, replayed: true };
      }
      const answer = await run();
      await tx
        .update(signRequests)
        .set({ assetId: answer.assetId, httpStatus: answer.httpStatus, response: answer.body })
        .where(and(eq(signRequests.tenantId, tenantId), eq(signRequests.idempotencyKey, idempotencyKey)));
      return { ...answer, replayed: false };
    });
  }
}
