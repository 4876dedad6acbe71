// An RFC 3161 client for tests: builds TimeStampReq DER and reads a TimeStampResp, the way a relying party would
// (pkijs, independent of the responder's own encoder).
import { createHash, verify, X509Certificate } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';

export const HASH_OIDS = {
  sha1: '1.3.14.3.2.26',
  sha256: '2.16.840.1.101.3.4.2.1',
  sha512: '2.16.840.1.101.3.4.2.3',
} as const;

export function timeStampQuery(options: {
  hashOid: string;
  digest: Buffer;
  nonce?: Buffer;
  certReq?: boolean;
  policy?: string;
}): Buffer {
  const request = new pkijs.TimeStampReq({
    version: 1,
    messageImprint: new pkijs.MessageImprint({
      hashAlgorithm: new pkijs.AlgorithmIdentifier({ algorithmId: options.hashOid }),
      hashedMessage: new asn1js.OctetString({ valueHex: options.digest }),
    }),
    ...(options.policy ? { reqPolicy: options.policy } : {}),
    ...(options.nonce ? { nonce: new asn1js.Integer({ valueHex: options.nonce }) } : {}),
    certReq: options.certReq ?? true,
  });
  return Buffer.from(request.toSchema().toBER(false));
}

export interface TimeStampReply {
  /** PKIStatus: 0 granted, 2 rejection. */
  status: number;
  /** The PKIFailureInfo bits set (RFC 3161 §2.4.2: 0 badAlg, 2 badRequest, 5 badDataFormat, …). */
  failureBits: number[];
  token?: {
    genTime: Date;
    serialHex: string;
    nonceHex?: string;
    hashOid: string;
    imprintHex: string;
    policy: string;
    /** Subjects of the certificates the token carries, signer first. */
    certificateSubjects: string[];
    /** Serial of the signer's certificate, lower-case hex. */
    signerSerialHex: string;
    /** The signer certificate's extended key usages and whether that extension is critical. */
    signerEku: { oids: string[]; critical: boolean };
    signatureValid: boolean;
  };
}

function bitsOf(bitString: asn1js.BitString): number[] {
  const bytes = bitString.valueBlock.valueHexView;
  const bits: number[] = [];
  bytes.forEach((byte, i) => {
    for (let b = 0; b < 8; b++) if (byte & (0x80 >> b)) bits.push(i * 8 + b);
  });
  return bits;
}

function subjectOf(certificate: pkijs.Certificate): string {
  return certificate.subject.typesAndValues.map((tv) => String(tv.value.valueBlock.value)).join(', ');
}

/**
 * The CMS signature over the DER signed attributes (their [0] tag read as SET OF, RFC 5652 §5.4) under the first
 * certificate's key, and the messageDigest attribute over the TSTInfo.
 */
function signatureHolds(signed: pkijs.SignedData, signer: pkijs.Certificate | undefined, tstInfo: Buffer): boolean {
  const info = signed.signerInfos[0];
  if (!signer || !info?.signedAttrs) return false;
  const digest = info.signedAttrs.attributes.find((a) => a.type === '1.2.840.113549.1.9.4')?.values[0] as
    asn1js.OctetString | undefined;
  if (!digest || !createHash('sha256').update(tstInfo).digest().equals(Buffer.from(digest.valueBlock.valueHexView)))
    return false;
  const attrs = Buffer.from(info.signedAttrs.encodedValue);
  attrs[0] = 0x31;
  const key = new X509Certificate(Buffer.from(signer.toSchema().toBER(false))).publicKey;
  return verify('sha256', attrs, { key, dsaEncoding: 'der' }, Buffer.from(info.signature.valueBlock.valueHexView));
}

export function readTimeStampReply(der: Buffer): TimeStampReply {
  const response = pkijs.TimeStampResp.fromBER(der);
  const status = response.status.status;
  const failureBits = response.status.failInfo ? bitsOf(response.status.failInfo) : [];
  if (!response.timeStampToken) return { status, failureBits };
  const signed = new pkijs.SignedData({ schema: response.timeStampToken.content });
  const eContent = signed.encapContentInfo.eContent;
  if (!eContent) throw new Error('token without TSTInfo');
  const tstInfo = pkijs.TSTInfo.fromBER(eContent.valueBlock.valueHexView);
  const certificates = (signed.certificates ?? []).filter(
    (c): c is pkijs.Certificate => c instanceof pkijs.Certificate,
  );
  const ekuExtension = certificates[0]?.extensions?.find((e) => e.extnID === '2.5.29.37');
  const eku = ekuExtension?.parsedValue as pkijs.ExtKeyUsage | undefined;
  const signatureValid = signatureHolds(signed, certificates[0], Buffer.from(eContent.valueBlock.valueHexView));
  return {
    status,
    failureBits,
    token: {
      genTime: tstInfo.genTime,
      serialHex: Buffer.from(tstInfo.serialNumber.valueBlock.valueHexView).toString('hex'),
      ...(tstInfo.nonce ? { nonceHex: Buffer.from(tstInfo.nonce.valueBlock.valueHexView).toString('hex') } : {}),
      hashOid: tstInfo.messageImprint.hashAlgorithm.algorithmId,
      imprintHex: Buffer.from(tstInfo.messageImprint.hashedMessage.valueBlock.valueHexView).toString('hex'),
      policy: tstInfo.policy,
      certificateSubjects: certificates.map(subjectOf),
      signerSerialHex: Buffer.from(certificates[0]?.serialNumber.valueBlock.valueHexView ?? []).toString('hex'),
      signerEku: { oids: eku?.keyPurposes ?? [], critical: ekuExtension?.critical ?? false },
      signatureValid: signatureValid === true,
    },
  };
}
