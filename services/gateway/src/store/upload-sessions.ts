import { and, eq, inArray, lt, sql } from 'drizzle-orm';
import { withRlsSettings, withTenant, type Database } from '@cairn/db';
import type {
  CreatedUploadSession,
  NewUploadSession,
  OpenSessionLimits,
  UploadSessionRecords,
  UploadSessionRow,
  UploadState,
} from '../app/ports.js';
import { uploadSessions } from '../db/schema.js';

/** How long a finished session's row is kept after its expiry, so a late reuse is told "expired", not "no such upload". */
const ROW_GRACE = '1 day';

const columns = {
  uploadId: uploadSessions.uploadId,
  tenantId: uploadSessions.tenantId,
  blobKey: uploadSessions.blobKey,
  declaredSize: uploadSessions.declaredSize,
  contentType: uploadSessions.contentType,
  state: uploadSessions.state,
  size: uploadSessions.size,
  sha256: uploadSessions.sha256,
  expiresAt: uploadSessions.expiresAt,
  expired: sql<boolean>`${uploadSessions.expiresAt} <= now()`,
};

/**
 * Upload sessions as a row state machine: pending → receiving (one PUT at a time) → uploaded → used (a sign or
 * verify took it), or expired (the sweep deleted its file). Transitions are conditional updates, so two PUTs or
 * two signs racing for one session cannot both win.
 */
export class UploadSessionStore implements UploadSessionRecords {
  constructor(private readonly db: Database) {}

  /**
   * A new session, unless the tenant's open sessions (not used, not expired) would then number more than
   * `limits.maxOpen` or declare more than `limits.maxOutstandingBytes` together. Counted and inserted under a
   * per-tenant transaction lock, so concurrent creates cannot each slip under the limit.
   */
  async create(row: NewUploadSession, limits: OpenSessionLimits): Promise<CreatedUploadSession> {
    return withTenant(this.db, row.tenantId, async (tx) => {
      await tx.execute(
        sql`select pg_advisory_xact_lock(hashtextextended(${`cairn.upload-sessions:${row.tenantId}`}, 0))`,
      );
      const [usage] = await tx
        .select({
          open: sql<number>`count(*)::int`,
          outstandingBytes: sql<number>`coalesce(sum(${uploadSessions.declaredSize}), 0)::bigint`,
        })
        .from(uploadSessions)
        .where(
          and(
            eq(uploadSessions.tenantId, row.tenantId),
            inArray(uploadSessions.state, ['pending', 'receiving', 'uploaded']),
            sql`${uploadSessions.expiresAt} > now()`,
          ),
        );
      const open = Number(usage?.open ?? 0);
      const outstandingBytes = Number(usage?.outstandingBytes ?? 0);
      if (open + 1 > limits.maxOpen) return { refused: 'sessions' as const, open, outstandingBytes };
      if (outstandingBytes + row.declaredSize > limits.maxOutstandingBytes)
        return { refused: 'bytes' as const, open, outstandingBytes };
      const [created] = await tx
        .insert(uploadSessions)
        .values({
          uploadId: row.uploadId,
          tenantId: row.tenantId,
          blobKey: row.blobKey,
          filename: row.filename ?? null,
          declaredSize: row.declaredSize,
          contentType: row.contentType ?? null,
          expiresAt: sql`date_trunc('second', now()) + make_interval(secs => ${row.ttlSeconds})`,
        })
        .returning(columns);
      return { created: created as UploadSessionRow };
    });
  }

  /** The unauthenticated PUT's view: the one session its signed URL names. */
  async byId(uploadId: string): Promise<UploadSessionRow | null> {
    return withRlsSettings(this.db, { 'cairn.upload_id': uploadId }, async (tx) => {
      const [row] = await tx.select(columns).from(uploadSessions).where(eq(uploadSessions.uploadId, uploadId));
      return (row as UploadSessionRow | undefined) ?? null;
    });
  }

  /** Moves the session from one state to another if it is still in `from` and unexpired; false when it was not. */
  async transition(
    uploadId: string,
    from: UploadState[],
    to: UploadState,
    received?: { size: number; sha256: string },
  ): Promise<boolean> {
    return withRlsSettings(this.db, { 'cairn.upload_id': uploadId }, async (tx) => {
      const moved = await tx
        .update(uploadSessions)
        .set({ state: to, ...(received ? { size: received.size, sha256: received.sha256 } : {}) })
        .where(
          and(
            eq(uploadSessions.uploadId, uploadId),
            inArray(uploadSessions.state, from),
            sql`${uploadSessions.expiresAt} > now()`,
          ),
        )
        .returning({ id: uploadSessions.uploadId });
      return moved.length > 0;
    });
  }

  /** The tenant's own session (null for none, or another tenant's). */
  async forTenant(tenantId: string, uploadId: string): Promise<UploadSessionRow | null> {
    return withTenant(this.db, tenantId, async (tx) => {
      const [row] = await tx
        .select(columns)
        .from(uploadSessions)
        .where(and(eq(uploadSessions.uploadId, uploadId), eq(uploadSessions.tenantId, tenantId)));
      return (row as UploadSessionRow | undefined) ?? null;
    });
  }

  /**
   * One sweep step, as `cairn.system = 'upload-expiry'`: marks up to `batch` unused sessions past their expiry
   * expired and answers their blob keys (the caller deletes the files), and drops rows a day past expiry. A used
   * session's file is its sign's or job's to delete (a job may still be reading it), never the sweep's.
   */
  async expireDue(batch = 200): Promise<string[]> {
    return this.db.transaction(async (tx) => {
      await tx.execute(sql`select set_config('cairn.system', 'upload-expiry', true)`);
      const due = await tx
        .select({ uploadId: uploadSessions.uploadId, blobKey: uploadSessions.blobKey })
        .from(uploadSessions)
        .where(
          and(
            inArray(uploadSessions.state, ['pending', 'receiving', 'uploaded']),
            lt(uploadSessions.expiresAt, sql`now()`),
          ),
        )
        .limit(batch)
        .for('update', { skipLocked: true });
      if (due.length > 0)
        await tx
          .update(uploadSessions)
          .set({ state: 'expired' })
          .where(
            inArray(
              uploadSessions.uploadId,
              due.map((d) => d.uploadId),
            ),
          );
      await tx.delete(uploadSessions).where(lt(uploadSessions.expiresAt, sql`now() - ${ROW_GRACE}::interval`));
      return due.map((d) => d.blobKey);
    });
  }
}
