import { z } from 'zod';

/** audit-only settings (the common ones come from @cairn/config). */
export const auditConfigShape = {
  /** How often every tenant's entries past its retention (the tenant service's audit_retention_days, else the plan default) are purged. */
  AUDIT_PURGE_INTERVAL_MS: z.coerce.number().int().positive().default(3_600_000),
  /** How often the continuous exporter looks for closed windows to write. */
  AUDIT_EXPORT_INTERVAL_MS: z.coerce.number().int().positive().default(60_000),
  /** Length of one export window (one NDJSON file each); 900 = 15 minutes. */
  AUDIT_EXPORT_WINDOW_SECONDS: z.coerce.number().int().min(1).max(86_400).default(900),
  /** How long after a window closes before it is written, so entries recorded in its last instants are in it. */
  AUDIT_EXPORT_GRACE_SECONDS: z.coerce.number().int().min(0).max(3600).default(60),
  /** Base directory of the filesystem export sink (a tenant writes under <dir>/<tenant_id>/<path>). */
  AUDIT_EXPORT_DIR: z.string().default('/tmp/cairn/audit-export'),
};
