import { and, asc, eq, inArray, isNull, lte, sql } from 'drizzle-orm';
import type { Database, Tx } from '@cairn/db';
import { newEvent, type AnyEvent } from '@cairn/events';
import { CairnError } from '@cairn/errors';
import {
  certificates,
  type CertificateRole,
  type CertificateRow,
  type CertificateStatus,
  type KeyBackendKind,
} from '../db/pki-schema.js';
import {
  createIntermediateCertificate,
  createOcspResponderCertificate,
  createRootCertificate,
  createSigningCertificate,
  exportPkcs8,
  exportSpki,
  generateP256KeyPair,
  importSigningKey,
  newSerialHex,
  parseCertificatePem,
  type CryptoKey,
  type IssuedCertificate,
  type Issuer,
} from './ca.js';
import type { PkiSettings } from './config.js';
import { openPrivateKey, sealPrivateKey } from './envelope.js';
import {
  Pkcs11KeyBackend,
  SoftwareKeyBackend,
  destroyPkcs11Key,
  generatePkcs11SigningKey,
  type ActiveSigningKey,
  type KeyBackend,
} from './keys.js';
import type { OcspCertStatus, OcspIssuer, OcspResponderDeps } from './ocsp-responder.js';
import { isRevocationReason, type RevocationReason } from '@cairn/ocsp';

/** Binds to the outbox in the wiring: `(tx, event) => outbox.enqueue(tx, event)`. */
export type EnqueueEvent = (tx: Tx, event: AnyEvent) => Promise<void>;

export interface PkiLogger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface CertificateAuthorityDeps {
  readonly db: Database;
  readonly settings: PkiSettings;
  /** Injectable for tests of rotation and expiry; defaults to the wall clock. */
  readonly clock?: () => Date;
  readonly logger?: PkiLogger;
}

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

export interface PkiOverview {
  readonly root: CertificateInfo;
  readonly intermediate: CertificateInfo;
  readonly signing: CertificateInfo;
  readonly ocspResponder: CertificateInfo;
  /** What this call created (empty when everything existed). */
  readonly created: readonly CertificateRole[];
}

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

/** `rotated` is about the signing certificate; `ocspResponderRenewed` is set when the responder certificate was renewed too. */
export type RotationResult = (
  | { readonly rotated: true; readonly previous?: CertificateInfo; readonly current: CertificateInfo }
  | {
      readonly rotated: false;
      readonly reason: 'not_due' | 'rotated_elsewhere' | 'would_not_extend' | 'no_ca';
      readonly current?: CertificateInfo;
    }
) & { readonly ocspResponderRenewed?: CertificateInfo };

const DAY_MS = 86_400_000;
/** One advisory lock for every change to the hierarchy: replicas starting together create one root. */
const PKI_LOCK = 'cairn.signer.pki';
const ISSUERS_CACHE_MS = 5 * 60_000;
/** The delegated OCSP responder certificate is short-lived (it cannot be revoked: ocsp-nocheck) and renewed by rotateIfDue. */
const OCSP_RESPONDER_VALIDITY_DAYS = 90;
const OCSP_RESPONDER_RENEW_DAYS = 30;

