import { and, asc, desc, eq, gte, lt, lte, sql } from 'drizzle-orm';
import type { GenService } from '@bufbuild/protobuf/codegenv2';
import { withTenant, type Database } from '@cairn/db';
import { CairnError } from '@cairn/errors';
import type { auditV1 } from '@cairn/proto';
import type { ServiceImpl } from '@cairn/rpc';
import { checkpoints, entries, exportConfigs } from './db/schema.js';
import { validateSettings } from './export/settings.js';
import { windowStart } from './export/exporter.js';
import { entryHash, GENESIS_HASH } from './domain/chain.js';

type Methods = typeof auditV1.AuditService extends GenService<infer M> ? M : never;
type EntryRow = typeof entries.$inferSelect;
type ExportConfigRow = typeof exportConfigs.$inferSelect;

const MAX_LIMIT = 1000;
const VERIFY_BATCH = 1000;

function required(value: string, name: string): string {
  if (!value) throw new CairnError('cairn.validation.invalid_body', `${name} is required`);
  return value;
}

function instant(value: string, name: string): Date | undefined {
  if (!value) return undefined;
  const date = new Date(value);
  if (Number.isNaN(date.getTime()))
    throw new CairnError('cairn.validation.invalid_body', `${name} must be an ISO 8601 date-time`);
  return date;
}

/** Cursor: the chain position to continue below, opaque to clients. */
export function encodeCursor(seq: number): string {
  return Buffer.from(`s:${seq}`).toString('base64url');
}

function decodeCursor(cursor: string): number | undefined {
  if (!cursor) return undefined;
  const match = /^s:(\d{1,18})$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (!match)
    throw new CairnError(
      'cairn.validation.invalid_body',
      'cursor is not valid; pass next_cursor from the previous page',
    );
  return Number(match[1]);
}

function present(row: EntryRow): auditV1.AuditEntry {
  return {
    $typeName: 'cairn.audit.v1.AuditEntry',
    entryId: row.entryId,
    eventId: row.eventId,
    eventType: row.eventType,
    tenantId: row.tenantId,
    createdAt: row.occurredAt.toISOString(),
    recordedAt: row.recordedAt.toISOString(),
    dataJson: JSON.stringify(row.data),
    seq: BigInt(row.seq),
    prevHash: row.prevHash,
    hash: row.hash,
  };
}

export type ChainVerdict =
  | { intact: true; entriesChecked: number; headHash: string; checkpointSeq: number }
  | {
      intact: false;
      entriesChecked: number;
      firstBroken: { entryId: string; seq: number; reason: string };
      checkpointSeq: number;
    };

/**
 * Walks a tenant's chain from its start (genesis or the retention checkpoint) in seq order and recomputes
 * every hash: an edited entry fails its own hash, a deleted one leaves a seq gap / a prev_hash mismatch.
 */
export async function verifyChain(db: Database, tenantId: string): Promise<ChainVerdict> {
  return withTenant(db, tenantId, async (tx) => {
    const [checkpoint] = await tx.select().from(checkpoints).where(eq(checkpoints.tenantId, tenantId));
    let expectedSeq = (checkpoint?.seq ?? 0) + 1;
    let prevHash = checkpoint?.hash ?? GENESIS_HASH;
    const checkpointSeq = checkpoint?.seq ?? 0;
    let checked = 0;
    for (;;) {
      const batch = await tx
        .select()
        .from(entries)
        .where(and(eq(entries.tenantId, tenantId), gte(entries.seq, expectedSeq)))
        .orderBy(asc(entries.seq))
        .limit(VERIFY_BATCH);
      for (const row of batch) {
        const broken = (reason: string): ChainVerdict => ({
          intact: false,
          entriesChecked: checked,
          firstBroken: { entryId: row.entryId, seq: row.seq, reason },
          checkpointSeq,
        });
        if (row.seq !== expectedSeq) return broken(`entries ${expectedSeq}..${row.seq - 1} are missing (deleted)`);
        if (row.prevHash !== prevHash) return broken('prev_hash does not match the previous entry');
        if (entryHash(row, row.prevHash) !== row.hash)
          return broken('the entry was modified after it was recorded (hash mismatch)');
        prevHash = row.hash;
        expectedSeq++;
        checked++;
      }
      if (batch.length < VERIFY_BATCH) break;
    }
    return { intact: true, entriesChecked: checked, headHash: prevHash, checkpointSeq };
  });
}

/**
 * Retention: deletes the tenant's entries recorded more than `retentionDays` ago, oldest first, and moves the
 * checkpoint to the last one deleted so the surviving chain still verifies from there.
 */
