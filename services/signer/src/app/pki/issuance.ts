import type { Tx } from '@cairn/db';
import type { PkiSettings } from '../../config.js';
import type { CertificateRole } from '../../db/pki-schema.js';
import {
  createIntermediateCertificate,
  createOcspResponderCertificate,
  createTsaCertificate,
  createRootCertificate,
  createSigningCertificate,
  generateP256KeyPair,
  newSerialHex,
  parseCertificatePem,
  type CryptoKey,
  type IssuedCertificate,
  type Issuer,
} from '../../domain/pki/ca.js';
import type { CertificateRecords, CertificateRow, KeyVault, PkiLogger, PreparedSigningKey } from '../ports.js';
import { info, type CertificateInfo } from './types.js';

/** The delegated OCSP responder certificate is short-lived (it cannot be revoked: ocsp-nocheck) and renewed by rotateIfDue. */
export const OCSP_RESPONDER_VALIDITY_DAYS = 90;

/**
 * The time-stamping authority's certificate: short-lived like the OCSP responder's and renewed by rotateIfDue. A
 * token stays verifiable after its TSA certificate is retired or expired: validators check the TSA certificate at
 * the token's own time (genTime).
 */
export const TSA_VALIDITY_DAYS = 90;

export interface PkiOverview {
  readonly root: CertificateInfo;
  readonly intermediate: CertificateInfo;
  readonly signing: CertificateInfo;
  readonly ocspResponder: CertificateInfo;
  readonly tsa: CertificateInfo;
  /** What this call created (empty when everything existed). */
  readonly created: readonly CertificateRole[];
}

/**
 * Issuance: makes certificates (root, intermediate, delegated OCSP responder, signing) under their issuer and
 * stores them as the active one of their role, inside the caller's locked transaction.
 */
export class Issuance {
  constructor(
    private readonly store: CertificateRecords,
    private readonly keys: KeyVault,
    private readonly settings: PkiSettings,
  ) {}

  /**
   * Creates what is missing of root → intermediate → active signing certificate (+ the intermediate's OCSP
   * responder certificate). Idempotent, and safe when several replicas call it at once (one of them creates,
   * the others find it done).
   */
  async ensureHierarchy(org: string, now: () => Date, logger?: PkiLogger): Promise<PkiOverview> {
    const existing = await this.store.activeRows();
    if (existing.root && existing.intermediate && existing.signing && existing.ocspResponder && existing.tsa) {
      return {
        root: info(existing.root),
        intermediate: info(existing.intermediate),
        signing: info(existing.signing),
        ocspResponder: info(existing.ocspResponder),
        tsa: info(existing.tsa),
        created: [],
      };
    }
    // A key generated for a certificate that never got committed (HSM keys live outside the transaction) is
    // removed again; one whose certificate committed is kept.
    let prepared: PreparedSigningKey | undefined;
    let keep = false;
    try {
      const overview = await this.store.locked(async (tx) => {
        const created: CertificateRole[] = [];
        const at = now();
        let { root, intermediate, signing, ocspResponder, tsa } = await this.store.activeRows(tx);
        if (!root) {
          root = await this.createRoot(tx, org, at);
          created.push('root');
        }
        if (!intermediate) {
          intermediate = await this.createIntermediate(tx, org, root, at);
          created.push('intermediate');
        }
        if (!signing) {
          prepared = await this.keys.prepareSigningKey();
          signing = await this.issueSigning(tx, org, intermediate, prepared, at);
          created.push('signing');
        }
        if (!ocspResponder) {
          ocspResponder = await this.createOcspResponder(tx, org, intermediate, at);
          created.push('ocsp_responder');
        }
        if (!tsa) {
          tsa = await this.createTsa(tx, org, intermediate, at);
          created.push('tsa');
        }
        return {
          root: info(root),
          intermediate: info(intermediate),
          signing: info(signing),
          ocspResponder: info(ocspResponder),
          tsa: info(tsa),
          created,
        };
      });
      keep = true;
      if (overview.created.length > 0) {
        logger?.info({ created: overview.created, signingSerial: overview.signing.serialHex }, 'signer PKI created');
      }
      return overview;
    } finally {
      if (!keep) await prepared?.discard();
    }
  }

