import type { CertificateRole, CertificateRow, CertificateStatus, KeyBackendKind } from '../../db/pki-schema.js';

export const DAY_MS = 86_400_000;

/** A certificate as operators and callers see it: never any key material. */
export interface CertificateInfo {
  readonly serialHex: string;
  readonly role: CertificateRole;
  readonly subject: string;
  readonly status: CertificateStatus;
  readonly keyBackend: KeyBackendKind;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly revokedAt?: Date;
  readonly revocationReason?: string;
  readonly pem: string;
}

/** The CertificateInfo of a stored row. */
export function info(row: CertificateRow): CertificateInfo {
  return {
    serialHex: row.serialHex,
    role: row.role,
    subject: row.subject,
    status: row.status,
    keyBackend: row.keyBackend,
    notBefore: row.notBefore,
    notAfter: row.notAfter,
    ...(row.revokedAt ? { revokedAt: row.revokedAt } : {}),
    ...(row.revocationReason ? { revocationReason: row.revocationReason } : {}),
    pem: row.pem,
  };
}
