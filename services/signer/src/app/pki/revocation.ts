import { newEvent } from '@cairn/events';
import { isRevocationReason, type RevocationReason } from '@cairn/ocsp';
import type { CertificateRecords, EnqueueEvent, KeyVault, PkiLogger, PreparedSigningKey } from '../ports.js';
import type { Issuance } from './issuance.js';
import { info, type CertificateInfo } from './types.js';

export type RevokeResult =
  | {
      readonly ok: true;
      readonly revoked: CertificateInfo;
      readonly alreadyRevoked: boolean;
      /** The certificate activated in its place, when the revoked one was the active one. */
      readonly replacement?: CertificateInfo;
      /** Set when the revoked certificate was active and no replacement could be issued (signing is then unavailable). */
      readonly replacementError?: string;
    }
  | {
      readonly ok: false;
      readonly error: 'not_found' | 'not_a_signing_certificate' | 'no_active_certificate' | 'invalid_reason';
    };

export interface RevocationDeps {
  readonly store: CertificateRecords;
  readonly keys: KeyVault;
  readonly issuance: Issuance;
  readonly clock: () => Date;
  readonly logger: PkiLogger | undefined;
  /** Called after a committed change: cached keys and OCSP issuers are stale. */
  readonly changed: () => void;
}

/**
 * Revokes a signing certificate (the OCSP responder answers `revoked` from the commit on). When it was the
 * active one, a replacement is issued and activated in the same transaction so signing continues; if no
 * replacement key can be made (HSM down), the revocation still happens and signing is unavailable until
 * rotateIfDue succeeds.
 */
export async function revokeCertificate(
  deps: RevocationDeps,
  target: string /* a serial in hex, or 'current' */,
  reason: RevocationReason,
  enqueue?: EnqueueEvent,
): Promise<RevokeResult> {
  if (!isRevocationReason(reason) || reason === 'removeFromCRL') return { ok: false, error: 'invalid_reason' };
  const row = target === 'current' ? await deps.store.activeSigning() : await deps.store.bySerial(target.toLowerCase());
  if (!row) return { ok: false, error: target === 'current' ? 'no_active_certificate' : 'not_found' };
  if (row.role !== 'signing') return { ok: false, error: 'not_a_signing_certificate' };
  if (row.status === 'revoked') return { ok: true, revoked: info(row), alreadyRevoked: true };

  let prepared: PreparedSigningKey | undefined;
  let used = false;
  let committed = false;
  let replacementError: string | undefined;
  if (row.status === 'active') {
    try {
      prepared = await deps.keys.prepareSigningKey();
    } catch (error) {
      replacementError =
        error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
      deps.logger?.warn(
        { serial: row.serialHex, err: error },
        'no replacement key for the revoked signing certificate',
      );
    }
  }
  try {
    const result = await deps.store.locked(async (tx): Promise<RevokeResult> => {
      const current = await deps.store.bySerial(row.serialHex, tx);
      if (!current) return { ok: false, error: 'not_found' };
      if (current.status === 'revoked') return { ok: true, revoked: info(current), alreadyRevoked: true };
      const now = deps.clock();
      const revoked = await deps.store.markRevoked(tx, current.serialHex, now, reason);
      // Stored verdicts of manifests this certificate signed must be recomputed: the fact travels with the commit.
      await enqueue?.(
        tx,
        newEvent(
          'certificate.revoked',
          'system',
          { serial_hex: revoked.serialHex, reason, revoked_at: now.toISOString() },
          now,
        ),
      );
      if (current.status !== 'active') return { ok: true, revoked: info(revoked), alreadyRevoked: false };
      const { intermediate } = await deps.store.activeRows(tx);
      if (!prepared || !intermediate) {
        return {
          ok: true,
          revoked: info(revoked),
          alreadyRevoked: false,
          replacementError: replacementError ?? 'no active intermediate',
        };
      }
      const replacement = await deps.issuance.issueSigning(
        tx,
        deps.issuance.orgOf(current),
        intermediate,
        prepared,
        now,
      );
      used = true;
      return { ok: true, revoked: info(revoked), alreadyRevoked: false, replacement: info(replacement) };
    });
    committed = true;
    deps.changed();
    if (result.ok && !result.alreadyRevoked) {
      deps.logger?.warn(
        { serial: row.serialHex, reason, replacement: result.replacement?.serialHex },
        'signing certificate revoked',
      );
    }
    return result;
  } finally {
    if (!(used && committed)) await prepared?.discard();
  }
}
