import { createHash, randomBytes, type webcrypto } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { ocspCrypto } from '@cairn/ocsp';

/**
 * RFC 3161 time-stamp protocol, encode and decode only (no I/O): parse a TimeStampReq, answer it with a
 * TimeStampResp that is either a rejection (PKIStatusInfo alone) or a granted TimeStampToken.
 *
 * The token is what c2pa-rs 0.90 accepts as `sigTst2`: CMS SignedData with encapsulated TSTInfo, signed
 * attributes contentType + messageDigest + signingCertificateV2 (ESSCertIDv2, RFC 5816), signed by an
 * ECDSA P-256 key whose certificate carries the sole, critical id-kp-timeStamping EKU, and the TSA
 * certificate plus its issuer in `certificates` when the request asks for them (c2pa-rs always does, and
 * treats a token without certificates as untrusted).
 */

const OID = {
  tstInfo: '1.2.840.113549.1.9.16.1.4',
  contentType: '1.2.840.113549.1.9.3',
  messageDigest: '1.2.840.113549.1.9.4',
  signingCertificateV2: '1.2.840.113549.1.9.16.2.47',
  signedData: '1.2.840.113549.1.7.2',
} as const;

/** Message-imprint hashes accepted (RFC 3161 §2.4.1: a TSA refuses weak ones with badAlg). */
const IMPRINT_HASHES: Readonly<Record<string, { name: 'sha256' | 'sha384' | 'sha512'; length: number }>> = {
  '2.16.840.1.101.3.4.2.1': { name: 'sha256', length: 32 },
  '2.16.840.1.101.3.4.2.2': { name: 'sha384', length: 48 },
  '2.16.840.1.101.3.4.2.3': { name: 'sha512', length: 64 },
};

/**
 * Cairn's TSA policy (TSTInfo.policy). A UUID-derived OID (ITU-T X.667, arc 2.25) needs no registration and is
 * Cairn's alone; the policy it names is the one docs/operations.md states (host clock under NTP, ±1 s).
 */
export const CAIRN_TSA_POLICY_OID = '2.25.263213914361473470411106735396717357912';

/** PKIFailureInfo bits (RFC 3161 §2.4.2) a Cairn TSA answers with. */
export const TSP_FAILURES = {
  badAlg: 0,
  badRequest: 2,
  badDataFormat: 5,
  unacceptedPolicy: 15,
  unacceptedExtension: 16,
  systemFailure: 25,
} as const;
export type TspFailure = keyof typeof TSP_FAILURES;

const PKI_STATUS = { granted: 0, rejection: 2 } as const;

export interface TimeStampRequest {
  /** OID of the imprint's hash algorithm (SHA-256/384/512 only). */
  readonly hashOid: string;
  readonly hashedMessage: Buffer;
  /** DER INTEGER of the request's nonce, echoed in TSTInfo. */
  readonly nonce?: asn1js.Integer;
  readonly certReq: boolean;
}

export type ParsedTimeStampRequest =
  | { readonly ok: true; readonly request: TimeStampRequest }
  | { readonly ok: false; readonly failure: TspFailure; readonly text: string };

