import { sql } from 'drizzle-orm';
import { check, index, pgSchema, text, timestamp, uniqueIndex, integer, type AnyPgColumn } from 'drizzle-orm/pg-core';

// Same schema object name as schema.ts declares; drizzle-kit merges tables by schema name.
const signer = pgSchema('signer');

export const CERTIFICATE_ROLES = ['root', 'intermediate', 'signing', 'ocsp_responder', 'tsa'] as const;
export const CERTIFICATE_STATUSES = ['active', 'retired', 'revoked'] as const;
export const KEY_BACKENDS = ['software', 'pkcs11'] as const;

export type CertificateRole = (typeof CERTIFICATE_ROLES)[number];
export type CertificateStatus = (typeof CERTIFICATE_STATUSES)[number];
export type KeyBackendKind = (typeof KEY_BACKENDS)[number];

/**
 * The signer's own certificate hierarchy (root → intermediate → signing certificates, plus the intermediate's
 * delegated OCSP responder and time-stamping authority certificates) and, for software keys, their private keys
 * sealed under SIGNER_KEK.
 *
 * These rows belong to the service, not to a tenant: every tenant's manifests are signed by the same active
 * certificate, and the OCSP responder answers for anyone. So there is no tenant_id column and no RLS policy.
 *
 * `status`: `active` is the one in use for its role (at most one per role, enforced by a partial unique
 * index so two replicas can never both activate one); `retired` was replaced by rotation but stays valid
 * (OCSP answers good: what it signed stays verifiable); `revoked` answers revoked.
 */
export const certificates = signer.table(
  'certificates',
  {
    serialHex: text('serial_hex').primaryKey(),
    role: text('role').$type<CertificateRole>().notNull(),
    /** RFC 4514 string, for humans; the PEM is the authority. */
    subject: text('subject').notNull(),
    /** Null for the self-signed root. */
    issuerSerial: text('issuer_serial').references((): AnyPgColumn => certificates.serialHex),
    /** "Cairn Signing <n>": n counts signing certificates, for operators reading subjects. */
    sequence: integer('sequence').notNull().default(1),
    pem: text('pem').notNull(),
    /** PKCS#8 sealed with SIGNER_KEK (AES-256-GCM envelope bound to serial_hex); null when the key lives in an HSM. */
    encryptedPrivateKey: text('encrypted_private_key'),
    keyBackend: text('key_backend').$type<KeyBackendKind>().notNull().default('software'),
    pkcs11Label: text('pkcs11_label'),
    notBefore: timestamp('not_before', { withTimezone: true }).notNull(),
    notAfter: timestamp('not_after', { withTimezone: true }).notNull(),
    status: text('status').$type<CertificateStatus>().notNull().default('active'),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
    revocationReason: text('revocation_reason'),
    activatedAt: timestamp('activated_at', { withTimezone: true }),
    retiredAt: timestamp('retired_at', { withTimezone: true }),
    expiringNotifiedAt: timestamp('expiring_notified_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    check('certificates_role_check', sql`${t.role} in ('root', 'intermediate', 'signing', 'ocsp_responder', 'tsa')`),
    check('certificates_status_check', sql`${t.status} in ('active', 'retired', 'revoked')`),
    check('certificates_key_backend_check', sql`${t.keyBackend} in ('software', 'pkcs11')`),
    // A software key without its sealed private key (or an HSM key without its label) could never sign.
    check(
      'certificates_key_location_check',
      sql`(${t.keyBackend} = 'software' and ${t.encryptedPrivateKey} is not null) or (${t.keyBackend} = 'pkcs11' and ${t.pkcs11Label} is not null and ${t.encryptedPrivateKey} is null)`,
    ),
    check('certificates_revoked_check', sql`(${t.status} = 'revoked') = (${t.revokedAt} is not null)`),
    check('certificates_issuer_check', sql`(${t.role} = 'root') = (${t.issuerSerial} is null)`),
    uniqueIndex('certificates_one_active_per_role')
      .on(t.role)
      .where(sql`${t.status} = 'active'`),
    index('certificates_role_status_idx').on(t.role, t.status),
  ],
);

export type CertificateRow = typeof certificates.$inferSelect;
export type NewCertificateRow = typeof certificates.$inferInsert;
