import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
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

const MAX_REQUEST_BYTES = 16 * 1024;
/** More CertIDs than this in one request is not a real client. */
const MAX_CERT_IDS = 32;
const OCSP_RESPONSE_TYPE = 'application/ocsp-response';

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

function normalizeBasePath(path: string): string {
  const trimmed = path.replace(/\/+$/, '');
  return trimmed === '' ? '' : trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
}

/** GET form (RFC 6960 Appendix A.1): the URL-encoded base64 of the DER request; base64url accepted too. */
function decodeGetRequest(encoded: string): Buffer | undefined {
  let text: string;
  try {
    text = decodeURIComponent(encoded);
  } catch {
    return undefined;
  }
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) return undefined;
  const der = Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  return der.length > 0 ? der : undefined;
}

/** The request body, or `too_large` as soon as it passes `limit` bytes (nothing more is buffered). */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer | 'too_large'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > limit) {
        done = true;
        resolve('too_large');
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (!done) resolve(Buffer.concat(chunks));
    });
    req.on('error', reject);
  });
}

function sendOcsp(res: ServerResponse, body: Buffer, cacheable: boolean): void {
  res.statusCode = 200;
  res.setHeader('Content-Type', OCSP_RESPONSE_TYPE);
  res.setHeader('Content-Length', body.length);
  // GET answers may sit in HTTP caches (RFC 5019 §6); keep that short so a revocation shows quickly.
  res.setHeader('Cache-Control', cacheable ? 'max-age=60, public, no-transform, must-revalidate' : 'no-store');
  res.end(body);
}

function sendText(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.statusCode = status;
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.end(text);
}

/**
 * node:http handler: POST `<basePath>` with an `application/ocsp-request` body, or
 * GET `<basePath>/<url-encoded base64 request>` (also `/<request>`, see below). Anything else is
 * 404/405/413 (plain HTTP errors, since it is not an OCSP request at all). Meant for a server of its own
 * (startOcspServer), not to be mounted next to other routes.
 */
export function createOcspHandler(deps: OcspResponderDeps): (req: IncomingMessage, res: ServerResponse) => void {
  const base = normalizeBasePath(deps.basePath ?? '/ocsp');
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (req.method === 'POST') {
      if (path !== base && path !== `${base}/`) return sendText(res, 404, 'not found');
      const body = await readBody(req, MAX_REQUEST_BYTES);
      if (body === 'too_large') return sendText(res, 413, 'request too large', { Connection: 'close' });
      return sendOcsp(res, await answerOcspRequest(body, deps), false);
    }
    if (req.method === 'GET') {
      const underBase = path.startsWith(`${base}/`);
      // c2pa-rs builds its GET URL by URL-joining the request onto the AIA URL, which replaces the last
      // path segment when the URL has no trailing slash: http://host/ocsp becomes http://host/<request>.
      // The responder has its own port, so a request at the root is accepted as well.
      const encoded = underBase ? path.slice(base.length + 1) : path.slice(1);
      if (encoded.length > (MAX_REQUEST_BYTES * 4) / 3 + 4) return sendText(res, 414, 'request too large');
      const der = decodeGetRequest(encoded);
      if (!der)
        return underBase ? sendOcsp(res, ocspStatusOnly('malformedRequest'), false) : sendText(res, 404, 'not found');
      return sendOcsp(res, await answerOcspRequest(der, deps), true);
    }
    return sendText(res, 405, 'method not allowed', { Allow: 'GET, POST' });
  };
  return (req, res) => {
    handle(req, res).catch((error: unknown) => {
      deps.onError?.(error);
      if (!res.headersSent) sendOcsp(res, ocspStatusOnly('internalError'), false);
      else res.destroy();
    });
  };
}

export interface OcspServer {
  readonly server: Server;
  readonly port: number;
  close(): Promise<void>;
}

/** Listens with `handler` on host:port (port 0 picks a free one). */
export function startOcspServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  host: string,
  port: number,
): Promise<OcspServer> {
  const server = createServer(handler);
  // OCSP requests are a few hundred bytes: a client that takes longer than this is not a client.
  server.requestTimeout = 10_000;
  server.headersTimeout = 5_000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address() as AddressInfo;
      resolve({
        server,
        port: address.port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
