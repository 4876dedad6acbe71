/** An audit entry as exported: the same fields GET /v1/audit returns. */
export interface ExportedEntry {
  entryId: string;
  eventId: string;
  eventType: string;
  occurredAt: Date;
  recordedAt: Date;
  data: unknown;
  seq: number;
  prevHash: string;
  hash: string;
}

/** The start of the window containing `at` (windows are aligned on the epoch: 15-minute windows start at :00, :15, …). */
export function windowStart(at: Date, windowSeconds: number): Date {
  const ms = windowSeconds * 1000;
  return new Date(Math.floor(at.getTime() / ms) * ms);
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** `<prefix>/year=YYYY/month=MM/day=DD/HHMM-HHMM.ndjson` (UTC, day of the window start; HHMMSS when windows are not whole minutes). */
export function windowKey(prefix: string | null, start: Date, end: Date, windowSeconds: number): string {
  const clock = (d: Date) =>
    `${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${windowSeconds % 60 === 0 ? '' : pad(d.getUTCSeconds())}`;
  const partition = `year=${start.getUTCFullYear()}/month=${pad(start.getUTCMonth() + 1)}/day=${pad(start.getUTCDate())}`;
  return `${prefix ? `${prefix}/` : ''}${partition}/${clock(start)}-${clock(end)}.ndjson`;
}

/** One NDJSON line per entry. */
export function ndjsonLine(row: ExportedEntry): string {
  return `${JSON.stringify({
    entry_id: row.entryId,
    event_id: row.eventId,
    event_type: row.eventType,
    created_at: row.occurredAt.toISOString(),
    recorded_at: row.recordedAt.toISOString(),
    data: row.data,
    seq: row.seq,
    prev_hash: row.prevHash,
    hash: row.hash,
  })}\n`;
}