  async createRoot(tx: Tx, org: string, now: Date): Promise<CertificateRow> {
    const keys = await generateP256KeyPair();
    const cert = await createRootCertificate({ org, keys, serialHex: newSerialHex(), now });
    return this.insertSoftware(tx, 'root', cert, null, keys.privateKey, now);
  }

  async createIntermediate(tx: Tx, org: string, root: CertificateRow, now: Date): Promise<CertificateRow> {
    const keys = await generateP256KeyPair();
    const cert = await createIntermediateCertificate({
      org,
      publicKey: keys.publicKey,
      issuer: await this.issuer(root),
      serialHex: newSerialHex(),
      now,
    });
    return this.insertSoftware(tx, 'intermediate', cert, root.serialHex, keys.privateKey, now);
  }

  /** The responder key is a software key even with an HSM signing key: it only vouches for certificate status. */
  createOcspResponder(tx: Tx, org: string, intermediate: CertificateRow, now: Date): Promise<CertificateRow> {
    return this.createServiceCertificate(tx, 'ocsp_responder', org, intermediate, now);
  }

  /** The TSA key is a software key sealed under SIGNER_KEK, like the OCSP responder's, whatever the signing backend. */
  createTsa(tx: Tx, org: string, intermediate: CertificateRow, now: Date): Promise<CertificateRow> {
    return this.createServiceCertificate(tx, 'tsa', org, intermediate, now);
  }

  /** A service certificate of the intermediate (OCSP responder or TSA): a fresh software key, the next sequence. */
  private async createServiceCertificate(
    tx: Tx,
    role: 'ocsp_responder' | 'tsa',
    org: string,
    intermediate: CertificateRow,
    now: Date,
  ): Promise<CertificateRow> {
    const keys = await generateP256KeyPair();
    const sequence = await this.store.nextSequence(tx, role);
    const profile =
      role === 'tsa'
        ? { create: createTsaCertificate, validityDays: TSA_VALIDITY_DAYS }
        : { create: createOcspResponderCertificate, validityDays: OCSP_RESPONDER_VALIDITY_DAYS };
    const cert = await profile.create({
      org,
      sequence,
      publicKey: keys.publicKey,
      issuer: await this.issuer(intermediate),
      serialHex: newSerialHex(),
      now,
      validityDays: profile.validityDays,
    });
    return this.insertSoftware(tx, role, cert, intermediate.serialHex, keys.privateKey, now, sequence);
  }

  /** Certifies `prepared` under `intermediate` and stores it as the active signing certificate. */
  async issueSigning(
    tx: Tx,
    org: string,
    intermediate: CertificateRow,
    prepared: PreparedSigningKey,
    now: Date,
  ): Promise<CertificateRow> {
    const sequence = await this.store.nextSequence(tx, 'signing');
    const cert = await createSigningCertificate({
      org,
      sequence,
      subjectPublicKey: prepared.spki,
      issuer: await this.issuer(intermediate),
      serialHex: prepared.serialHex,
      ocspUrl: this.settings.ocspPublicUrl,
      now,
      validityDays: this.settings.leafValidityDays,
    });
    return this.store.insert(tx, {
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
    });
  }

  /** Reissued certificates keep the organisation of the one they replace. */
  orgOf(row: CertificateRow): string {
    return parseCertificatePem(row.pem).subjectName.getField('O')[0] ?? this.settings.org;
  }

  private async insertSoftware(
    tx: Tx,
    role: 'root' | 'intermediate' | 'ocsp_responder' | 'tsa',
    cert: IssuedCertificate,
    issuerSerial: string | null,
    privateKey: CryptoKey,
    now: Date,
    sequence = 1,
  ): Promise<CertificateRow> {
    return this.store.insert(tx, {
      serialHex: cert.serialHex,
      role,
      subject: cert.subject,
      issuerSerial,
      sequence,
      pem: cert.pem,
      encryptedPrivateKey: await this.keys.seal(cert.serialHex, privateKey),
      keyBackend: 'software',
      notBefore: cert.notBefore,
      notAfter: cert.notAfter,
      status: 'active',
      activatedAt: now,
    });
  }

  private async issuer(row: CertificateRow): Promise<Issuer> {
    return { certificate: parseCertificatePem(row.pem), privateKey: await this.keys.caKey(row) };
  }
}
