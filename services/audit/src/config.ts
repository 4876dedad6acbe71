import { z } from 'zod';
import { ConfigError } from '@cairn/config';

/** audit-only settings (the common ones come from @cairn/config). */
export const auditConfigShape = {
  /**
   * How often every tenant's entries past its retention (the tenant service's `audit_retention_days`, else the plan
   * default: 30 free/developer, 365 growth/enterprise) are purged; the chain keeps verifying from its checkpoint.
   */
  AUDIT_PURGE_INTERVAL_MS: z.coerce.number().int().positive().default(3_600_000),
  /** How often the continuous export looks for closed windows to write. */
  AUDIT_EXPORT_INTERVAL_MS: z.coerce.number().int().positive().default(60_000),
  /** Length of one export window (one NDJSON file each); 900 = 15 minutes. */
  AUDIT_EXPORT_WINDOW_SECONDS: z.coerce.number().int().min(1).max(86_400).default(900),
  /** How long after a window closes before it is written, so entries recorded in its last instants are in it. */
  AUDIT_EXPORT_GRACE_SECONDS: z.coerce.number().int().min(0).max(3600).default(60),
  /**
   * Base directory of the filesystem export sink (a tenant writes under `<dir>/<tenant_id>/<path>/…`), development
   * only: in production a tenant's `filesystem` export answers 400 `cairn.validation.invalid_body`, a stored one is
   * not written (its `last_error` says why), and the service refuses to start with this set (auditExportDir).
   * @default `/tmp/cairn/audit-export` (development)
   */
  AUDIT_EXPORT_DIR: z.string().min(1).optional(),
};

export const DEFAULT_AUDIT_EXPORT_DIR = '/tmp/cairn/audit-export';

/** Where the filesystem sink writes; in production there is none, and setting one is a configuration error. */
export function auditExportDir(config: {
  CAIRN_ENV: 'development' | 'production';
  AUDIT_EXPORT_DIR?: string | undefined;
}): string {
  if (config.CAIRN_ENV !== 'production') return config.AUDIT_EXPORT_DIR ?? DEFAULT_AUDIT_EXPORT_DIR;
  if (config.AUDIT_EXPORT_DIR)
    throw new ConfigError([
      'AUDIT_EXPORT_DIR: the filesystem export sink is refused in production (a pod-local directory); tenants export to s3',
    ]);
  return '';
}