function info(row: CertificateRow): CertificateInfo {
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

function unavailable(reason: string, cause?: unknown): CairnError {
  return new CairnError(
    'cairn.signer.unavailable',
    'The signing key is temporarily unavailable; retry later.',
    {},
    { cause: new Error(reason, { cause }) },
  );
}

/** Key material for a new signing certificate, made before the transaction that certifies it. */
interface PreparedSigningKey {
  readonly serialHex: string;
  readonly spki: Buffer;
  readonly columns: { keyBackend: KeyBackendKind; encryptedPrivateKey: string | null; pkcs11Label: string | null };
  discard(): Promise<void>;
}

/**
 * The signer's certificate authority and signing keys, over `signer.certificates`.
 *
 * Every change (creation, rotation, revocation) runs in one transaction holding a transaction-scoped
 * advisory lock, re-reading state after taking it, so concurrent replicas serialise and the second one
 * finds the work done. A partial unique index (one active certificate per role) backs this up.
 */
export class CertificateAuthority {
  readonly #db: Database;
  readonly #settings: PkiSettings;
  readonly #clock: () => Date;
  readonly #logger: PkiLogger | undefined;
  #active: { key: ActiveSigningKey; checkedAt: number } | undefined;
  #loading: Promise<ActiveSigningKey> | undefined;
  #issuers: { list: readonly OcspIssuer[]; loadedAt: number } | undefined;

  constructor(deps: CertificateAuthorityDeps) {
    this.#db = deps.db;
    this.#settings = deps.settings;
    this.#clock = deps.clock ?? (() => new Date());
    this.#logger = deps.logger;
  }

  // -------------------------------------------------------------------------------------------------------
  // Creation

  /**
   * Creates what is missing of root → intermediate → active signing certificate (+ the intermediate's OCSP
   * responder certificate). Idempotent, and safe when several replicas call it at once (one of them creates,
   * the others find it done).
   */
  async ensureDevelopmentPki(org: string = this.#settings.org): Promise<PkiOverview> {
    const existing = await this.#activeRows();
    if (existing.root && existing.intermediate && existing.signing && existing.ocspResponder) {
      return {
        root: info(existing.root),
        intermediate: info(existing.intermediate),
        signing: info(existing.signing),
        ocspResponder: info(existing.ocspResponder),
        created: [],
      };
    }
    // A key generated for a certificate that never got committed (HSM keys live outside the transaction) is
    // removed again; one whose certificate committed is kept.
    let prepared: PreparedSigningKey | undefined;
    let keep = false;
    try {
      const overview = await this.#locked(async (tx) => {
        const created: CertificateRole[] = [];
        const now = this.#clock();
        let { root, intermediate, signing, ocspResponder } = await this.#activeRows(tx);
        if (!root) {
          root = await this.#createRoot(tx, org, now);
          created.push('root');
        }
        if (!intermediate) {
          intermediate = await this.#createIntermediate(tx, org, root, now);
          created.push('intermediate');
        }
        if (!signing) {
          prepared = await this.#prepareSigningKey();
          signing = await this.#issueSigning(tx, org, intermediate, prepared, now);
          created.push('signing');
        }
        if (!ocspResponder) {
          ocspResponder = await this.#createOcspResponder(tx, org, intermediate, now);
          created.push('ocsp_responder');
        }
        return {
          root: info(root),
          intermediate: info(intermediate),
          signing: info(signing),
          ocspResponder: info(ocspResponder),
          created,
        };
      });
      keep = true;
      if (overview.created.length > 0) {
        this.#invalidate();
        this.#logger?.info(
          { created: overview.created, signingSerial: overview.signing.serialHex },
          'signer PKI created',
        );
      }
      return overview;
    } finally {
      if (!keep) await prepared?.discard();
    }
  }

  async #createRoot(tx: Tx, org: string, now: Date): Promise<CertificateRow> {
    const keys = await generateP256KeyPair();
    const cert = await createRootCertificate({ org, keys, serialHex: newSerialHex(), now });
    return this.#insertSoftware(tx, 'root', cert, null, keys.privateKey, now);
  }

  async #createIntermediate(tx: Tx, org: string, root: CertificateRow, now: Date): Promise<CertificateRow> {
    const keys = await generateP256KeyPair();
    const cert = await createIntermediateCertificate({
      org,
      publicKey: keys.publicKey,
      issuer: await this.#issuer(root),
      serialHex: newSerialHex(),
      now,
    });
    return this.#insertSoftware(tx, 'intermediate', cert, root.serialHex, keys.privateKey, now);
  }

  /** The responder key is a software key even with an HSM signing key: it only vouches for certificate status. */
  async #createOcspResponder(tx: Tx, org: string, intermediate: CertificateRow, now: Date): Promise<CertificateRow> {
    const keys = await generateP256KeyPair();
    const sequence = await this.#nextSequence(tx, 'ocsp_responder');
    const cert = await createOcspResponderCertificate({
      org,
      sequence,
      publicKey: keys.publicKey,
      issuer: await this.#issuer(intermediate),
      serialHex: newSerialHex(),
      now,
      validityDays: OCSP_RESPONDER_VALIDITY_DAYS,
    });
    return this.#insertSoftware(tx, 'ocsp_responder', cert, intermediate.serialHex, keys.privateKey, now, sequence);
  }

  async #nextSequence(tx: Tx, role: CertificateRole): Promise<number> {
    const seq = await tx.execute<{ n: number }>(
      sql`select coalesce(max(${certificates.sequence}), 0)::int + 1 as n from ${certificates} where ${certificates.role} = ${role}`,
    );
    return seq.rows[0]?.n ?? 1;
  }

  async #insertSoftware(
    tx: Tx,
    role: 'root' | 'intermediate' | 'ocsp_responder',
    cert: IssuedCertificate,
    issuerSerial: string | null,
    privateKey: CryptoKey,
    now: Date,
    sequence = 1,
  ): Promise<CertificateRow> {
    const pkcs8 = await exportPkcs8(privateKey);
    try {
      const [row] = await tx
        .insert(certificates)
        .values({
          serialHex: cert.serialHex,
          role,
          subject: cert.subject,
          issuerSerial,
          sequence,
          pem: cert.pem,
          encryptedPrivateKey: sealPrivateKey(this.#settings.kek, cert.serialHex, pkcs8),
          keyBackend: 'software',
          notBefore: cert.notBefore,
          notAfter: cert.notAfter,
          status: 'active',
          activatedAt: now,
        })
        .returning();
      if (!row) throw new Error('insert returned no row');
      return row;
    } finally {
      pkcs8.fill(0);
    }
  }

  /** Generates the next signing key: in memory (then sealed) or on the HSM token. */
  async #prepareSigningKey(): Promise<PreparedSigningKey> {
    const serialHex = newSerialHex();
    if (this.#settings.keyBackend === 'pkcs11') {
      const config = this.#settings.pkcs11;
      if (!config) throw new Error('SIGNER_KEY_BACKEND=pkcs11 without PKCS#11 settings');
      const label = `${this.#settings.pkcs11KeyLabelPrefix}-${serialHex}`;
      const spki = await generatePkcs11SigningKey(config, label, Buffer.from(serialHex, 'hex'));
      return {
        serialHex,
        spki,
        columns: { keyBackend: 'pkcs11', encryptedPrivateKey: null, pkcs11Label: label },
        discard: async () => {
          await destroyPkcs11Key(config, label);
        },
      };
    }
    const keys = await generateP256KeyPair();
    const pkcs8 = await exportPkcs8(keys.privateKey);
    try {
      return {
        serialHex,
        spki: await exportSpki(keys.publicKey),
        columns: {
          keyBackend: 'software',
          encryptedPrivateKey: sealPrivateKey(this.#settings.kek, serialHex, pkcs8),
          pkcs11Label: null,
        },
        discard: async () => undefined,
      };
    } finally {
      pkcs8.fill(0);
    }
  }

  /** Certifies `prepared` under `intermediate` and stores it as the active signing certificate. */
  async #issueSigning(
    tx: Tx,
    org: string,
    intermediate: CertificateRow,
    prepared: PreparedSigningKey,
    now: Date,
  ): Promise<CertificateRow> {
    const sequence = await this.#nextSequence(tx, 'signing');
    const cert = await createSigningCertificate({
      org,
      sequence,
      subjectPublicKey: prepared.spki,
      issuer: await this.#issuer(intermediate),
      serialHex: prepared.serialHex,
      ocspUrl: this.#settings.ocspPublicUrl,
      now,
      validityDays: this.#settings.leafValidityDays,
    });
    const [row] = await tx
      .insert(certificates)
      .values({
        serialHex: cert.serialHex,
        role: 'signing',
        subject: cert.subject,
        issuerSerial: intermediate.serialHex,
        sequence,
        pem: cert.pem,
        ...prepared.columns,
        notBefore: cert.notBefore,
        notAfter: cert.notAfter,
        status: 'active',
        activatedAt: now,
      })
      .returning();
    if (!row) throw new Error('insert returned no row');
    return row;
  }

  async #issuer(row: CertificateRow): Promise<Issuer> {
    return { certificate: parseCertificatePem(row.pem), privateKey: await this.#caKey(row) };
  }

  /** The sealed software key of a CA or responder certificate, imported for signing. */
  async #caKey(row: CertificateRow): Promise<CryptoKey> {
    if (!row.encryptedPrivateKey) throw new Error(`certificate ${row.serialHex} has no private key here`);
    const opened = openPrivateKey(this.#settings.kek, row.serialHex, row.encryptedPrivateKey);
    if (!opened.ok) throw new Error(`cannot unseal the key of ${row.serialHex}: ${opened.reason}`);
    try {
      return await importSigningKey(opened.plaintext);
    } finally {
      opened.plaintext.fill(0);
    }
  }

  // -------------------------------------------------------------------------------------------------------
  // The active signing key

  /**
   * The key new signatures use, with its chain. Cached; re-read from the database at most every
   * SIGNER_ACTIVE_KEY_RECHECK_MS, so a rotation or revocation made by another replica is picked up.
   * A caller holding the returned object keeps using that key to the end of its signature.
   * Throws CairnError('cairn.signer.unavailable') when there is no usable active key.
   */
  async activeSigningKey(): Promise<ActiveSigningKey> {
    const cached = this.#active;
    if (cached && Date.now() - cached.checkedAt < this.#settings.activeKeyRecheckMs) return cached.key;
    this.#loading ??= this.#refreshActive()
      .catch((error: unknown) => {
        // Whatever went wrong, the caller can only answer 503: never let an internal error become a 500.
        throw error instanceof CairnError ? error : unavailable('loading the active signing key failed', error);
      })
      .finally(() => {
        this.#loading = undefined;
      });
    return this.#loading;
  }

  async #refreshActive(): Promise<ActiveSigningKey> {
    let row: CertificateRow | undefined;
    try {
      [row] = await this.#db
        .select()
        .from(certificates)
        .where(and(eq(certificates.role, 'signing'), eq(certificates.status, 'active')));
    } catch (error) {
      // Without the database we cannot see a rotation, but the key we hold is still ours to use.
      if (this.#active) {
        this.#logger?.warn({ err: error }, 'could not re-read the active signing key; keeping the cached one');
        return this.#active.key;
      }
      throw unavailable('reading the active signing certificate failed', error);
    }
    if (!row) {
      this.#active = undefined;
      throw unavailable('no active signing certificate');
    }
    if (this.#active?.key.serialHex === row.serialHex) {
      this.#active.checkedAt = Date.now();
      return this.#active.key;
    }
    const key = await this.#loadSigningKey(row);
    this.#active = { key, checkedAt: Date.now() };
    this.#logger?.info({ serial: row.serialHex, backend: row.keyBackend }, 'active signing key loaded');
    return key;
  }

  async #loadSigningKey(row: CertificateRow): Promise<ActiveSigningKey> {
    let intermediate: CertificateRow | undefined;
    try {
      [intermediate] = row.issuerSerial
        ? await this.#db.select().from(certificates).where(eq(certificates.serialHex, row.issuerSerial))
        : [];
    } catch (error) {
      throw unavailable('reading the intermediate certificate failed', error);
    }
    if (!intermediate) throw unavailable(`issuer of ${row.serialHex} not found`);
    return {
      serialHex: row.serialHex,
      certificatePem: row.pem,
      chainPem: [row.pem, intermediate.pem],
      notAfter: row.notAfter,
      backend: this.#backendFor(row),
    };
  }

  #backendFor(row: CertificateRow): KeyBackend {
    if (row.keyBackend === 'pkcs11') {
      if (!this.#settings.pkcs11 || !row.pkcs11Label)
        throw unavailable(`certificate ${row.serialHex} needs the PKCS#11 backend, which is not configured`);
      return new Pkcs11KeyBackend(this.#settings.pkcs11, row.pkcs11Label);
    }
    if (!row.encryptedPrivateKey) throw unavailable(`certificate ${row.serialHex} has no sealed key`);
    const opened = openPrivateKey(this.#settings.kek, row.serialHex, row.encryptedPrivateKey);
    if (!opened.ok) throw unavailable(`cannot unseal the key of ${row.serialHex}: ${opened.reason}`);
    try {
      return SoftwareKeyBackend.fromPkcs8(opened.plaintext);
    } finally {
      opened.plaintext.fill(0);
    }
  }

  #invalidate(): void {
    this.#active = undefined;
    this.#issuers = undefined;
  }

  // -------------------------------------------------------------------------------------------------------
  // Revocation and rotation

  /**
   * Revokes a signing certificate (the OCSP responder answers `revoked` from the commit on). When it was the
   * active one, a replacement is issued and activated in the same transaction so signing continues; if no
   * replacement key can be made (HSM down), the revocation still happens and signing is unavailable until
   * rotateIfDue succeeds.
   */
  async revoke(
    target: string /* a serial in hex, or 'current' */,
    reason: RevocationReason,
    enqueue?: EnqueueEvent,
  ): Promise<RevokeResult> {
    if (!isRevocationReason(reason) || reason === 'removeFromCRL') return { ok: false, error: 'invalid_reason' };
    const [row] =
      target === 'current'
        ? await this.#db
            .select()
            .from(certificates)
            .where(and(eq(certificates.role, 'signing'), eq(certificates.status, 'active')))
        : await this.#db.select().from(certificates).where(eq(certificates.serialHex, target.toLowerCase()));
    if (!row) return { ok: false, error: target === 'current' ? 'no_active_certificate' : 'not_found' };
    if (row.role !== 'signing') return { ok: false, error: 'not_a_signing_certificate' };
    if (row.status === 'revoked') return { ok: true, revoked: info(row), alreadyRevoked: true };

    let prepared: PreparedSigningKey | undefined;
    let used = false;
    let committed = false;
    let replacementError: string | undefined;
    if (row.status === 'active') {
      try {
        prepared = await this.#prepareSigningKey();
      } catch (error) {
        replacementError =
          error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
        this.#logger?.warn(
          { serial: row.serialHex, err: error },
          'no replacement key for the revoked signing certificate',
        );
      }
    }
    try {
      const result = await this.#locked(async (tx): Promise<RevokeResult> => {
        const [current] = await tx
          .select()
          .from(certificates)
          .where(eq(certificates.serialHex, row.serialHex))
          .for('update');
        if (!current) return { ok: false, error: 'not_found' };
        if (current.status === 'revoked') return { ok: true, revoked: info(current), alreadyRevoked: true };
        const now = this.#clock();
        const [revoked] = await tx
          .update(certificates)
          .set({ status: 'revoked', revokedAt: now, revocationReason: reason })
          .where(eq(certificates.serialHex, current.serialHex))
          .returning();
        if (!revoked) throw new Error('update returned no row');
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
        const { intermediate } = await this.#activeRows(tx);
        if (!prepared || !intermediate) {
          return {
            ok: true,
            revoked: info(revoked),
            alreadyRevoked: false,
            replacementError: replacementError ?? 'no active intermediate',
          };
        }
        const replacement = await this.#issueSigning(tx, this.#orgOf(current), intermediate, prepared, now);
        used = true;
        return { ok: true, revoked: info(revoked), alreadyRevoked: false, replacement: info(replacement) };
      });
      committed = true;
      this.#invalidate();
      if (result.ok && !result.alreadyRevoked) {
        this.#logger?.warn(
          { serial: row.serialHex, reason, replacement: result.replacement?.serialHex },
          'signing certificate revoked',
        );
      }
      return result;
    } finally {
      if (!(used && committed)) await prepared?.discard();
    }
  }

  /**
   * Issues and activates a new signing certificate when the active one has fewer than
   * SIGNER_ROTATE_BEFORE_DAYS left (or when there is none, e.g. after a revocation without replacement).
   * Activation is one UPDATE+INSERT in one transaction: signatures already holding the old key finish with
   * it (it stays valid: retired, not revoked), new ones get the new key. Also renews the delegated OCSP
   * responder certificate when it has under 30 days left. Call it periodically (e.g. hourly).
   */
  async rotateIfDue(now: Date = this.#clock()): Promise<RotationResult> {
    const renewed = await this.#renewOcspResponderIfDue(now);
    const result = await this.#rotateSigningIfDue(now);
    return renewed ? { ...result, ocspResponderRenewed: renewed } : result;
  }

  /** A new delegated OCSP responder certificate when the active one has under 30 days left (or is missing). */
  async #renewOcspResponderIfDue(now: Date): Promise<CertificateInfo | undefined> {
    const due = (responder: CertificateRow | undefined, intermediate: CertificateRow): boolean =>
      !responder ||
      responder.issuerSerial !== intermediate.serialHex ||
      responder.notAfter.getTime() - now.getTime() < OCSP_RESPONDER_RENEW_DAYS * DAY_MS;
    const { intermediate, ocspResponder } = await this.#activeRows();
    if (!intermediate || !due(ocspResponder, intermediate)) return undefined;
    // Capped by the intermediate's end, a renewal could not extend a responder that already reaches it.
    if (
      ocspResponder &&
      ocspResponder.issuerSerial === intermediate.serialHex &&
      intermediate.notAfter.getTime() - ocspResponder.notAfter.getTime() < DAY_MS
    ) {
      return undefined;
    }
    const renewed = await this.#locked(async (tx) => {
      const current = await this.#activeRows(tx);
      if (!current.intermediate || !due(current.ocspResponder, current.intermediate)) return undefined;
      if (current.ocspResponder) {
        await tx
          .update(certificates)
          .set({ status: 'retired', retiredAt: now })
          .where(eq(certificates.serialHex, current.ocspResponder.serialHex));
      }
      return info(await this.#createOcspResponder(tx, this.#orgOf(current.intermediate), current.intermediate, now));
    });
    if (renewed) {
      this.#issuers = undefined;
      this.#logger?.info({ serial: renewed.serialHex }, 'OCSP responder certificate renewed');
    }
    return renewed;
  }

  async #rotateSigningIfDue(now: Date): Promise<RotationResult> {
    const { intermediate, signing } = await this.#activeRows();
    if (!intermediate) return { rotated: false, reason: 'no_ca' };
    if (signing) {
      const left = signing.notAfter.getTime() - now.getTime();
      if (left >= this.#settings.rotateBeforeDays * DAY_MS)
        return { rotated: false, reason: 'not_due', current: info(signing) };
      // A leaf never outlives its intermediate: once the intermediate is the limit, rotating would only
      // reissue (nearly) the same end date on every call. That needs a new intermediate (an operator action).
      const reachable = Math.min(
        now.getTime() + this.#settings.leafValidityDays * DAY_MS,
        intermediate.notAfter.getTime(),
      );
      if (reachable - signing.notAfter.getTime() < DAY_MS) {
        this.#logger?.warn(
          { serial: signing.serialHex, intermediateNotAfter: intermediate.notAfter.toISOString() },
          'signing certificate due for rotation but the intermediate expires first',
        );
        return { rotated: false, reason: 'would_not_extend', current: info(signing) };
      }
    }
    const prepared = await this.#prepareSigningKey();
    let used = false;
    let committed = false;
    try {
      const result = await this.#locked(async (tx): Promise<RotationResult> => {
        const [current] = await tx
          .select()
          .from(certificates)
          .where(and(eq(certificates.role, 'signing'), eq(certificates.status, 'active')))
          .for('update');
        if ((current?.serialHex ?? null) !== (signing?.serialHex ?? null)) {
          return { rotated: false, reason: 'rotated_elsewhere', ...(current ? { current: info(current) } : {}) };
        }
        const { intermediate: ca } = await this.#activeRows(tx);
        if (!ca) return { rotated: false, reason: 'no_ca' };
        let previous: CertificateRow | undefined;
        if (current) {
          [previous] = await tx
            .update(certificates)
            .set({ status: 'retired', retiredAt: now })
            .where(eq(certificates.serialHex, current.serialHex))
            .returning();
        }
        const next = await this.#issueSigning(
          tx,
          current ? this.#orgOf(current) : this.#settings.org,
          ca,
          prepared,
          now,
        );
        used = true;
        return { rotated: true, ...(previous ? { previous: info(previous) } : {}), current: info(next) };
      });
      committed = true;
      if (result.rotated) {
        this.#invalidate();
        this.#logger?.info(
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
  async notifyExpiring(now: Date, enqueue: EnqueueEvent): Promise<number> {
    const horizon = new Date(now.getTime() + this.#settings.expiryNoticeDays * DAY_MS);
    return this.#db.transaction(async (tx) => {
      const rows = await tx
        .select()
        .from(certificates)
        .where(
          and(
            eq(certificates.role, 'signing'),
            eq(certificates.status, 'active'),
            isNull(certificates.expiringNotifiedAt),
            lte(certificates.notAfter, horizon),
          ),
        )
        .orderBy(asc(certificates.notAfter))
        .for('update', { skipLocked: true });
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
        await tx.update(certificates).set({ expiringNotifiedAt: now }).where(eq(certificates.serialHex, row.serialHex));
      }
      return rows.length;
    });
  }

  // -------------------------------------------------------------------------------------------------------
  // Reading

  /** PEM of the active root: the trust anchor verifiers must be configured with. */
  async trustAnchorPem(): Promise<string> {
    const { root } = await this.#activeRows();
    if (!root) throw unavailable('no root certificate');
    return root.pem;
  }

  async listCertificates(
    roles: readonly CertificateRole[] = ['root', 'intermediate', 'signing', 'ocsp_responder'],
  ): Promise<CertificateInfo[]> {
    const rows = await this.#db
      .select()
      .from(certificates)
      .where(inArray(certificates.role, [...roles]))
      .orderBy(asc(certificates.createdAt));
    return rows.map(info);
  }

  async certificate(serialHex: string): Promise<CertificateInfo | undefined> {
    const [row] = await this.#db.select().from(certificates).where(eq(certificates.serialHex, serialHex.toLowerCase()));
    return row ? info(row) : undefined;
  }

  /**
   * What createOcspHandler needs: the intermediates (active and retired) with their keys and delegated
   * responders, and the status of what they issued.
   */
  ocspResponderDeps(options: { onError?: (error: unknown) => void } = {}): OcspResponderDeps {
    return {
      issuers: () => this.#ocspIssuers(),
      lookup: async (issuerSerialHex: string, serialHex: string): Promise<OcspCertStatus> => {
        const [row] = await this.#db
          .select({
            status: certificates.status,
            revokedAt: certificates.revokedAt,
            reason: certificates.revocationReason,
          })
          .from(certificates)
          .where(and(eq(certificates.serialHex, serialHex), eq(certificates.issuerSerial, issuerSerialHex)));
        if (!row) return { status: 'unknown' };
        if (row.status === 'revoked' && row.revokedAt) {
          return {
            status: 'revoked',
            revokedAt: row.revokedAt,
            ...(row.reason && isRevocationReason(row.reason) ? { reason: row.reason } : {}),
          };
        }
        return { status: 'good' };
      },
      basePath: new URL(this.#settings.ocspPublicUrl).pathname,
      validitySeconds: this.#settings.ocspResponseValiditySeconds,
      clock: this.#clock,
      ...(options.onError ? { onError: options.onError } : {}),
    };
  }

  async #ocspIssuers(): Promise<readonly OcspIssuer[]> {
    const cached = this.#issuers;
    if (cached && Date.now() - cached.loadedAt < ISSUERS_CACHE_MS) return cached.list;
    const rows = await this.#db
      .select()
      .from(certificates)
      .where(and(eq(certificates.role, 'intermediate'), inArray(certificates.status, ['active', 'retired'])))
      .orderBy(sql`${certificates.status} = 'active' desc`, asc(certificates.createdAt));
    const responders = await this.#db
      .select()
      .from(certificates)
      .where(and(eq(certificates.role, 'ocsp_responder'), eq(certificates.status, 'active')));
    const list: OcspIssuer[] = [];
    for (const row of rows) {
      const responder = responders.find((r) => r.issuerSerial === row.serialHex);
      list.push({
        serialHex: row.serialHex,
        certificateDer: Buffer.from(parseCertificatePem(row.pem).rawData),
        privateKey: await this.#caKey(row),
        ...(responder
          ? {
              responder: {
                certificateDer: Buffer.from(parseCertificatePem(responder.pem).rawData),
                privateKey: await this.#caKey(responder),
              },
            }
          : {}),
      });
    }
    // An empty list is not cached: another replica may be creating the hierarchy right now.
    if (list.length > 0) this.#issuers = { list, loadedAt: Date.now() };
    return list;
  }

  // -------------------------------------------------------------------------------------------------------

  async #activeRows(tx?: Tx): Promise<{
    root?: CertificateRow;
    intermediate?: CertificateRow;
    signing?: CertificateRow;
    ocspResponder?: CertificateRow;
  }> {
    const rows = await (tx ?? this.#db).select().from(certificates).where(eq(certificates.status, 'active'));
    const byRole = (role: CertificateRole) => rows.find((r) => r.role === role);
    const root = byRole('root');
    const intermediate = byRole('intermediate');
    const signing = byRole('signing');
    const ocspResponder = byRole('ocsp_responder');
    return {
      ...(root ? { root } : {}),
      ...(intermediate ? { intermediate } : {}),
      ...(signing ? { signing } : {}),
      ...(ocspResponder ? { ocspResponder } : {}),
    };
  }

  /** Reissued certificates keep the organisation of the one they replace. */
  #orgOf(row: CertificateRow): string {
    return parseCertificatePem(row.pem).subjectName.getField('O')[0] ?? this.#settings.org;
  }

  async #locked<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.#db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${PKI_LOCK}))`);
      return fn(tx);
    });
  }
}
