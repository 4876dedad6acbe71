import { CairnError } from '@cairn/errors';
import { parseActorKeyId } from '@cairn/events';
import { fromTimestamp, toTimestamp, type auditV1 } from '@cairn/proto';
import type { ImplOf } from '@cairn/rpc';
import type { AuditLog, EntryRow, ExportConfigRow } from './app/audit-log.js';

const MAX_LIMIT = 1000;

/** The API key an admin change names as its actor (audit entry); a value that is not a key id is refused. */
function actorKeyIdOf(raw: string): string | null {
  const actor = parseActorKeyId(raw);
  if (actor === undefined) throw new CairnError('cairn.validation.invalid_body', 'actor_key_id must be an API key id');
  return actor;
}

function required(value: string, name: string): string {
  if (!value) throw new CairnError('cairn.validation.invalid_body', `${name} is required`);
  return value;
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
    createdAt: toTimestamp(row.occurredAt),
    recordedAt: toTimestamp(row.recordedAt),
    dataJson: JSON.stringify(row.data),
    seq: BigInt(row.seq),
    prevHash: row.prevHash,
    hash: row.hash,
  };
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
    exportedUntil: toTimestamp(row.exportedUntil),
    createdAt: toTimestamp(row.createdAt),
    updatedAt: toTimestamp(row.updatedAt),
    lastError: row.lastError ?? '',
  };
}

/** cairn.audit.v1.AuditService: reads one tenant's log (RLS scopes every query to that tenant). */
export function auditHandlers(log: AuditLog): ImplOf<typeof auditV1.AuditService> {
  return {
    listEntries: async (request) => {
      const tenantId = required(request.tenantId, 'tenant_id');
      const limit = Math.min(Math.max(request.limit || 100, 1), MAX_LIMIT);
      const since = request.since ? fromTimestamp(request.since) : undefined;
      const until = request.until ? fromTimestamp(request.until) : undefined;
      const below = decodeCursor(request.cursor);
      const rows = await log.entries(
        tenantId,
        {
          ...(request.eventType ? { eventType: request.eventType } : {}),
          ...(since ? { since } : {}),
          ...(until ? { until } : {}),
          ...(below !== undefined ? { belowSeq: below } : {}),
        },
        limit + 1,
      );
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return { entries: page.map(present), nextCursor: rows.length > limit && last ? encodeCursor(last.seq) : '' };
    },
    verifyChain: async (request) => {
      const verdict = await log.verify(required(request.tenantId, 'tenant_id'));
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
      const result = await log.purge(required(request.tenantId, 'tenant_id'), request.retentionDays);
      return { purged: result.purged, checkpointSeq: BigInt(result.checkpointSeq) };
    },
    setExportConfig: async (request) => {
      const input = request.config;
      if (!input) throw new CairnError('cairn.validation.invalid_body', 'config is required');
      const tenantId = required(input.tenantId, 'tenant_id');
      const row = await log.setExport(tenantId, input, actorKeyIdOf(request.actorKeyId));
      return { config: presentExportConfig(row) };
    },
    getExportConfig: async (request) => {
      const tenantId = required(request.tenantId, 'tenant_id');
      const row = await log.getExport(tenantId);
      return row ? { config: presentExportConfig(row) } : {};
    },
    deleteExportConfig: async (request) => {
      const tenantId = required(request.tenantId, 'tenant_id');
      return { deleted: await log.deleteExport(tenantId, actorKeyIdOf(request.actorKeyId)) };
    },
  };
}
