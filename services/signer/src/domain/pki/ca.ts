import { randomBytes, webcrypto } from 'node:crypto';
import { P256_SHA256, x509 } from './x509.js';

/**
 * Certificate profiles of the Cairn hierarchy. Pure functions: no database, no configuration.
 *
 *   root (self-signed, 10 y) → intermediate (5 y, pathLen 0) → signing certificate (the C2PA claim signer)
 *                                                             → OCSP responder certificate (delegated)
 *
 * The signing profile is what c2pa-rs (c2pa-node 0.8.0) accepts as a claim-signing credential: KeyUsage
 * digitalSignature (critical), an EKU from the C2PA list (we set c2pa-kp-claimSigning and emailProtection:
 * the first is the C2PA 2.x purpose, the second is what older validators and `openssl -purpose smimesign`
 * know), SKI and AKI, no CA flag. AIA names our own OCSP responder.
 */

export type CryptoKey = webcrypto.CryptoKey;
export type CryptoKeyPair = webcrypto.CryptoKeyPair;

export const EKU_C2PA_CLAIM_SIGNING = '1.3.6.1.4.1.62558.2.1';
export const EKU_EMAIL_PROTECTION = '1.3.6.1.5.5.7.3.4';
export const EKU_OCSP_SIGNING = '1.3.6.1.5.5.7.3.9';
export const EKU_TIME_STAMPING = '1.3.6.1.5.5.7.3.8';
/** id-pkix-ocsp-nocheck (RFC 6960 §4.2.2.2.1): clients do not ask for the responder certificate's own status. */
const OID_OCSP_NOCHECK = '1.3.6.1.5.5.7.48.1.5';
const DER_NULL = new Uint8Array([0x05, 0x00]);

const DAY_MS = 86_400_000;
/** Backdating absorbs clock skew between the signer and verifiers. */
const BACKDATE_MS = 5 * 60_000;

export interface IssuedCertificate {
  readonly serialHex: string;
  readonly subject: string;
  readonly pem: string;
  readonly der: Buffer;
  readonly notBefore: Date;
  readonly notAfter: Date;
}

export interface Issuer {
  readonly certificate: x509.X509Certificate;
  readonly privateKey: CryptoKey;
}

/** A positive 127-bit serial (RFC 5280 asks for ≤ 20 octets, unpredictable); hex without sign padding. */
export function newSerialHex(): string {
  const bytes = randomBytes(16);
  bytes[0] = ((bytes[0] ?? 0) & 0x7f) | 0x01;
  return bytes.toString('hex');
}

/** Extractable, because CA and software signing keys are sealed (encrypted) into the database. */
export async function generateP256KeyPair(): Promise<CryptoKeyPair> {
  return webcrypto.subtle.generateKey(P256_SHA256, true, ['sign', 'verify']);
}

export async function exportPkcs8(key: CryptoKey): Promise<Buffer> {
  return Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
}

export async function exportSpki(key: CryptoKey): Promise<Buffer> {
  return Buffer.from(await webcrypto.subtle.exportKey('spki', key));
}

/** Non-extractable: once loaded for signing, a CA key never leaves the process again. */
export async function importSigningKey(pkcs8: Buffer): Promise<CryptoKey> {
  return webcrypto.subtle.importKey('pkcs8', pkcs8, P256_SHA256, false, ['sign']);
}

function name(org: string, commonName: string): x509.JsonName {
  // JSON form, not an RFC 4514 string: an org containing ',' or '=' cannot inject attributes.
  return [{ O: [org] }, { CN: [commonName] }];
}

function validity(now: Date, days: number, cap?: Date): { notBefore: Date; notAfter: Date } {
  const notBefore = new Date(Math.floor((now.getTime() - BACKDATE_MS) / 1000) * 1000);
  let notAfter = new Date(Math.floor((now.getTime() + days * DAY_MS) / 1000) * 1000);
  // A certificate outliving its issuer would fail path validation at the end of its life.
  if (cap && notAfter > cap) notAfter = cap;
  return { notBefore, notAfter };
}

function issued(cert: x509.X509Certificate, serialHex: string): IssuedCertificate {
  return {
    serialHex,
    subject: cert.subject,
    pem: cert.toString('pem'),
    der: Buffer.from(cert.rawData),
    notBefore: cert.notBefore,
    notAfter: cert.notAfter,
  };
}

export async function createRootCertificate(params: {
  org: string;
  keys: CryptoKeyPair;
  serialHex: string;
  now: Date;
  validityDays?: number;
}): Promise<IssuedCertificate> {
  const { notBefore, notAfter } = validity(params.now, params.validityDays ?? 3650);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: params.serialHex,
    name: name(params.org, 'Cairn Root CA'),
    notBefore,
    notAfter,
    keys: params.keys,
    signingAlgorithm: P256_SHA256,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(params.keys.publicKey),
    ],
  });
  return issued(cert, params.serialHex);
}

