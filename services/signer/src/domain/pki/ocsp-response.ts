import type { webcrypto } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import {
  OID,
  OcspResponseStatus,
  REVOCATION_REASONS,
  hashForOid,
  issuerIdentity,
  ocspCrypto,
  parseCertificate,
  responderKeyHash,
  serialHexOf,
  wholeSeconds,
  type HashName,
  type OcspResponseStatusName,
  type RevocationReason,
} from '@cairn/ocsp';

/**
 * OCSP responder (RFC 6960) for the certificates the signer issued. Answers are signed on behalf of the
 * issuing CA (the intermediate) by its delegated responder certificate, included in the response, so a
 * verifier needs nothing beyond the chain it already has. Responses carry thisUpdate/nextUpdate, a byKey
 * responder id, and the request's nonce when it sent one.
 */

/**
 * A CA we answer for. Answers are signed by its delegated responder when it has one (what c2pa-rs requires),
 * otherwise by the CA key itself (what RFC 6960 clients such as OpenSSL accept as well).
 */
export interface OcspIssuer {
  readonly serialHex: string;
  readonly certificateDer: Buffer;
  readonly privateKey: webcrypto.CryptoKey;
  /** A certificate issued by this CA with the OCSPSigning EKU, and its key. */
  readonly responder?: { readonly certificateDer: Buffer; readonly privateKey: webcrypto.CryptoKey };
}

export type OcspCertStatus =
  | { readonly status: 'good' }
  | { readonly status: 'revoked'; readonly revokedAt: Date; readonly reason?: RevocationReason }
  | { readonly status: 'unknown' };

export interface OcspResponderDeps {
  /** The issuers this responder answers for; the first one signs answers about certificates of no issuer of ours. */
  issuers(): Promise<readonly OcspIssuer[]>;
  /** Status of certificate `serialHex` issued by `issuerSerialHex`; `unknown` when we never issued it. */
  lookup(issuerSerialHex: string, serialHex: string): Promise<OcspCertStatus>;
  /** Path the responder is mounted at (the pathname of OCSP_PUBLIC_URL). Default '/ocsp'. */
  readonly basePath?: string;
  /** nextUpdate − thisUpdate. Default 3600. */
  readonly validitySeconds?: number;
  readonly clock?: () => Date;
  /** Failures that became internalError/tryLater answers (for the log). */
  readonly onError?: (error: unknown) => void;
}

/** More CertIDs than this in one request is not a real client. */
const MAX_CERT_IDS = 32;

interface PreparedIssuer {
  readonly issuer: OcspIssuer;
  readonly certificate: pkijs.Certificate;
  /** Whoever signs the answers: the delegated responder, or the CA itself. */
  readonly signer: {
    readonly certificate: pkijs.Certificate;
    readonly privateKey: webcrypto.CryptoKey;
    readonly delegated: boolean;
  };
  readonly identities: Map<HashName, { nameHash: Buffer; keyHash: Buffer }>;
}

// Parsing and hashing an issuer is per certificate, not per request.
const prepared = new WeakMap<OcspIssuer, PreparedIssuer>();

function prepare(issuer: OcspIssuer): PreparedIssuer {
  let entry = prepared.get(issuer);
  if (!entry) {
    const certificate = parseCertificate(issuer.certificateDer);
    const signer = issuer.responder
      ? {
          certificate: parseCertificate(issuer.responder.certificateDer),
          privateKey: issuer.responder.privateKey,
          delegated: true,
        }
      : { certificate, privateKey: issuer.privateKey, delegated: false };
    entry = { issuer, certificate, signer, identities: new Map() };
    prepared.set(issuer, entry);
  }
  return entry;
}

function identity(entry: PreparedIssuer, hash: HashName): { nameHash: Buffer; keyHash: Buffer } {
  let id = entry.identities.get(hash);
  if (!id) {
    id = issuerIdentity(entry.certificate, hash);
    entry.identities.set(hash, id);
  }
  return id;
}

function issuedBy(entry: PreparedIssuer, certID: pkijs.CertID): boolean {
  const hash = hashForOid(certID.hashAlgorithm.algorithmId);
  if (!hash) return false;
  const id = identity(entry, hash);
  return (
    id.nameHash.equals(Buffer.from(certID.issuerNameHash.valueBlock.valueHexView)) &&
    id.keyHash.equals(Buffer.from(certID.issuerKeyHash.valueBlock.valueHexView))
  );
}

/** An OCSPResponse with no responseBytes: every status but `successful`. */
export function ocspStatusOnly(status: Exclude<OcspResponseStatusName, 'successful'>): Buffer {
  const response = new pkijs.OCSPResponse({
    responseStatus: new asn1js.Enumerated({ value: OcspResponseStatus[status] }),
  });
  return Buffer.from(response.toSchema().toBER(false));
}

function certStatusBlock(status: OcspCertStatus): asn1js.BaseBlock {
  switch (status.status) {
    case 'good':
      // good [0] IMPLICIT NULL
      return new asn1js.Primitive({ idBlock: { tagClass: 3, tagNumber: 0 } });
    case 'unknown':
      // unknown [2] IMPLICIT UnknownInfo (NULL)
      return new asn1js.Primitive({ idBlock: { tagClass: 3, tagNumber: 2 } });
    case 'revoked': {
      // revoked [1] IMPLICIT RevokedInfo { revocationTime, revocationReason [0] EXPLICIT CRLReason OPTIONAL }
      const value: asn1js.BaseBlock[] = [new asn1js.GeneralizedTime({ valueDate: wholeSeconds(status.revokedAt) })];
      if (status.reason) {
        value.push(
          new asn1js.Constructed({
            idBlock: { tagClass: 3, tagNumber: 0 },
            value: [new asn1js.Enumerated({ value: REVOCATION_REASONS[status.reason] })],
          }),
        );
      }
      return new asn1js.Constructed({ idBlock: { tagClass: 3, tagNumber: 1 }, value });
    }
  }
}