/** Parses a DER TimeStampReq; anything but a well-formed v1 request for a SHA-2 imprint under our policy is refused. */
export function parseTimeStampRequest(der: Uint8Array): ParsedTimeStampRequest {
  let request: pkijs.TimeStampReq;
  try {
    request = pkijs.TimeStampReq.fromBER(der);
  } catch {
    return { ok: false, failure: 'badDataFormat', text: 'not a DER TimeStampReq' };
  }
  if (request.version !== 1) return { ok: false, failure: 'badRequest', text: 'TimeStampReq version must be 1' };
  const hashOid = request.messageImprint.hashAlgorithm.algorithmId;
  const hash = IMPRINT_HASHES[hashOid];
  if (!hash) return { ok: false, failure: 'badAlg', text: 'message imprint must be SHA-256, SHA-384 or SHA-512' };
  const hashedMessage = Buffer.from(request.messageImprint.hashedMessage.valueBlock.valueHexView);
  if (hashedMessage.length !== hash.length)
    return { ok: false, failure: 'badDataFormat', text: `a ${hash.name} imprint is ${hash.length} bytes` };
  if (request.reqPolicy !== undefined && request.reqPolicy !== CAIRN_TSA_POLICY_OID)
    return { ok: false, failure: 'unacceptedPolicy', text: 'only the Cairn TSA policy is served' };
  // No extension is understood; RFC 3161 §2.4.2 has the TSA refuse rather than ignore them.
  if (request.extensions && request.extensions.length > 0)
    return { ok: false, failure: 'unacceptedExtension', text: 'no request extension is supported' };
  if (request.nonce && request.nonce.valueBlock.valueHexView.length > 32)
    return { ok: false, failure: 'badRequest', text: 'nonce longer than 32 bytes' };
  return {
    ok: true,
    request: {
      hashOid,
      hashedMessage,
      ...(request.nonce ? { nonce: request.nonce } : {}),
      certReq: request.certReq === true,
    },
  };
}

/** A DER named BIT STRING with one bit set (trailing zero bits dropped, as DER requires). */
function failureBits(bit: number): asn1js.BitString {
  const bytes = new Uint8Array(Math.floor(bit / 8) + 1);
  bytes[Math.floor(bit / 8)] = 0x80 >> (bit % 8);
  return new asn1js.BitString({ valueHex: bytes, unusedBits: 7 - (bit % 8) });
}

/** A TimeStampResp with status rejection and the failure named. */
export function timeStampRejection(failure: TspFailure, text?: string): Buffer {
  const value: asn1js.BaseBlock[] = [new asn1js.Integer({ value: PKI_STATUS.rejection })];
  if (text) value.push(new asn1js.Sequence({ value: [new asn1js.Utf8String({ value: text })] }));
  value.push(failureBits(TSP_FAILURES[failure]));
  const response = new asn1js.Sequence({ value: [new asn1js.Sequence({ value })] });
  return Buffer.from(response.toBER(false));
}

/** The TSA's credential: its certificate (time-stamping EKU), the issuing CA's, and its private key. */
export interface TsaCredential {
  readonly certificateDer: Buffer;
  readonly issuerCertificateDer: Buffer;
  readonly privateKey: webcrypto.CryptoKey;
}

export interface TokenOptions {
  /** Whole seconds are stamped; the accuracy states what that rounding and the host clock allow. */
  readonly genTime: Date;
  readonly accuracySeconds: number;
  readonly policyOid?: string;
  /** Test seam; default 16 random bytes (a positive 127-bit integer, unique without coordination). */
  readonly serial?: Buffer;
}

/** A positive random serial: unique across replicas without shared state (RFC 3161 §2.4.2 asks for uniqueness). */
function newSerial(): Buffer {
  const bytes = randomBytes(16);
  bytes[0] = ((bytes[0] ?? 0) & 0x7f) | 0x01;
  return bytes;
}

function attribute(type: string, value: asn1js.BaseBlock): pkijs.Attribute {
  return new pkijs.Attribute({ type, values: [value] });
}

/** signingCertificateV2 { certs: [ESSCertIDv2 { certHash = SHA-256(cert), issuerSerial }] } (hash alg default SHA-256). */
function signingCertificateV2(certificate: pkijs.Certificate, der: Buffer): asn1js.Sequence {
  const issuerSerial = new asn1js.Sequence({
    value: [
      // GeneralNames with one directoryName [4] (EXPLICIT, since Name is a CHOICE).
      new asn1js.Sequence({
        value: [
          new asn1js.Constructed({ idBlock: { tagClass: 3, tagNumber: 4 }, value: [certificate.issuer.toSchema()] }),
        ],
      }),
      new asn1js.Integer({ valueHex: certificate.serialNumber.valueBlock.valueHexView.slice().buffer }),
    ],
  });
  const essCertIdV2 = new asn1js.Sequence({
    value: [new asn1js.OctetString({ valueHex: createHash('sha256').update(der).digest() }), issuerSerial],
  });
  return new asn1js.Sequence({ value: [new asn1js.Sequence({ value: [essCertIdV2] })] });
}