export async function createIntermediateCertificate(params: {
  org: string;
  publicKey: CryptoKey;
  issuer: Issuer;
  serialHex: string;
  now: Date;
  validityDays?: number;
}): Promise<IssuedCertificate> {
  return issue({ ...params, commonName: 'Cairn Intermediate CA', validityDays: params.validityDays ?? 1825 }, [
    // pathLen 0: this CA issues end-entity certificates only.
    new x509.BasicConstraintsExtension(true, 0, true),
    // digitalSignature because this CA signs OCSP responses itself when its delegated responder is missing.
    new x509.KeyUsagesExtension(
      x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
      true,
    ),
  ]);
}

/**
 * A certificate the issuer signs: its validity capped by the issuer's end, and after `extensions` the subject's and
 * the authority's key identifiers, then `trailing`.
 */
async function issue(
  params: {
    org: string;
    commonName: string;
    publicKey: CryptoKey | x509.PublicKey;
    issuer: Issuer;
    serialHex: string;
    now: Date;
    validityDays: number;
  },
  extensions: x509.Extension[],
  trailing: x509.Extension[] = [],
): Promise<IssuedCertificate> {
  const { notBefore, notAfter } = validity(params.now, params.validityDays, params.issuer.certificate.notAfter);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: params.serialHex,
    subject: name(params.org, params.commonName),
    issuer: params.issuer.certificate.subjectName,
    notBefore,
    notAfter,
    publicKey: params.publicKey,
    signingKey: params.issuer.privateKey,
    signingAlgorithm: P256_SHA256,
    extensions: [
      ...extensions,
      await x509.SubjectKeyIdentifierExtension.create(params.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(params.issuer.certificate.publicKey),
      ...trailing,
    ],
  });
  return issued(cert, params.serialHex);
}

export async function createSigningCertificate(params: {
  org: string;
  /** n of "Cairn Signing <n>". */
  sequence: number;
  /** SPKI DER of the signing key (from node:crypto or from the HSM token). */
  subjectPublicKey: Buffer;
  issuer: Issuer;
  serialHex: string;
  ocspUrl: string;
  now: Date;
  validityDays: number;
}): Promise<IssuedCertificate> {
  return issue(
    {
      ...params,
      commonName: `Cairn Signing ${params.sequence}`,
      publicKey: new x509.PublicKey(params.subjectPublicKey),
    },
    endEntity([EKU_C2PA_CLAIM_SIGNING, EKU_EMAIL_PROTECTION], false),
    [new x509.AuthorityInfoAccessExtension({ ocsp: [new x509.GeneralName('url', params.ocspUrl)] })],
  );
}

/** An end entity's leading extensions: not a CA, digitalSignature only, these extended key usages. */
function endEntity(ekus: string[], ekuCritical: boolean): x509.Extension[] {
  return [
    new x509.BasicConstraintsExtension(false, undefined, false),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
    new x509.ExtendedKeyUsageExtension(ekus, ekuCritical),
  ];
}

/** What the intermediate's short-lived service certificates (OCSP responder, time-stamping authority) are made from. */
export interface ServiceCertificateParams {
  org: string;
  sequence: number;
  publicKey: CryptoKey;
  issuer: Issuer;
  serialHex: string;
  now: Date;
  validityDays: number;
}

/**
 * An end-entity certificate of one of Cairn's own services under the intermediate: digitalSignature only, the
 * service's EKU, and whatever extension the service's profile adds.
 */
async function createServiceCertificate(
  params: ServiceCertificateParams,
  profile: { commonName: string; eku: string; ekuCritical: boolean; extra?: x509.Extension[] },
): Promise<IssuedCertificate> {
  return issue(
    { ...params, commonName: `${profile.commonName} ${params.sequence}` },
    endEntity([profile.eku], profile.ekuCritical),
    profile.extra,
  );
}

/**
 * The intermediate's delegated OCSP responder (RFC 6960 §4.2.2.2): an end-entity certificate with the
 * OCSPSigning EKU, issued by the CA whose certificates it answers for. c2pa-rs only accepts OCSP responses
 * signed this way (a response signed by the CA itself, with no responder certificate in it, is ignored as
 * unverifiable). Short-lived and marked ocsp-nocheck, since nobody can ask about its own revocation.
 */
export function createOcspResponderCertificate(params: ServiceCertificateParams): Promise<IssuedCertificate> {
  return createServiceCertificate(params, {
    commonName: 'Cairn OCSP Responder',
    eku: EKU_OCSP_SIGNING,
    ekuCritical: false,
    extra: [new x509.Extension(OID_OCSP_NOCHECK, false, DER_NULL)],
  });
}

/**
 * The time-stamping authority's certificate (RFC 3161 §2.3): an end-entity certificate under the intermediate whose
 * extended key usage is id-kp-timeStamping alone and critical, which is what c2pa-rs checks a token's signer
 * against. Issued like the OCSP responder's: short-lived, renewed by the periodic maintenance.
 */
export function createTsaCertificate(params: ServiceCertificateParams): Promise<IssuedCertificate> {
  return createServiceCertificate(params, {
    commonName: 'Cairn Time-Stamping Authority',
    eku: EKU_TIME_STAMPING,
    ekuCritical: true,
  });
}

export function parseCertificatePem(pem: string): x509.X509Certificate {
  return new x509.X509Certificate(pem);
}
