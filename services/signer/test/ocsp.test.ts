import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateKeyPairSync, randomBytes, webcrypto } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { sql } from 'drizzle-orm';
import type { CertificateAuthority, PkiOverview } from '../src/app/pki/certificate-authority.js';
import { createOcspHandler, startOcspServer, type OcspServer } from '../src/adapters/ocsp-responder.js';
import { checkOcsp, ocspUrlsOfCertificate, type OcspCheckOptions } from '@cairn/ocsp';
import {
  OID,
  nonceExtensionValue,
  ocspCrypto,
  parseCertificate,
  pemCertificatesToDer,
  responderKeyHash,
} from '@cairn/ocsp';
import { c2paTrustSettings, signWithC2pa } from '../src/adapters/c2pa/callback-signer.js';
import { createTestHierarchy } from './fixtures/hierarchy.js';
import { certificateAuthority, createPkiDb, testSettings, type PkiDb } from './fixtures/pki-db.js';
import { newBuilder, readValidation, releaseC2paHandles, signJpeg } from './fixtures/c2pa.js';
import { SoftwareKeyBackend } from '../src/adapters/key-backends.js';

/** The responders these tests run listen on loopback, which OCSP checks refuse unless told otherwise. */
const LOOPBACK = { policy: { httpsOnly: false, blockInternal: true, allowLoopback: true } };

let pki: PkiDb;
let server: OcspServer;
let url: string;
let ca: CertificateAuthority;
let overview: PkiOverview;
// The handler is bound per test (each gets a fresh CA); the server stays.
let inner: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();

beforeAll(async () => {
  pki = await createPkiDb();
  server = await startOcspServer((req, res) => inner(req, res), '127.0.0.1', 0);
  url = `http://127.0.0.1:${server.port}/ocsp`;
});
afterAll(async () => {
  await server.close();
  await pki.dispose();
  await releaseC2paHandles();
});
beforeEach(async () => {
  await pki.reset();
  // The AIA of the signing certificates names this test's responder, as OCSP_PUBLIC_URL would.
  ca = certificateAuthority(pki.db, testSettings({ ocspPublicUrl: url, ocspResponseValiditySeconds: 600 }));
  overview = await ca.ensureDevelopmentPki();
  inner = createOcspHandler(ca.ocspResponderDeps());
});

/** The development signing certificate's status as a relying party checks it at `responderUrl`. */
const checkSigning = (responderUrl: string, timeoutMs = 2000, options: OcspCheckOptions = {}) =>
  checkOcsp(overview.signing.pem, overview.intermediate.pem, responderUrl, timeoutMs, { ...LOOPBACK, ...options });

/** Starts a stand-in responder on a loopback port; answers its OCSP URL. */
async function listenOnLoopback(responder: Server): Promise<string> {
  await new Promise<void>((resolve) => responder.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(responder.address() as AddressInfo).port}/ocsp`;
}

async function post(
  body: Buffer,
  path = '/ocsp',
  contentType = 'application/ocsp-request',
): Promise<{ status: number; type: string | null; body: Buffer }> {
  const res = await fetch(`http://127.0.0.1:${server.port}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': contentType },
    body,
  });
  return { status: res.status, type: res.headers.get('content-type'), body: Buffer.from(await res.arrayBuffer()) };
}

/** The tag of the first response's certStatus ([0] good, [1] revoked, [2] unknown); pkijs types it as any. */
function certStatusTag(basic: pkijs.BasicOCSPResponse | undefined): number | undefined {
  const status = basic?.tbsResponseData.responses[0]?.certStatus as { idBlock: { tagNumber: number } } | undefined;
  return status?.idBlock.tagNumber;
}

function parseResponse(der: Buffer): { status: number; basic?: pkijs.BasicOCSPResponse } {
  const response = pkijs.OCSPResponse.fromBER(der);
  const status = response.responseStatus.valueBlock.valueDec;
  if (!response.responseBytes) return { status };
  return { status, basic: pkijs.BasicOCSPResponse.fromBER(response.responseBytes.response.valueBlock.valueHexView) };
}

/** An OCSP request for `serialHex` under `issuerPem`, with a nonce. */
async function requestFor(
  serialHex: string,
  issuerPem: string,
  nonce = randomBytes(16),
  hashAlgorithm: 'SHA-1' | 'SHA-256' = 'SHA-1',
): Promise<Buffer> {
  const issuer = parseCertificate(pemCertificatesToDer(issuerPem)[0] as Buffer);
  const subject = new pkijs.Certificate();
  subject.serialNumber = new asn1js.Integer({ valueHex: Buffer.from(serialHex, 'hex') });
  const request = new pkijs.OCSPRequest();
  await request.createForCertificate(subject, { hashAlgorithm, issuerCertificate: issuer }, ocspCrypto());
  request.tbsRequest.requestExtensions = [
    new pkijs.Extension({ extnID: OID.ocspNonce, extnValue: nonceExtensionValue(nonce) }),
  ];
  return Buffer.from(request.toSchema(true).toBER(false));
}

