// OCSP client (RFC 6960): what the verifier uses to ask a certificate's responder about it. Depends only on
// ./common.js (pkijs, asn1js, node builtins).
import { createHash, randomBytes } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { boundedRequest, type DestinationPolicy } from '@cairn/outbound';
import {
  OID,
  OcspResponseStatus,
  nonceExtensionValue,
  ocspCrypto,
  ocspUrlsOf,
  parseCertificate,
  pemCertificatesToDer,
  responderKeyHash,
  revocationReasonName,
  type RevocationReason,
} from './common.js';

export type OcspCheckStatus = 'good' | 'revoked' | 'unknown' | 'unavailable';

export interface OcspCheckResult {
  readonly status: OcspCheckStatus;
  /** ISO 8601, when revoked. */
  readonly revokedAt?: string;
  readonly revocationReason?: RevocationReason;
  /** Why the answer is `unavailable` (for logs; not for end users). */
  readonly detail?: string;
  /**
   * Until when the responder vouches for a `good`, `revoked` or `unknown` answer (its nextUpdate); absent when it
   * gave none, which RFC 6960 reads as "newer information is always available": not to be kept.
   */
  readonly nextUpdate?: Date;
}

export interface OcspCheckOptions {
  /** POST (default) or GET (RFC 6960 Appendix A.1; cacheable). */
  readonly method?: 'POST' | 'GET';
  /** CertID hash. SHA-1 is what every responder supports (it identifies, it does not protect). */
  readonly hashAlgorithm?: 'SHA-1' | 'SHA-256';
  /** Tolerated clock difference with the responder. Default 5 minutes. */
  readonly clockSkewMs?: number;
  /** A response with neither our nonce nor a nextUpdate must be younger than this. Default 1 day. */
  readonly maxAgeMs?: number;
  readonly now?: () => Date;
  /**
   * Where the request may go. The responder's address comes from the certificate, which whoever made the file
   * chose: by default nothing internal (loopback included) is reached. Development passes `allowLoopback` to
   * reach the signer's own responder on this machine.
   */
  readonly policy?: DestinationPolicy;
}

/** The default: public addresses only, checked after DNS resolution. */
export const PUBLIC_ONLY: DestinationPolicy = { httpsOnly: false, blockInternal: true };

const MAX_RESPONSE_BYTES = 256 * 1024;

const unavailable = (detail: string): OcspCheckResult => ({ status: 'unavailable', detail });

/**
 * Asks `url` whether `leafPem` (issued by `issuerPem`) is revoked, and checks the answer: signed by the
 * issuer itself or by a responder certificate the issuer delegated (EKU OCSPSigning), about this
 * certificate, fresh, and echoing our nonce when the responder echoes one. Never throws: anything that
 * prevents a trustworthy answer is `unavailable`.
 */
export async function checkOcsp(
  leafPem: string,
  issuerPem: string,
  url: string,
  timeoutMs: number,
  options: OcspCheckOptions = {},
): Promise<OcspCheckResult> {
  try {
    return await check(leafPem, issuerPem, url, timeoutMs, options);
  } catch (error) {
    return unavailable(messageOf(error));
  }
}

function messageOf(error: unknown): string {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : String(error);
}

/** The OCSP URLs in a certificate's Authority Information Access extension (empty when it has none). */
export function ocspUrlsOfCertificate(pem: string): string[] {
  const cert = certificateOf(pem);
  return cert ? ocspUrlsOf(cert) : [];
}

/**
 * What a verifier learns about the same few certificates on every check and that never changes: their parsed form
 * (by PEM), and which delegated responder certificates their CA signed for OCSP signing. Nothing about an answer
 * is kept: every check asks the responder. Bounded (oldest out): files name whatever certificates they like.
 */
const KNOWN_LIMIT = 256;
const parsedCertificates = new Map<string, pkijs.Certificate>();
const delegatedResponders = new Set<string>();

function remember<K, V>(known: Map<K, V> | Set<K>, key: K, value?: V): void {
  if (known instanceof Map) known.set(key, value as V);
  else known.add(key);
  if (known.size > KNOWN_LIMIT) known.delete(known.keys().next().value as K);
}

