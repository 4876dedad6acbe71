import type { Tx } from '@cairn/db';
import { newEvent } from '@cairn/events';
import type { PkiSettings } from '../../config.js';
import type { CertificateRecords, CertificateRow, EnqueueEvent, KeyVault, PkiLogger } from '../ports.js';
import type { Issuance } from './issuance.js';
import { DAY_MS, info, type CertificateInfo } from './types.js';

/** The OCSP responder's and the TSA's certificates are renewed when they have fewer days left than this. */
const DELEGATE_RENEW_DAYS = 30;

/**
 * `rotated` is about the signing certificate; `ocspResponderRenewed` / `tsaRenewed` are set when the responder's or
 * the TSA's certificate was renewed too.
 */
export type RotationResult = (
  | { readonly rotated: true; readonly previous?: CertificateInfo; readonly current: CertificateInfo }
  | {
      readonly rotated: false;
      readonly reason: 'not_due' | 'rotated_elsewhere' | 'would_not_extend' | 'no_ca';
      readonly current?: CertificateInfo;
    }
) & { readonly ocspResponderRenewed?: CertificateInfo; readonly tsaRenewed?: CertificateInfo };

export interface RotationDeps {
  readonly store: CertificateRecords;
  readonly keys: KeyVault;
  readonly issuance: Issuance;
  readonly settings: PkiSettings;
  readonly logger: PkiLogger | undefined;
  /** Called after the signing certificate changed: the cached active key and OCSP issuers are stale. */
  readonly changed: () => void;
  /** Called after the OCSP responder certificate changed: the cached OCSP issuers are stale. */
  readonly responderChanged: () => void;
  /** Called after the TSA certificate changed: the cached TSA credential is stale. */
  readonly tsaChanged: () => void;
}

/**
 * Issues and activates a new signing certificate when the active one has fewer than
 * SIGNER_ROTATE_BEFORE_DAYS left (or when there is none, e.g. after a revocation without replacement).
 * Activation is one UPDATE+INSERT in one transaction: signatures already holding the old key finish with
 * it (it stays valid: retired, not revoked), new ones get the new key. Also renews the delegated OCSP
 * responder's and the TSA's certificates when they have under 30 days left. Call it periodically (e.g. hourly).
 */
export async function rotateIfDue(deps: RotationDeps, now: Date): Promise<RotationResult> {
  const renewed = await renewDelegateIfDue(deps, now, 'ocspResponder');
  const tsaRenewed = await renewDelegateIfDue(deps, now, 'tsa');
  const result = await rotateSigningIfDue(deps, now);
  return {
    ...result,
    ...(renewed ? { ocspResponderRenewed: renewed } : {}),
    ...(tsaRenewed ? { tsaRenewed } : {}),
  };
}

type DelegateRole = 'ocspResponder' | 'tsa';

/** Per delegate: how its certificate is issued, who is told when it changed, and its name in the log. */
const DELEGATES: Record<
  DelegateRole,
  {
    create: (
      deps: RotationDeps,
      tx: Tx,
      org: string,
      intermediate: CertificateRow,
      now: Date,
    ) => Promise<CertificateRow>;
    changed: (deps: RotationDeps) => void;
    name: string;
  }
> = {
  ocspResponder: {
    create: (deps, ...args) => deps.issuance.createOcspResponder(...args),
    changed: (deps) => deps.responderChanged(),
    name: 'OCSP responder',
  },
  tsa: {
    create: (deps, ...args) => deps.issuance.createTsa(...args),
    changed: (deps) => deps.tsaChanged(),
    name: 'time-stamping authority',
  },
};

/** A delegate's certificate renewed when due (renewIfDue), and then announced. */
async function renewDelegateIfDue(
  deps: RotationDeps,
  now: Date,
  role: DelegateRole,
): Promise<CertificateInfo | undefined> {
  const delegate = DELEGATES[role];
  const renewed = await renewIfDue(deps, now, role);
  if (renewed) {
    delegate.changed(deps);
    deps.logger?.info({ serial: renewed.serialHex }, `${delegate.name} certificate renewed`);
  }
  return renewed;
}

/**
 * A new delegated certificate of the intermediate (the OCSP responder's or the TSA's) when the active one has
 * under 30 days left, is missing, or was issued by another intermediate. The previous one is retired, not revoked:
 * answers and time-stamps it signed stay verifiable.
 */
async function renewIfDue(deps: RotationDeps, now: Date, role: DelegateRole): Promise<CertificateInfo | undefined> {
  const due = (delegate: CertificateRow | undefined, intermediate: CertificateRow): boolean =>
    !delegate ||
    delegate.issuerSerial !== intermediate.serialHex ||
    delegate.notAfter.getTime() - now.getTime() < DELEGATE_RENEW_DAYS * DAY_MS;
  const rows = await deps.store.activeRows();
  const { intermediate } = rows;
  const delegate = rows[role];
  if (!intermediate || !due(delegate, intermediate)) return undefined;
  // Capped by the intermediate's end, a renewal could not extend a certificate that already reaches it.
  if (
    delegate &&
    delegate.issuerSerial === intermediate.serialHex &&
    intermediate.notAfter.getTime() - delegate.notAfter.getTime() < DAY_MS
  ) {
    return undefined;
  }
  return deps.store.locked(async (tx) => {
    const current = await deps.store.activeRows(tx);
    if (!current.intermediate || !due(current[role], current.intermediate)) return undefined;
    const previous = current[role];
    if (previous) await deps.store.retire(tx, previous.serialHex, now);
    const org = deps.issuance.orgOf(current.intermediate);
    return info(await DELEGATES[role].create(deps, tx, org, current.intermediate, now));
  });
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