export async function purgeExpired(
  db: Database,
  tenantId: string,
  retentionDays: number,
  now = new Date(),
): Promise<{ purged: number; checkpointSeq: number }> {
  return withTenant(db, tenantId, async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${tenantId}))`);
    const cutoff = new Date(now.getTime() - retentionDays * 86_400_000);
    const [last] = await tx
      .select({ seq: entries.seq, hash: entries.hash })
      .from(entries)
      .where(and(eq(entries.tenantId, tenantId), lt(entries.recordedAt, cutoff)))
      .orderBy(desc(entries.seq))
      .limit(1);
    const [existing] = await tx.select().from(checkpoints).where(eq(checkpoints.tenantId, tenantId));
    if (!last) return { purged: 0, checkpointSeq: existing?.seq ?? 0 };
    // Everything up to the newest expired entry goes (a prefix, so the chain has no holes).
    const deleted = await tx
      .delete(entries)
      .where(and(eq(entries.tenantId, tenantId), lte(entries.seq, last.seq)))
      .returning({ id: entries.entryId });
    await tx
      .insert(checkpoints)
      .values({ tenantId, seq: last.seq, hash: last.hash })
      .onConflictDoUpdate({ target: checkpoints.tenantId, set: { seq: last.seq, hash: last.hash, purgedAt: now } });
    return { purged: deleted.length, checkpointSeq: last.seq };
  });
}

function presentExportConfig(row: ExportConfigRow): auditV1.ExportConfig {
  return {
    $typeName: 'cairn.audit.v1.ExportConfig',
    tenantId: row.tenantId,
    sink: row.sink,
    bucket: row.bucket ?? '',
    prefix: row.prefix ?? '',
    region: row.region ?? '',
    endpoint: row.endpoint ?? '',
    roleArn: row.roleArn ?? '',
    path: row.path ?? '',
    exportedUntil: row.exportedUntil.toISOString(),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
    lastError: row.lastError ?? '',
  };
}

export interface AuditHandlerOptions {
  /** CAIRN_ENV = production: export endpoints must be https. */
  production: boolean;
  /** AUDIT_EXPORT_WINDOW_SECONDS: a new export starts with the window in progress. */
  exportWindowSeconds: number;
}

/** cairn.audit.v1.AuditService: reads one tenant's log (RLS scopes every query to that tenant). */
export function auditHandlers(
  db: Database,
  options: AuditHandlerOptions = { production: false, exportWindowSeconds: 900 },
): ServiceImpl<Methods> {
  return {
    listEntries: async (request) => {
      const tenantId = required(request.tenantId, 'tenant_id');
      const limit = Math.min(Math.max(request.limit || 100, 1), MAX_LIMIT);
      const since = instant(request.since, 'since');
      const until = instant(request.until, 'until');
      const below = decodeCursor(request.cursor);
      const rows = await withTenant(db, tenantId, (tx) =>
        tx
          .select()
          .from(entries)
          .where(
            and(
              eq(entries.tenantId, tenantId),
              request.eventType ? eq(entries.eventType, request.eventType) : undefined,
              since ? gte(entries.occurredAt, since) : undefined,
              until ? lt(entries.occurredAt, until) : undefined,
              below !== undefined ? lt(entries.seq, below) : undefined,
            ),
          )
          .orderBy(desc(entries.seq))
          .limit(limit + 1),
      );
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return { entries: page.map(present), nextCursor: rows.length > limit && last ? encodeCursor(last.seq) : '' };
    },
    verifyChain: async (request) => {
      const verdict = await verifyChain(db, required(request.tenantId, 'tenant_id'));
      return verdict.intact
        ? {
            intact: true,
            entriesChecked: BigInt(verdict.entriesChecked),
            headHash: verdict.headHash,
            checkpointSeq: BigInt(verdict.checkpointSeq),
          }
        : {
            intact: false,
            entriesChecked: BigInt(verdict.entriesChecked),
            firstBrokenEntryId: verdict.firstBroken.entryId,
            firstBrokenSeq: BigInt(verdict.firstBroken.seq),
            reason: verdict.firstBroken.reason,
            checkpointSeq: BigInt(verdict.checkpointSeq),
          };
    },
    purgeExpired: async (request) => {
      if (request.retentionDays < 1)
        throw new CairnError('cairn.validation.invalid_body', 'retention_days must be at least 1');
      const result = await purgeExpired(db, required(request.tenantId, 'tenant_id'), request.retentionDays);
      return { purged: result.purged, checkpointSeq: BigInt(result.checkpointSeq) };
    },
    setExportConfig: async (request) => {
      const input = request.config;
      if (!input) throw new CairnError('cairn.validation.invalid_body', 'config is required');
      const tenantId = required(input.tenantId, 'tenant_id');
      const settings = validateSettings(input, options.production);
      const now = new Date();
      const [row] = await withTenant(db, tenantId, (tx) =>
        tx
          .insert(exportConfigs)
          .values({
            tenantId,
            ...settings,
            exportedUntil: windowStart(now, options.exportWindowSeconds),
            createdAt: now,
            updatedAt: now,
          })
          // A changed destination keeps its position: windows already written are not written again.
          .onConflictDoUpdate({ target: exportConfigs.tenantId, set: { ...settings, lastError: null, updatedAt: now } })
          .returning(),
      );
      return { config: presentExportConfig(row!) };
    },
    getExportConfig: async (request) => {
      const tenantId = required(request.tenantId, 'tenant_id');
      const [row] = await withTenant(db, tenantId, (tx) =>
        tx.select().from(exportConfigs).where(eq(exportConfigs.tenantId, tenantId)),
      );
      return row ? { config: presentExportConfig(row) } : {};
    },
    deleteExportConfig: async (request) => {
      const tenantId = required(request.tenantId, 'tenant_id');
      const deleted = await withTenant(db, tenantId, (tx) =>
        tx
          .delete(exportConfigs)
          .where(eq(exportConfigs.tenantId, tenantId))
          .returning({ tenantId: exportConfigs.tenantId }),
      );
      return { deleted: deleted.length > 0 };
    },
  };
}