/** The first certificate of a PEM, parsed once; undefined when there is none. A parse error throws (as before). */
function certificateOf(pem: string): pkijs.Certificate | undefined {
  const known = parsedCertificates.get(pem);
  if (known) return known;
  const der = pemCertificatesToDer(pem)[0];
  if (!der) return undefined;
  const cert = parseCertificate(der);
  remember(parsedCertificates, pem, cert);
  return cert;
}

/** Identifies a certificate issued by `issuer` by its signed parts (the signature covers everything else). */
function delegationKey(candidate: pkijs.Certificate, issuer: pkijs.Certificate): string {
  return createHash('sha256')
    .update(Buffer.from(candidate.tbsView))
    .update(Buffer.from(candidate.signatureValue.valueBlock.valueHexView))
    .update(Buffer.from(issuer.tbsView))
    .digest('hex');
}

async function check(
  leafPem: string,
  issuerPem: string,
  url: string,
  timeoutMs: number,
  options: OcspCheckOptions,
): Promise<OcspCheckResult> {
  const leaf = certificateOf(leafPem);
  const issuer = certificateOf(issuerPem);
  if (!leaf || !issuer) return unavailable('certificate PEM missing');
  const crypto = ocspCrypto();

  const request = new pkijs.OCSPRequest();
  await request.createForCertificate(
    leaf,
    { hashAlgorithm: options.hashAlgorithm ?? 'SHA-1', issuerCertificate: issuer },
    crypto,
  );
  const nonce = randomBytes(16);
  request.tbsRequest.requestExtensions = [
    new pkijs.Extension({ extnID: OID.ocspNonce, critical: false, extnValue: nonceExtensionValue(nonce) }),
  ];
  const requestDer = Buffer.from(request.toSchema(true).toBER(false));
  const ourCertID = request.tbsRequest.requestList[0]?.reqCert;
  if (!ourCertID) return unavailable('could not build the request');

  const body = await fetchResponse(url, requestDer, timeoutMs, options.method ?? 'POST', options.policy ?? PUBLIC_ONLY);
  if (typeof body === 'string') return unavailable(body);

  const response = pkijs.OCSPResponse.fromBER(body);
  const status = response.responseStatus.valueBlock.valueDec;
  if (status !== OcspResponseStatus.successful) {
    const name = Object.entries(OcspResponseStatus).find(([, v]) => v === status)?.[0] ?? String(status);
    return unavailable(`responder answered ${name}`);
  }
  if (!response.responseBytes || response.responseBytes.responseType !== OID.ocspBasic)
    return unavailable('not a basic OCSP response');
  const basic = pkijs.BasicOCSPResponse.fromBER(response.responseBytes.response.valueBlock.valueHexView);

  const signer = await responderCertificate(basic, issuer, crypto, options);
  if (typeof signer === 'string') return unavailable(signer);
  const signatureOk = await crypto.verifyWithPublicKey(
    basic.tbsResponseData.tbsView,
    basic.signature,
    signer.subjectPublicKeyInfo,
    basic.signatureAlgorithm,
  );
  if (!signatureOk) return unavailable('response signature does not verify');

  const echoed = basic.tbsResponseData.responseExtensions?.find((e) => e.extnID === OID.ocspNonce);
  const nonceMatched =
    echoed !== undefined &&
    Buffer.from(echoed.extnValue.valueBlock.valueHexView).equals(Buffer.from(nonceExtensionValue(nonce)));
  // RFC 8954 lets a responder ignore the nonce (pre-produced answers); a wrong one is a replay.
  if (echoed && !nonceMatched) return unavailable('nonce mismatch');

  const single = basic.tbsResponseData.responses.find((r) => r.certID.isEqual(ourCertID));
  if (!single) return unavailable('response is not about this certificate');

  const now = (options.now ?? (() => new Date()))().getTime();
  const skew = options.clockSkewMs ?? 5 * 60_000;
  if (single.thisUpdate.getTime() > now + skew) return unavailable('response thisUpdate is in the future');
  if (single.nextUpdate && single.nextUpdate.getTime() < now - skew)
    return unavailable('response is stale (nextUpdate passed)');
  if (!single.nextUpdate && !nonceMatched && single.thisUpdate.getTime() < now - (options.maxAgeMs ?? 86_400_000)) {
    return unavailable('response is too old');
  }

  const answer = certStatusOf(single.certStatus as asn1js.BaseBlock);
  return answer.status === 'unavailable' || !single.nextUpdate ? answer : { ...answer, nextUpdate: single.nextUpdate };
}

