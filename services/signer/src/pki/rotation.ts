import { newEvent } from '@cairn/events';
import type { CertificateRow } from '../db/pki-schema.js';
import type { CertificateStore } from './certificate-store.js';
import type { PkiSettings } from './config.js';
import type { Issuance } from './issuance.js';
import type { KeyMaterial } from './key-material.js';
import { DAY_MS, info, type CertificateInfo, type EnqueueEvent, type PkiLogger } from './types.js';

const OCSP_RESPONDER_RENEW_DAYS = 30;

/** `rotated` is about the signing certificate; `ocspResponderRenewed` is set when the responder certificate was renewed too. */
export type RotationResult = (
  | { readonly rotated: true; readonly previous?: CertificateInfo; readonly current: CertificateInfo }
  | {
      readonly rotated: false;
      readonly reason: 'not_due' | 'rotated_elsewhere' | 'would_not_extend' | 'no_ca';
      readonly current?: CertificateInfo;
    }
) & { readonly ocspResponderRenewed?: CertificateInfo };

export interface RotationDeps {
  readonly store: CertificateStore;
  readonly keys: KeyMaterial;
  readonly issuance: Issuance;
  readonly settings: PkiSettings;
  readonly logger: PkiLogger | undefined;
  /** Called after the signing certificate changed: the cached active key and OCSP issuers are stale. */
  readonly changed: () => void;
  /** Called after the OCSP responder certificate changed: the cached OCSP issuers are stale. */
  readonly responderChanged: () => void;
}

/**
 * Issues and activates a new signing certificate when the active one has fewer than
 * SIGNER_ROTATE_BEFORE_DAYS left (or when there is none, e.g. after a revocation without replacement).
 * Activation is one UPDATE+INSERT in one transaction: signatures already holding the old key finish with
 * it (it stays valid: retired, not revoked), new ones get the new key. Also renews the delegated OCSP
 * responder certificate when it has under 30 days left. Call it periodically (e.g. hourly).
 */
export async function rotateIfDue(deps: RotationDeps, now: Date): Promise<RotationResult> {
  const renewed = await renewOcspResponderIfDue(deps, now);
  const result = await rotateSigningIfDue(deps, now);
  return renewed ? { ...result, ocspResponderRenewed: renewed } : result;
}

/** A new delegated OCSP responder certificate when the active one has under 30 days left (or is missing). */
async function renewOcspResponderIfDue(deps: RotationDeps, now: Date): Promise<CertificateInfo | undefined> {
  const due = (responder: CertificateRow | undefined, intermediate: CertificateRow): boolean =>
    !responder ||
    responder.issuerSerial !== intermediate.serialHex ||
    responder.notAfter.getTime() - now.getTime() < OCSP_RESPONDER_RENEW_DAYS * DAY_MS;
  const { intermediate, ocspResponder } = await deps.store.activeRows();
  if (!intermediate || !due(ocspResponder, intermediate)) return undefined;
  // Capped by the intermediate's end, a renewal could not extend a responder that already reaches it.
  if (
    ocspResponder &&
    ocspResponder.issuerSerial === intermediate.serialHex &&
    intermediate.notAfter.getTime() - ocspResponder.notAfter.getTime() < DAY_MS
  ) {
    return undefined;
  }
  const renewed = await deps.store.locked(async (tx) => {
    const current = await deps.store.activeRows(tx);
    if (!current.intermediate || !due(current.ocspResponder, current.intermediate)) return undefined;
    if (current.ocspResponder) await deps.store.retire(tx, current.ocspResponder.serialHex, now);
    return info(
      await deps.issuance.createOcspResponder(tx, deps.issuance.orgOf(current.intermediate), current.intermediate, now),
    );
  });
  if (renewed) {
    deps.responderChanged();
    deps.logger?.info({ serial: renewed.serialHex }, 'OCSP responder certificate renewed');
  }
  return renewed;
}

async function rotateSigningIfDue(deps: RotationDeps, now: Date): Promise<RotationResult> {
  const { intermediate, signing } = await deps.store.activeRows();
  if (!intermediate) return { rotated: false, reason: 'no_ca' };
  if (signing) {
    const left = signing.notAfter.getTime() - now.getTime();
    if (left >= deps.settings.rotateBeforeDays * DAY_MS)
      return { rotated: false, reason: 'not_due', current: info(signing) };
    // A leaf never outlives its intermediate: once the intermediate is the limit, rotating would only
    // reissue (nearly) the same end date on every call. That needs a new intermediate (an operator action).
    const reachable = Math.min(
      now.getTime() + deps.settings.leafValidityDays * DAY_MS,
      intermediate.notAfter.getTime(),
    );
    if (reachable - signing.notAfter.getTime() < DAY_MS) {
      deps.logger?.warn(
        { serial: signing.serialHex, intermediateNotAfter: intermediate.notAfter.toISOString() },
        'signing certificate due for rotation but the intermediate expires first',
      );
      return { rotated: false, reason: 'would_not_extend', current: info(signing) };
    }
  }
  const prepared = await deps.keys.prepareSigningKey();
  let used = false;
  let committed = false;
  try {
    const result = await deps.store.locked(async (tx): Promise<RotationResult> => {
      const current = await deps.store.activeSigning(tx);
      if ((current?.serialHex ?? null) !== (signing?.serialHex ?? null)) {
        return { rotated: false, reason: 'rotated_elsewhere', ...(current ? { current: info(current) } : {}) };
      }
      const { intermediate: ca } = await deps.store.activeRows(tx);
      if (!ca) return { rotated: false, reason: 'no_ca' };
      const previous = current ? await deps.store.retire(tx, current.serialHex, now) : undefined;
      const next = await deps.issuance.issueSigning(
        tx,
        current ? deps.issuance.orgOf(current) : deps.settings.org,
        ca,
        prepared,
        now,
      );
      used = true;
      return { rotated: true, ...(previous ? { previous: info(previous) } : {}), current: info(next) };
    });
    committed = true;
    if (result.rotated) {
      deps.changed();
      deps.logger?.info(
        { previous: result.previous?.serialHex, current: result.current.serialHex },
        'signing certificate rotated',
      );
    }
    return result;
  } finally {
    if (!(used && committed)) await prepared.discard();
  }
}

/**
 * Enqueues one `certificate.expiring` event (tenant 'system') for each active signing certificate within
 * SIGNER_EXPIRY_NOTICE_DAYS of its notAfter that was not announced yet, and marks it announced, in the
 * same transaction as the enqueue: exactly once, across replicas (SKIP LOCKED). Returns how many.
 */
export async function notifyExpiring(
  deps: Pick<RotationDeps, 'store' | 'settings'>,
  now: Date,
  enqueue: EnqueueEvent,
): Promise<number> {
  const horizon = new Date(now.getTime() + deps.settings.expiryNoticeDays * DAY_MS);
  return deps.store.transaction(async (tx) => {
    const rows = await deps.store.expiringUnannounced(tx, horizon);
    for (const row of rows) {
      const daysLeft = Math.max(0, Math.floor((row.notAfter.getTime() - now.getTime()) / DAY_MS));
      await enqueue(
        tx,
        newEvent(
          'certificate.expiring',
          'system',
          {
            serial_hex: row.serialHex,
            role: row.role,
            subject: row.subject,
            key_backend: row.keyBackend,
            not_after: row.notAfter.toISOString(),
            days_left: daysLeft,
          },
          now,
        ),
      );
      await deps.store.markExpiringAnnounced(tx, row.serialHex, now);
    }
    return rows.length;
  });
}