/**
 * The DER OCSPResponse answering `requestDer`. Never throws: an unparsable request is `malformedRequest`,
 * a failing lookup `tryLater`, anything else `internalError`.
 */
export async function answerOcspRequest(requestDer: Uint8Array, deps: OcspResponderDeps): Promise<Buffer> {
  let request: pkijs.OCSPRequest;
  try {
    request = pkijs.OCSPRequest.fromBER(requestDer);
  } catch {
    return ocspStatusOnly('malformedRequest');
  }
  const certIDs = request.tbsRequest.requestList.map((r) => r.reqCert);
  if (certIDs.length === 0 || certIDs.length > MAX_CERT_IDS) return ocspStatusOnly('malformedRequest');
  const issuers = await issuersOf(deps);
  const fallback = issuers?.[0];
  if (!issuers || !fallback) return ocspStatusOnly('tryLater');
  try {
    // One key signs the whole response: the issuer of the first CertID we recognise. CertIDs of any other
    // issuer are answered `unknown`, which is true from this responder's point of view.
    const answering =
      certIDs.map((id) => issuers.find((entry) => issuedBy(entry, id))).find((e) => e !== undefined) ?? fallback;
    const now = wholeSeconds((deps.clock ?? (() => new Date()))());
    const responses = await singleResponses(deps, answering, certIDs, now);
    if (!responses) return ocspStatusOnly('tryLater');
    return await signedResponse(request, answering, responses, now);
  } catch (error) {
    deps.onError?.(error);
    return ocspStatusOnly('internalError');
  }
}

/** The issuers this responder answers for; undefined (the error reported) when they cannot be loaded. */
async function issuersOf(deps: OcspResponderDeps): Promise<PreparedIssuer[] | undefined> {
  try {
    return (await deps.issuers()).map(prepare);
  } catch (error) {
    deps.onError?.(error);
    return undefined;
  }
}

/**
 * One answer per CertID, valid from `now` for the configured validity: the status looked up when `answering`
 * issued it, `unknown` otherwise. Undefined (the error reported) when a lookup fails.
 */
async function singleResponses(
  deps: OcspResponderDeps,
  answering: PreparedIssuer,
  certIDs: pkijs.CertID[],
  now: Date,
): Promise<pkijs.SingleResponse[] | undefined> {
  const nextUpdate = new Date(now.getTime() + (deps.validitySeconds ?? 3600) * 1000);
  const responses: pkijs.SingleResponse[] = [];
  for (const certID of certIDs) {
    let status: OcspCertStatus = { status: 'unknown' };
    if (issuedBy(answering, certID)) {
      try {
        status = await deps.lookup(answering.issuer.serialHex, serialHexOf(certID.serialNumber));
      } catch (error) {
        deps.onError?.(error);
        return undefined;
      }
    }
    responses.push(
      new pkijs.SingleResponse({ certID, certStatus: certStatusBlock(status), thisUpdate: now, nextUpdate }),
    );
  }
  return responses;
}

/** The successful OCSPResponse carrying `responses`, the request's nonce echoed, signed by `answering`'s signer. */
async function signedResponse(
  request: pkijs.OCSPRequest,
  answering: PreparedIssuer,
  responses: pkijs.SingleResponse[],
  now: Date,
): Promise<Buffer> {
  const nonce = request.tbsRequest.requestExtensions?.find((e) => e.extnID === OID.ocspNonce);
  const tbsResponseData = new pkijs.ResponseData({
    responderID: new asn1js.OctetString({ valueHex: responderKeyHash(answering.signer.certificate) }),
    producedAt: now,
    responses,
    ...(nonce
      ? {
          responseExtensions: [
            new pkijs.Extension({
              extnID: OID.ocspNonce,
              critical: false,
              extnValue: nonce.extnValue.valueBlock.valueHexView.slice().buffer,
            }),
          ],
        }
      : {}),
  });
  // A delegated responder ships its certificate and the CA's (c2pa-rs validates certs[0] as an end-entity
  // OCSPSigning certificate and chains it to its trust anchors). When the CA signs itself, `certs` stays
  // empty: the client has the CA certificate, and c2pa-rs would reject a CA certificate in certs[0].
  const basic = new pkijs.BasicOCSPResponse({
    tbsResponseData,
    ...(answering.signer.delegated ? { certs: [answering.signer.certificate, answering.certificate] } : {}),
  });
  await basic.sign(answering.signer.privateKey, 'SHA-256', ocspCrypto());
  const response = new pkijs.OCSPResponse({
    responseStatus: new asn1js.Enumerated({ value: OcspResponseStatus.successful }),
    responseBytes: new pkijs.ResponseBytes({
      responseType: OID.ocspBasic,
      response: new asn1js.OctetString({ valueHex: basic.toSchema().toBER(false) }),
    }),
  });
  return Buffer.from(response.toSchema().toBER(false));
}