/** One exchange with the responder: no redirects, one deadline, a capped answer (see @cairn/outbound). */
async function fetchResponse(
  url: string,
  requestDer: Buffer,
  timeoutMs: number,
  method: 'POST' | 'GET',
  policy: DestinationPolicy,
): Promise<Buffer | string> {
  const target =
    method === 'POST' ? url : `${url.replace(/\/+$/, '')}/${encodeURIComponent(requestDer.toString('base64'))}`;
  const answer = await boundedRequest(target, {
    method,
    headers:
      method === 'POST'
        ? { 'Content-Type': 'application/ocsp-request', Accept: 'application/ocsp-response' }
        : { Accept: 'application/ocsp-response' },
    ...(method === 'POST' ? { body: requestDer } : {}),
    timeoutMs,
    maxBytes: MAX_RESPONSE_BYTES,
    policy,
  });
  if (!answer.ok)
    return answer.error.startsWith('no answer within')
      ? 'responder timed out'
      : `responder unreachable: ${answer.error}`;
  if (answer.status !== 200) return `responder answered HTTP ${answer.status}`;
  return answer.body;
}

/** The certificate whose key must have signed the response, or why there is none we may trust. */
async function responderCertificate(
  basic: pkijs.BasicOCSPResponse,
  issuer: pkijs.Certificate,
  crypto: pkijs.CryptoEngine,
  options: OcspCheckOptions,
): Promise<pkijs.Certificate | string> {
  const responderID: unknown = basic.tbsResponseData.responderID;
  const matches = (cert: pkijs.Certificate): boolean => {
    if (responderID instanceof pkijs.RelativeDistinguishedNames) return cert.subject.isEqual(responderID);
    if (responderID instanceof asn1js.OctetString)
      return responderKeyHash(cert).equals(Buffer.from(responderID.valueBlock.valueHexView));
    return false;
  };
  if (matches(issuer)) return issuer;

  // A delegated responder: issued by the same CA for exactly this purpose (RFC 6960 §4.2.2.2).
  const candidate = (basic.certs ?? []).find(matches);
  if (!candidate) return 'responder is neither the issuer nor a delegate it certified';
  // The signature and the EKU of a delegate never change: checked once per delegate; its validity every time.
  const delegation = delegationKey(candidate, issuer);
  if (!delegatedResponders.has(delegation)) {
    if (!(await candidate.verify(issuer, crypto))) return 'delegated responder certificate is not signed by the issuer';
    const eku = candidate.extensions?.find((e) => e.extnID === OID.extKeyUsage)?.parsedValue as
      pkijs.ExtKeyUsage | undefined;
    if (!eku?.keyPurposes.includes(OID.ocspSigning)) return 'delegated responder certificate lacks the OCSPSigning EKU';
    remember(delegatedResponders, delegation);
  }
  const now = (options.now ?? (() => new Date()))().getTime();
  if (candidate.notBefore.value.getTime() > now || candidate.notAfter.value.getTime() < now)
    return 'delegated responder certificate is expired';
  return candidate;
}

function certStatusOf(block: asn1js.BaseBlock): OcspCheckResult {
  if (block.idBlock.tagClass !== 3) return unavailable('malformed certStatus');
  switch (block.idBlock.tagNumber) {
    case 0:
      return { status: 'good' };
    case 2:
      return { status: 'unknown' };
    case 1: {
      const values = (block as asn1js.Constructed).valueBlock.value;
      const time = values[0];
      if (!(time instanceof asn1js.GeneralizedTime)) return unavailable('malformed revocationTime');
      const reasonBlock = values[1] as asn1js.Constructed | undefined;
      const reasonValue = reasonBlock?.valueBlock?.value?.[0];
      const reason =
        reasonValue instanceof asn1js.Enumerated ? revocationReasonName(reasonValue.valueBlock.valueDec) : undefined;
      return {
        status: 'revoked',
        revokedAt: time.toDate().toISOString(),
        ...(reason ? { revocationReason: reason } : {}),
      };
    }
    default:
      return unavailable('malformed certStatus');
  }
}
