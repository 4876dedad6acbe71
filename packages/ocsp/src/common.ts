// Shared by the OCSP responder and the OCSP client. Depends on pkijs/asn1js and node builtins only (the
// verifier imports the client, so nothing here may reach into the signer's database or configuration).
import { createHash, webcrypto } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';

export const OID = {
  ocspBasic: '1.3.6.1.5.5.7.48.1.1',
  ocspNonce: '1.3.6.1.5.5.7.48.1.2',
  ocspSigning: '1.3.6.1.5.5.7.3.9',
  authorityInfoAccess: '1.3.6.1.5.5.7.1.1',
  accessMethodOcsp: '1.3.6.1.5.5.7.48.1',
  extKeyUsage: '2.5.29.37',
} as const;

/** CertID hash algorithms a responder may be asked with (RFC 6960 clients mostly send SHA-1). */
const HASH_BY_OID: Readonly<Record<string, 'sha1' | 'sha256' | 'sha384' | 'sha512'>> = {
  '1.3.14.3.2.26': 'sha1',
  '2.16.840.1.101.3.4.2.1': 'sha256',
  '2.16.840.1.101.3.4.2.2': 'sha384',
  '2.16.840.1.101.3.4.2.3': 'sha512',
};

export type HashName = (typeof HASH_BY_OID)[string];

export function hashForOid(oid: string): HashName | undefined {
  return HASH_BY_OID[oid];
}

/** OCSPResponseStatus (RFC 6960 §4.2.1). */
export const OcspResponseStatus = {
  successful: 0,
  malformedRequest: 1,
  internalError: 2,
  tryLater: 3,
  sigRequired: 5,
  unauthorized: 6,
} as const;

export type OcspResponseStatusName = keyof typeof OcspResponseStatus;

/** CRLReason (RFC 5280 §5.3.1); 7 is unused. */
export const REVOCATION_REASONS = {
  unspecified: 0,
  keyCompromise: 1,
  cACompromise: 2,
  affiliationChanged: 3,
  superseded: 4,
  cessationOfOperation: 5,
  certificateHold: 6,
  removeFromCRL: 8,
  privilegeWithdrawn: 9,
  aACompromise: 10,
} as const;

export type RevocationReason = keyof typeof REVOCATION_REASONS;

export function isRevocationReason(value: string): value is RevocationReason {
  return Object.hasOwn(REVOCATION_REASONS, value);
}

export function revocationReasonName(code: number): RevocationReason | undefined {
  return (Object.entries(REVOCATION_REASONS) as Array<[RevocationReason, number]>).find(([, c]) => c === code)?.[0];
}

let engine: pkijs.CryptoEngine | undefined;

/** pkijs needs an explicit engine on Node; passing it to every call keeps pkijs's global engine untouched. */
export function ocspCrypto(): pkijs.CryptoEngine {
  engine ??= new pkijs.CryptoEngine({
    name: 'node',
    crypto: webcrypto,
  });
  return engine;
}

/** Every CERTIFICATE block of a PEM text, as DER. */
export function pemCertificatesToDer(pem: string): Buffer[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  return blocks.map((block) => Buffer.from(block.replace(/-----(BEGIN|END) CERTIFICATE-----|\s+/g, ''), 'base64'));
}

export function derToPem(der: Uint8Array): string {
  const b64 = Buffer.from(der).toString('base64');
  return `-----BEGIN CERTIFICATE-----\n${b64.replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END CERTIFICATE-----\n`;
}

export function parseCertificate(der: Uint8Array): pkijs.Certificate {
  return pkijs.Certificate.fromBER(der);
}

/** The hash inputs of a CertID for certificates issued by `issuer` (RFC 6960 §4.1.1). */
export function issuerIdentity(issuer: pkijs.Certificate, hash: HashName): { nameHash: Buffer; keyHash: Buffer } {
  const nameDer = Buffer.from(issuer.subject.toSchema().toBER(false));
  const keyBits = Buffer.from(issuer.subjectPublicKeyInfo.subjectPublicKey.valueBlock.valueHexView);
  return {
    nameHash: createHash(hash).update(nameDer).digest(),
    keyHash: createHash(hash).update(keyBits).digest(),
  };
}

/** SHA-1 of the issuer's subjectPublicKey bits: the `byKey` ResponderID (RFC 6960 §4.2.1). */
export function responderKeyHash(cert: pkijs.Certificate): Buffer {
  return createHash('sha1')
    .update(Buffer.from(cert.subjectPublicKeyInfo.subjectPublicKey.valueBlock.valueHexView))
    .digest();
}

/** Serial numbers as lower-case hex without DER sign padding, the form the signer stores. */
export function serialHexOf(integer: asn1js.Integer): string {
  const hex = Buffer.from(integer.valueBlock.valueHexView)
    .toString('hex')
    .replace(/^(00)+(?=.)/, '');
  return hex.toLowerCase();
}

export function normalizeSerialHex(serialHex: string): string {
  return serialHex.toLowerCase().replace(/^(00)+(?=.)/, '');
}

/** OCSP times are GeneralizedTime without fractional seconds (RFC 5019 §2.2.4; some parsers reject them). */
export function wholeSeconds(date: Date): Date {
  return new Date(Math.floor(date.getTime() / 1000) * 1000);
}

/** RFC 8954 nonce extension value: an OCTET STRING holding the nonce bytes. */
export function nonceExtensionValue(nonce: Uint8Array): ArrayBuffer {
  return new asn1js.OctetString({ valueHex: nonce }).toBER(false);
}

/** The OCSP URLs of a certificate's Authority Information Access extension. */
export function ocspUrlsOf(cert: pkijs.Certificate): string[] {
  const aia = cert.extensions?.find((e) => e.extnID === OID.authorityInfoAccess);
  if (!aia) return [];
  const parsed = pkijs.InfoAccess.fromBER(aia.extnValue.valueBlock.valueHexView);
  return parsed.accessDescriptions
    .filter((d) => d.accessMethod === OID.accessMethodOcsp && d.accessLocation.type === 6)
    .map((d) => String(d.accessLocation.value));
}
