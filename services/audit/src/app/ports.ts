// The ports the audit use cases run over, declared here (where the use cases can see them) and implemented
// elsewhere: the chain and the export destinations in store/ (Postgres), the export sinks in adapters/sinks.ts.
// service.ts builds the implementations and injects them.
import type { Database, Tx } from '@cairn/db';
import type { checkpoints, entries, exportConfigs } from '../db/schema.js';
import type { ExportSettings } from '../domain/export-settings.js';

export type EntryRow = typeof entries.$inferSelect;
export type EntryInsert = typeof entries.$inferInsert;
export type CheckpointRow = typeof checkpoints.$inferSelect;
export type ExportConfigRow = typeof exportConfigs.$inferSelect;

export interface EntryFilter {
  eventType?: string;
  since?: Date;
  until?: Date;
  /** Only entries below this chain position (the page cursor). */
  belowSeq?: number;
}

/** The tenants' hash chains (store/entries.ts). */
export interface ChainEntries {
  /** Serializes one tenant's appends (and purges) for the rest of the transaction. */
  lockTenantChain(tx: Tx, tenantId: string): Promise<void>;
  hasEntryForEvent(tx: Tx, tenantId: string, eventId: string): Promise<boolean>;
  /** Where the next entry chains on: the last entry or the purge checkpoint; undefined for an empty chain. */
  chainHead(tx: Tx, tenantId: string): Promise<{ seq: number; hash: string } | undefined>;
  insertEntry(tx: Tx, entry: EntryInsert): Promise<void>;
  /** A page of the tenant's log, newest first (`limit` rows at most). */
  listEntries(db: Database, tenantId: string, filter: EntryFilter, limit: number): Promise<EntryRow[]>;
  checkpointOf(tx: Tx, tenantId: string): Promise<CheckpointRow | undefined>;
  /** Up to `limit` entries from chain position `fromSeq` on, in seq order. */
  entriesFrom(tx: Tx, tenantId: string, fromSeq: number, limit: number): Promise<EntryRow[]>;
  /** The entries recorded in [start, end), in seq order. */
  entriesRecordedIn(tx: Tx, tenantId: string, start: Date, end: Date): Promise<EntryRow[]>;
  /** Deletes the entries recorded before `cutoff`, oldest first, and checkpoints the chain at the last one. */
  purgeRecordedBefore(
    db: Database,
    tenantId: string,
    cutoff: Date,
    now: Date,
  ): Promise<{ purged: number; checkpointSeq: number }>;
  tenantsWithEntries(db: Database): Promise<string[]>;
}

/** Runs in the write's transaction with the destination before and after it (the admin change's audit entry). */
export type ExportConfigChange = (
  tx: Tx,
  before: ExportConfigRow | undefined,
  after: ExportConfigRow | undefined,
) => Promise<void>;

/** The tenants' export destinations and positions (store/export-configs.ts). */
export interface ExportConfigs {
  /** Creates the tenant's destination, or changes it keeping its position. */
  upsertExportConfig(
    db: Database,
    tenantId: string,
    settings: ExportSettings,
    exportedUntil: Date,
    now: Date,
    alsoInTx: ExportConfigChange,
  ): Promise<ExportConfigRow>;
  getExportConfig(db: Database, tenantId: string): Promise<ExportConfigRow | undefined>;
  deleteExportConfig(db: Database, tenantId: string, alsoInTx: ExportConfigChange): Promise<boolean>;
  exportingTenants(db: Database): Promise<string[]>;
  /** Runs `fn` with the tenant's destination claimed (undefined when another exporter holds it, or none). */
  withClaimedExportConfig<T>(
    db: Database,
    tenantId: string,
    fn: (config: ExportConfigRow, tx: Tx) => Promise<T>,
  ): Promise<T | undefined>;
  advanceExport(tx: Tx, tenantId: string, exportedUntil: Date, now: Date): Promise<void>;
  recordExportError(db: Database, tenantId: string, message: string): Promise<void>;
}

export type WriteOutcome = 'written' | 'exists';

export interface ExportSink {
  readonly kind: 'filesystem' | 's3';
  /** Writes `body` at `key` only if nothing is there yet. */
  writeOnce(key: string, body: string): Promise<WriteOutcome>;
  close(): void;
}

/** Where exports are written (adapters/sinks.ts). */
export interface ExportSinks {
  /** The sink a tenant's settings describe. */
  open(tenantId: string, settings: ExportSettings): Promise<ExportSink>;
  /** What a tenant reads in its export's last_error. */
  failureText(error: unknown): string;
  /** Refuses an endpoint the tenant may not export to. */
  assertTenantEndpoint(endpoint: string | null, production: boolean): void;
}

/** Everything the audit use cases write and read through. */
export interface AuditPorts {
  entries: ChainEntries;
  exportConfigs: ExportConfigs;
  sinks: ExportSinks;
}