describe('OCSP responder and client over HTTP', () => {
  it('answers good, then revoked (with time and reason) after revoke()', async () => {
    expect(ocspUrlsOfCertificate(overview.signing.pem)).toEqual([url]);
    expect(await checkSigning(url)).toEqual({
      status: 'good',
      nextUpdate: expect.any(Date),
    });

    const revoked = await ca.revoke(overview.signing.serialHex, 'keyCompromise');
    expect(revoked.ok).toBe(true);
    const after = await checkSigning(url);
    expect(after.status).toBe('revoked');
    expect(after.revocationReason).toBe('keyCompromise');
    const revokedAt = new Date(after.revokedAt as string).getTime();
    expect(Math.abs(revokedAt - Date.now())).toBeLessThan(60_000);

    // Also through the GET form, and for the replacement, which is good.
    expect((await checkSigning(url, 2000, { method: 'GET' })).status).toBe('revoked');
    if (revoked.ok && revoked.replacement) {
      expect(
        await checkOcsp(revoked.replacement.pem, overview.intermediate.pem, url, 2000, {
          hashAlgorithm: 'SHA-256',
          ...LOOPBACK,
        }),
      ).toEqual({ status: 'good', nextUpdate: expect.any(Date) });
    }
  });

  it('answers a retired (rotated-out) certificate good: what it signed stays valid', async () => {
    await pki.db.execute(
      sql`update signer.certificates set not_after = now() + interval '2 days' where role = 'signing'`,
    );
    const rotation = await ca.rotateIfDue();
    expect(rotation.rotated).toBe(true);
    expect(await checkSigning(url)).toEqual({
      status: 'good',
      nextUpdate: expect.any(Date),
    });
  });

  it('answers unknown for a serial it never issued', async () => {
    const stranger = await createTestHierarchy();
    // A certificate claiming our intermediate as issuer, with a serial we never issued.
    const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const fake = await stranger.activeKey(
      publicKey.export({ format: 'der', type: 'spki' }),
      SoftwareKeyBackend.fromPkcs8(
        generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'der', type: 'pkcs8' }),
      ),
    );
    expect(await checkOcsp(fake.certificatePem, overview.intermediate.pem, url, 2000, LOOPBACK)).toEqual({
      status: 'unknown',
      nextUpdate: expect.any(Date),
    });

    const raw = await post(await requestFor(randomBytes(16).toString('hex'), overview.intermediate.pem));
    const { status, basic } = parseResponse(raw.body);
    expect(status).toBe(0);
    expect(certStatusTag(basic)).toBe(2);
  });

  it('answers certificates of an issuer it does not serve unknown, and the client refuses that signer for them', async () => {
    const stranger = await createTestHierarchy();
    const raw = await post(await requestFor(overview.signing.serialHex, stranger.intermediate.pem));
    const { basic } = parseResponse(raw.body);
    expect(certStatusTag(basic)).toBe(2);

    const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const theirs = await stranger.activeKey(
      publicKey.export({ format: 'der', type: 'spki' }),
      SoftwareKeyBackend.fromPkcs8(privateKey.export({ format: 'der', type: 'pkcs8' })),
    );
    const result = await checkOcsp(theirs.certificatePem, stranger.intermediate.pem, url, 2000, LOOPBACK);
    expect(result.status).toBe('unavailable');
    expect(result.detail).toMatch(/responder/);
  });

  it('answers malformedRequest to garbage, by POST and by GET', async () => {
    const viaPost = await post(Buffer.from('this is not DER'));
    expect(viaPost.status).toBe(200);
    expect(viaPost.type).toBe('application/ocsp-response');
    expect(parseResponse(viaPost.body)).toEqual({ status: 1 });

    const empty = await post(Buffer.alloc(0));
    expect(parseResponse(empty.body)).toEqual({ status: 1 });

    const viaGet = await fetch(`${url}/${encodeURIComponent(Buffer.from('garbage!').toString('base64'))}`);
    expect(parseResponse(Buffer.from(await viaGet.arrayBuffer()))).toEqual({ status: 1 });
    const notBase64 = await fetch(`${url}/%%%`);
    expect(parseResponse(Buffer.from(await notBase64.arrayBuffer()))).toEqual({ status: 1 });
  });

  it('accepts GET with url-encoded base64 and with base64url', async () => {
    const der = await requestFor(overview.signing.serialHex, overview.intermediate.pem);
    for (const encoded of [encodeURIComponent(der.toString('base64')), der.toString('base64url')]) {
      const res = await fetch(`${url}/${encoded}`);
      expect(res.headers.get('content-type')).toBe('application/ocsp-response');
      expect(res.headers.get('cache-control')).toMatch(/max-age=\d+/);
      const { status, basic } = parseResponse(Buffer.from(await res.arrayBuffer()));
      expect(status).toBe(0);
      expect(certStatusTag(basic)).toBe(0);
    }
  });

  it('signs on behalf of the intermediate: delegated responder, byKey id, thisUpdate/nextUpdate, nonce echoed, signature verifies', async () => {
    const nonce = randomBytes(20);
    const raw = await post(await requestFor(overview.signing.serialHex, overview.intermediate.pem, nonce, 'SHA-256'));
    const { status, basic } = parseResponse(raw.body);
    expect(status).toBe(0);
    if (!basic) throw new Error('no basic response');
    const intermediate = parseCertificate(pemCertificatesToDer(overview.intermediate.pem)[0] as Buffer);

    // The responder certificate (issued by the intermediate, EKU OCSPSigning) and the intermediate ride along.
    const responder = parseCertificate(pemCertificatesToDer(overview.ocspResponder.pem)[0] as Buffer);
    expect(basic.certs?.map((c) => Buffer.from(c.toSchema().toBER(false)).toString('base64'))).toEqual(
      [overview.ocspResponder.pem, overview.intermediate.pem].map((pem) =>
        (pemCertificatesToDer(pem)[0] as Buffer).toString('base64'),
      ),
    );
    const responderID = basic.tbsResponseData.responderID as asn1js.OctetString;
    expect(Buffer.from(responderID.valueBlock.valueHexView).equals(responderKeyHash(responder))).toBe(true);
    const single = basic.tbsResponseData.responses[0];
    expect(single?.nextUpdate && single.nextUpdate.getTime() - single.thisUpdate.getTime()).toBe(600_000);
    expect(single?.thisUpdate.getMilliseconds()).toBe(0);

    const echoed = basic.tbsResponseData.responseExtensions?.find((e) => e.extnID === OID.ocspNonce);
    expect(
      Buffer.from(echoed?.extnValue.valueBlock.valueHexView ?? []).equals(Buffer.from(nonceExtensionValue(nonce))),
    ).toBe(true);

    const crypto = ocspCrypto();
    expect(
      await crypto.verifyWithPublicKey(
        basic.tbsResponseData.tbsView,
        basic.signature,
        responder.subjectPublicKeyInfo,
        basic.signatureAlgorithm,
      ),
    ).toBe(true);
    // pkijs's own full verification agrees (delegated responder authorised by the issuing CA, chained to our root).
    const root = parseCertificate(pemCertificatesToDer(overview.root.pem)[0] as Buffer);
    expect(await basic.verify({ trustedCerts: [root] }, crypto)).toBe(true);
    // And the status, through pkijs's helper.
    const leaf = parseCertificate(pemCertificatesToDer(overview.signing.pem)[0] as Buffer);
    expect(await basic.getCertificateStatus(leaf, intermediate, crypto)).toEqual({ isForCertificate: true, status: 0 });
  });

  it('falls back to signing with the intermediate itself when it has no responder certificate', async () => {
    const deps = ca.ocspResponderDeps();
    inner = createOcspHandler({
      ...deps,
      issuers: async () => (await deps.issuers()).map(({ responder: _unused, ...issuer }) => issuer),
    });
    expect(await checkSigning(url)).toEqual({
      status: 'good',
      nextUpdate: expect.any(Date),
    });
    const { basic } = parseResponse(
      await post(await requestFor(overview.signing.serialHex, overview.intermediate.pem)).then((r) => r.body),
    );
    const intermediate = parseCertificate(pemCertificatesToDer(overview.intermediate.pem)[0] as Buffer);
    expect(
      Buffer.from((basic?.tbsResponseData.responderID as asn1js.OctetString).valueBlock.valueHexView).equals(
        responderKeyHash(intermediate),
      ),
    ).toBe(true);
    expect(basic?.certs).toBeUndefined();
  });

  it('client: a responder certificate the issuer did not delegate is refused', async () => {
    // A responder certificate for our intermediate's certificates, but issued by another CA.
    const stranger = await createTestHierarchy();
    const deps = ca.ocspResponderDeps();
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const impostor = await stranger.activeKey(
      publicKey.export({ format: 'der', type: 'spki' }),
      SoftwareKeyBackend.fromPkcs8(privateKey.export({ format: 'der', type: 'pkcs8' })),
    );
    const impostorKey = await webcrypto.subtle.importKey(
      'pkcs8',
      privateKey.export({ format: 'der', type: 'pkcs8' }),
      { name: 'ECDSA', namedCurve: 'P-256' },
      false,
      ['sign'],
    );
    inner = createOcspHandler({
      ...deps,
      issuers: async () =>
        (await deps.issuers()).map((issuer) => ({
          ...issuer,
          responder: {
            certificateDer: pemCertificatesToDer(impostor.certificatePem)[0] as Buffer,
            privateKey: impostorKey,
          },
        })),
    });
    const result = await checkSigning(url);
    expect(result).toMatchObject({
      status: 'unavailable',
      detail: 'delegated responder certificate is not signed by the issuer',
    });
  });

  it('client: a tampered response is unavailable, not good', async () => {
    const tamper = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const upstream = httpRequest(
          {
            host: '127.0.0.1',
            port: server.port,
            path: '/ocsp',
            method: 'POST',
            headers: { 'content-type': 'application/ocsp-request' },
          },
          (up) => {
            const parts: Buffer[] = [];
            up.on('data', (c: Buffer) => parts.push(c));
            up.on('end', () => {
              const body = Buffer.concat(parts);
              // Flip the last byte of the response signature (the embedded certificate follows it, so
              // the end of the body is not the place).
              const { basic } = parseResponse(body);
              const signature = Buffer.from(basic?.signature.valueBlock.valueHexView ?? []);
              const at = body.indexOf(signature) + signature.length - 1;
              body[at] = (body[at] ?? 0) ^ 0x01;
              res.setHeader('content-type', 'application/ocsp-response');
              res.end(body);
            });
          },
        );
        upstream.end(Buffer.concat(chunks));
      });
    });
    const tamperUrl = await listenOnLoopback(tamper);
    try {
      const result = await checkSigning(tamperUrl);
      expect(result).toEqual({ status: 'unavailable', detail: 'response signature does not verify' });
    } finally {
      await new Promise((resolve) => tamper.close(resolve));
    }
  });

  it('client: unreachable and slow responders are unavailable within the timeout', async () => {
    const silent = createServer(() => undefined);
    const silentUrl = await listenOnLoopback(silent);
    try {
      // A responder that never answers: the client's own deadline ends the check (its detail says so).
      const slow = await checkSigning(silentUrl, 300);
      expect(slow).toMatchObject({ status: 'unavailable', detail: 'responder timed out' });
    } finally {
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
    const closed = await checkSigning('http://127.0.0.1:1/ocsp', 1000);
    expect(closed.status).toBe('unavailable');
  });

  it('is a plain HTTP error outside the OCSP routes', async () => {
    expect((await post(Buffer.from('x'), '/elsewhere')).status).toBe(404);
    expect((await fetch(url, { method: 'PUT', body: 'x' })).status).toBe(405);
    expect((await post(Buffer.alloc(20_000))).status).toBe(413);
  });

  it('c2pa-rs (ocsp_fetch) reads the responder: notRevoked while good, Invalid with ocsp.revoked after revoke()', async () => {
    const active = await ca.activeSigningKey();
    const signed = await signJpeg((source, dest) => signWithC2pa(newBuilder(), active, source, dest));
    const requests: string[] = [];
    const handler = inner;
    inner = (req, res) => {
      requests.push(`${req.method} ${req.url}`);
      handler(req, res);
    };
    const settings = c2paTrustSettings(overview.root.pem, { ocspFetch: true });

    const before = await readValidation(signed, settings);
    expect(before.state).toBe('Trusted');
    expect(before.failureCodes).toEqual([]);
    expect(before.successCodes).toEqual(
      expect.arrayContaining(['signingCredential.ocsp.notRevoked', 'signingCredential.trusted']),
    );
    // c2pa-rs GETs <AIA URL joined with the base64 request>, which drops the last path segment: /<request>.
    expect(requests[0]).toMatch(/^GET \/MF/);

    await ca.revoke('current', 'keyCompromise');
    const after = await readValidation(signed, settings);
    expect(after.state).toBe('Invalid');
    expect(after.failureCodes).toContain('signingCredential.ocsp.revoked');

    // Without ocsp_fetch c2pa-rs does not ask, and the (untimestamped) manifest still reads Trusted.
    const offline = await readValidation(signed, c2paTrustSettings(overview.root.pem));
    expect(offline.state).toBe('Trusted');
  });
});