// Parsing the certificates is per credential, not per token.
const parsedCredentials = new WeakMap<TsaCredential, { certificate: pkijs.Certificate; issuer: pkijs.Certificate }>();

function parsed(tsa: TsaCredential): { certificate: pkijs.Certificate; issuer: pkijs.Certificate } {
  let entry = parsedCredentials.get(tsa);
  if (!entry) {
    entry = {
      certificate: pkijs.Certificate.fromBER(tsa.certificateDer),
      issuer: pkijs.Certificate.fromBER(tsa.issuerCertificateDer),
    };
    parsedCredentials.set(tsa, entry);
  }
  return entry;
}

/**
 * pkijs always re-encodes eContent as a constructed (BER, chunked) OCTET STRING; DER, which RFC 3161 §2.4.2 asks
 * the token to be in and c2pa-rs decodes strictly, has the primitive form. Set after construction to keep it.
 */
function primitiveContent(eContentType: string, content: Buffer): pkijs.EncapsulatedContentInfo {
  const info = new pkijs.EncapsulatedContentInfo({ eContentType });
  info.eContent = new asn1js.OctetString({ valueHex: content });
  return info;
}

/** A granted TimeStampResp carrying a token over `request`'s imprint, signed by `tsa`. */
export async function issueTimeStampToken(
  request: TimeStampRequest,
  tsa: TsaCredential,
  options: TokenOptions,
): Promise<Buffer> {
  const { certificate, issuer } = parsed(tsa);
  const genTime = new Date(Math.floor(options.genTime.getTime() / 1000) * 1000);
  const tstInfo = new pkijs.TSTInfo({
    version: 1,
    policy: options.policyOid ?? CAIRN_TSA_POLICY_OID,
    messageImprint: new pkijs.MessageImprint({
      hashAlgorithm: new pkijs.AlgorithmIdentifier({ algorithmId: request.hashOid }),
      hashedMessage: new asn1js.OctetString({ valueHex: request.hashedMessage }),
    }),
    serialNumber: new asn1js.Integer({ valueHex: options.serial ?? newSerial() }),
    genTime,
    accuracy: new pkijs.Accuracy({ seconds: options.accuracySeconds }),
    ...(request.nonce ? { nonce: request.nonce } : {}),
  });
  const tstInfoDer = Buffer.from(tstInfo.toSchema().toBER(false));

  const signedData = new pkijs.SignedData({
    version: 3,
    encapContentInfo: primitiveContent(OID.tstInfo, tstInfoDer),
    signerInfos: [
      new pkijs.SignerInfo({
        version: 1,
        sid: new pkijs.IssuerAndSerialNumber({
          issuer: certificate.issuer,
          serialNumber: certificate.serialNumber,
        }),
        signedAttrs: new pkijs.SignedAndUnsignedAttributes({
          type: 0,
          attributes: [
            attribute(OID.contentType, new asn1js.ObjectIdentifier({ value: OID.tstInfo })),
            attribute(
              OID.messageDigest,
              new asn1js.OctetString({ valueHex: createHash('sha256').update(tstInfoDer).digest() }),
            ),
            attribute(OID.signingCertificateV2, signingCertificateV2(certificate, tsa.certificateDer)),
          ],
        }),
      }),
    ],
    ...(request.certReq ? { certificates: [certificate, issuer] } : {}),
  });
  await signedData.sign(tsa.privateKey, 0, 'SHA-256', undefined, ocspCrypto());

  const token = new pkijs.ContentInfo({ contentType: OID.signedData, content: signedData.toSchema(true) });
  const response = new asn1js.Sequence({
    value: [new asn1js.Sequence({ value: [new asn1js.Integer({ value: PKI_STATUS.granted })] }), token.toSchema()],
  });
  return Buffer.from(response.toBER(false));
}
