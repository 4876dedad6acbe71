// Every manifest Cairn signs carries an RFC 3161 time-stamp from Cairn's own time-stamping authority, so a signature
// outlives its certificate: a validator judges the certificate at the stamped time, not at the time of validation.
// The TSA answers application/timestamp-query over HTTP beside the OCSP responder, refusing what it cannot grant
// with an RFC 3161 status rather than an error, and its certificate rotates like the responder's.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { Builder } from '@contentauth/c2pa-node';
import { waitFor } from '@cairn/testing';
import { localSignerFor, makeTestCredential, type TestCredential } from '../services/signer/test/c2pa-fixtures.js';
import { HASH_OIDS, readTimeStampReply, timeStampQuery } from '../services/signer/test/tsp-client.js';
import { startExternalTsa, type ExternalTsa } from '../services/signer/test/external-tsa.js';
import {
  onboard,
  onboardEnterprise,
  postSign,
  signAndFetch,
  startStack,
  type Stack,
  verifyUpload,
  stopAndRemove,
} from './support/stack.js';
import { toneWav } from './support/tone-wav.js';
import { photoSlideshow } from './support/video.js';
import { proofOfPossession, signingEndpoint, type SigningEndpoint } from './support/byok.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

const PHOTOS = `${SHARED_DIR}/fixtures/photos`;
let stack: Stack;
let tenant: { tenant_id: string; api_key: string };
let photo: Buffer;
let dir: string;
let tsaUrl: string;
const startedAt = Date.now();

interface Verdict {
  status: string;
  signals: { timestamp_valid?: boolean; c2pa_signature_valid?: boolean; signer_trusted?: boolean };
  claims?: { signed_at?: string };
  warnings: string[];
}

const verifyFile = (key: string, bytes: Buffer, name: string): Promise<Verdict> =>
  verifyUpload<Verdict>(stack, bytes, name, key);

async function postTsa(body: Buffer | string, contentType = 'application/timestamp-query'): Promise<Response> {
  return fetch(tsaUrl, { method: 'POST', headers: { 'content-type': contentType }, body });
}

/** Two photos, a second each, as an MP4 (at CRF 23, libx264's default, which this clip was always made with). */
function mp4(): Promise<Buffer> {
  return photoSlideshow(
    ['astronaut', 'coffee'].map((p) => `${PHOTOS}/${p}.png`),
    join(dir, 'a.mp4'),
    1,
  );
}

async function sql<Row extends Record<string, unknown>>(query: string, params: unknown[] = []): Promise<Row[]> {
  const admin = await stack.sandbox.adminClient();
  try {
    return (await admin.query<Row>(query, params)).rows;
  } finally {
    await admin.end();
  }
}

/** The tenant's photo signed under image-genai-v1 as `name`, and the signed file. */
const signPhoto = (name: string) =>
  signAndFetch(stack, tenant.api_key, { recipe: 'image-genai-v1', bytes: photo, name });

/** Cairn's active root as a trust-list entry: what a tenant lists to trust the time-stamps Cairn's TSA makes. */
async function cairnRootEntry(): Promise<{ issuer_cn: string; certificate_pem: string }> {
  const [root] = await sql<{ pem: string }>(
    `select pem from signer.certificates where role = 'root' and status = 'active'`,
  );
  return { issuer_cn: 'Cairn Root CA', certificate_pem: root!.pem };
}

/** Replaces the trust list of `key`'s tenant with `entries`; it must answer 200. */
async function setTrustList(
  key: string,
  entries: Array<{ issuer_cn: string; certificate_pem: string }>,
): Promise<void> {
  const res = await stack.request('/v1/trust-list', { method: 'POST', key, json: { entries } });
  expect(res.status).toBe(200);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cairn-tsa-'));
  stack = await startStack(['watermark', 'signer', 'verifier', 'gateway'], { PKI_CHECK_INTERVAL_MS: '500' });
  tenant = await onboard(stack);
  tsaUrl = `http://127.0.0.1:${String(stack.env.OCSP_PORT)}/tsa`;
  photo = await sharp(await readFile(`${PHOTOS}/chelsea.png`))
    .resize(480)
    .jpeg({ quality: 90 })
    .toBuffer();
}, 120_000);
afterAll(() => stopAndRemove(stack, dir));

describe("Cairn's time-stamping authority over HTTP", () => {
  it('grants a SHA-256 query: the imprint and nonce echoed, a fresh serial, signed by a certificate whose only, critical EKU is time-stamping', async () => {
    const digest = createHash('sha256').update('what was signed').digest();
    const nonce = Buffer.from('0102030405060708', 'hex');
    const res = await postTsa(timeStampQuery({ hashOid: HASH_OIDS.sha256, digest, nonce }));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/timestamp-reply');
    const reply = readTimeStampReply(Buffer.from(await res.arrayBuffer()));
    expect(reply.status).toBe(0);
    expect(reply.token).toMatchObject({
      hashOid: HASH_OIDS.sha256,
      imprintHex: digest.toString('hex'),
      nonceHex: nonce.toString('hex'),
      signerEku: { oids: ['1.3.6.1.5.5.7.3.8'], critical: true },
      signatureValid: true,
    });
    expect(reply.token?.certificateSubjects[0]).toMatch(/Cairn Time-Stamping Authority \d+/);
    expect(reply.token?.certificateSubjects[1]).toContain('Cairn Intermediate CA');
    expect(Math.abs(reply.token!.genTime.getTime() - Date.now())).toBeLessThan(60_000);

    const again = readTimeStampReply(
      Buffer.from(
        await (await postTsa(timeStampQuery({ hashOid: HASH_OIDS.sha512, digest: Buffer.alloc(64, 7) }))).arrayBuffer(),
      ),
    );
    expect(again.status).toBe(0);
    expect(again.token?.serialHex).not.toBe(reply.token?.serialHex);
  });

  it('refuses what it cannot grant with an RFC 3161 status, and what is not a query with an HTTP error', async () => {
    const refusal = async (body: Buffer) => {
      const res = await postTsa(body);
      expect(res.status).toBe(200);
      const reply = readTimeStampReply(Buffer.from(await res.arrayBuffer()));
      return { status: reply.status, failureBits: reply.failureBits, token: reply.token };
    };
    // SHA-1 imprint: badAlg (bit 0).
    expect(await refusal(timeStampQuery({ hashOid: HASH_OIDS.sha1, digest: Buffer.alloc(20, 1) }))).toEqual({
      status: 2,
      failureBits: [0],
      token: undefined,
    });
    // Not DER at all, and a SHA-256 imprint of the wrong length: badDataFormat (bit 5).
    expect(await refusal(Buffer.from('not a time-stamp request'))).toEqual({
      status: 2,
      failureBits: [5],
      token: undefined,
    });
    expect(await refusal(timeStampQuery({ hashOid: HASH_OIDS.sha256, digest: Buffer.alloc(20, 1) }))).toEqual({
      status: 2,
      failureBits: [5],
      token: undefined,
    });
    // A policy that is not Cairn's: unacceptedPolicy (bit 15).
    expect(
      await refusal(timeStampQuery({ hashOid: HASH_OIDS.sha256, digest: Buffer.alloc(32, 1), policy: '1.2.3.4' })),
    ).toEqual({ status: 2, failureBits: [15], token: undefined });

    expect(
      (await postTsa(timeStampQuery({ hashOid: HASH_OIDS.sha256, digest: Buffer.alloc(32) }), 'text/plain')).status,
    ).toBe(415);
    expect((await postTsa(Buffer.alloc(64 * 1024, 0x30))).status).toBe(413);
    expect((await fetch(tsaUrl)).status).toBe(405);
  });
});

describe('every manifest Cairn signs carries a trusted time-stamp', () => {
  const cases: Array<{ recipe: string; name: string; bytes: () => Promise<Buffer> | Buffer; sidecar?: boolean }> = [
    { recipe: 'image-genai-v1', name: 'a.jpg', bytes: () => photo },
    { recipe: 'audio-genai-v1', name: 'a.wav', bytes: () => toneWav(1) },
    { recipe: 'video-genai-v1', name: 'a.mp4', bytes: mp4 },
    {
      recipe: 'text-genai-v1',
      name: 'a.txt',
      bytes: () =>
        Buffer.from('A generated paragraph about the harbour at dawn, signed as a generation event.', 'utf8'),
      sidecar: true,
    },
  ];
  it.each(cases)(
    '$recipe ($name): verified with timestamp_valid and a signed_at inside this run',
    async (c) => {
      const { signed, signedBytes } = await signAndFetch(stack, tenant.api_key, {
        recipe: c.recipe,
        bytes: await c.bytes(),
        name: c.name,
      });
      const verdict = c.sidecar
        ? ((await (
            await stack.request('/v1/verify', {
              method: 'POST',
              key: tenant.api_key,
              json: { asset_id: signed.asset_id },
            })
          ).json()) as Verdict)
        : await verifyFile(tenant.api_key, signedBytes, c.name);
      expect(verdict.status).toMatch(/^verified_manifest/);
      expect(verdict.signals.timestamp_valid).toBe(true);
      const signedAt = Date.parse(verdict.claims?.signed_at ?? '');
      expect(signedAt).toBeGreaterThanOrEqual(Math.floor(startedAt / 1000) * 1000 - 60_000);
      expect(signedAt).toBeLessThanOrEqual(Date.now() + 60_000);
    },
    120_000,
  );
});

describe('a time-stamped signature outlives its certificate', () => {
  let enterprise: { tenant_id: string; api_key: string };
  let credential: TestCredential;
  let endpoint: SigningEndpoint;

  afterAll(async () => {
    await endpoint?.close();
  });

  it('a sign made minutes before the certificate expires verifies after the expiry; the same file signed without a time-stamp reports the expiry', async () => {
    enterprise = await onboardEnterprise(stack);
    // Expires 75 s from now: long enough to register and sign, short enough to wait out.
    const notAfter = new Date(Math.ceil((Date.now() + 75_000) / 1000) * 1000);
    credential = await makeTestCredential({
      commonName: 'Short-Lived Signer',
      organization: 'Acme Wire',
      leafNotAfter: notAfter,
    });
    endpoint = await signingEndpoint(credential.privateKeyPem);
    const proof = proofOfPossession(enterprise.tenant_id, credential.leafCertPem, credential.privateKeyPem);
    const registered = await stack.request('/v1/signing-credentials', {
      method: 'POST',
      key: enterprise.api_key,
      json: { certificate_chain_pem: credential.certChainPem, endpoint_url: endpoint.url, proof_of_possession: proof },
    });
    expect(registered.status).toBe(201);
    const { credential_id, hmac_secret } = (await registered.json()) as { credential_id: string; hmac_secret: string };
    endpoint.secret = hmac_secret;
    // The tenant trusts its own CA for signatures and Cairn's root for the time-stamps Cairn's TSA makes.
    await setTrustList(enterprise.api_key, [
      { issuer_cn: 'Cairn Test Root CA', certificate_pem: credential.caCertPem },
      await cairnRootEntry(),
    ]);

    const res = await postSign(stack, enterprise.api_key, {
      recipe: 'image-genai-v1',
      fields: { signing_credential: credential_id },
      bytes: photo,
      name: 'p.jpg',
    });
    expect(res.status).toBe(200);
    const { asset_id } = (await res.json()) as { asset_id: string };
    const stamped = Buffer.from(
      await (await stack.request(`/v1/assets/${asset_id}/content`, { key: enterprise.api_key })).arrayBuffer(),
    );
    // The same bytes signed with the same certificate, but with no time-stamp authority.
    const builder = Builder.withJson(
      {
        claim_generator_info: [{ name: 'untimed-test', version: '1' }],
        title: 'p.jpg',
        assertions: [
          {
            label: 'c2pa.actions.v2',
            data: {
              actions: [
                {
                  action: 'c2pa.created',
                  digitalSourceType: 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia',
                },
              ],
            },
          },
        ],
      },
      JSON.stringify({ builder: { thumbnail: { enabled: false } }, verify: { verify_after_sign: false } }),
    );
    const untimedDest = { buffer: null as Buffer | null };
    builder.sign(localSignerFor(credential), { buffer: photo, mimeType: 'image/jpeg' }, untimedDest);
    const untimed = untimedDest.buffer!;

    await waitFor('the signing certificate to expire', () => Date.now() > notAfter.getTime() + 1000, 120_000, 250);

    const after = await verifyFile(enterprise.api_key, stamped, 'p.jpg');
    expect(after.status).toMatch(/^verified_manifest/);
    expect(after.signals).toMatchObject({ timestamp_valid: true, c2pa_signature_valid: true, signer_trusted: true });
    expect(after.status).not.toBe('manifest_certificate_expired');
    // And by the asset id, from the manifest store Cairn kept.
    const byId = (await (
      await stack.request('/v1/verify', { method: 'POST', key: enterprise.api_key, json: { asset_id } })
    ).json()) as Verdict;
    expect(byId.status).toMatch(/^verified_manifest/);
    expect(byId.signals.timestamp_valid).toBe(true);

    const bare = await verifyFile(enterprise.api_key, untimed, 'p.jpg');
    expect(bare.status).toBe('manifest_certificate_expired');
    expect(bare.signals.timestamp_valid).not.toBe(true);
  }, 240_000);
});

describe('rotation of the TSA certificate', () => {
  it('a manifest stamped by the previous TSA certificate still verifies after the TSA certificate is renewed', async () => {
    const before = await signPhoto('r.jpg');
    const [previous] = await sql<{ serial_hex: string }>(
      `select serial_hex from signer.certificates where role = 'tsa' and status = 'active'`,
    );
    // Its end pulled within the renewal window: the next maintenance pass (every 500 ms here) renews it.
    await sql(`update signer.certificates set not_after = now() + interval '1 day' where serial_hex = $1`, [
      previous!.serial_hex,
    ]);
    const current = await waitFor(
      'a renewed TSA certificate',
      async () => {
        const [row] = await sql<{ serial_hex: string }>(
          `select serial_hex from signer.certificates where role = 'tsa' and status = 'active'`,
        );
        return row && row.serial_hex !== previous!.serial_hex ? row.serial_hex : undefined;
      },
      30_000,
      200,
    );
    const [retired] = await sql<{ status: string }>(`select status from signer.certificates where serial_hex = $1`, [
      previous!.serial_hex,
    ]);
    expect(retired!.status).toBe('retired');

    // New stamps come from the new certificate.
    const reply = readTimeStampReply(
      Buffer.from(
        await (await postTsa(timeStampQuery({ hashOid: HASH_OIDS.sha256, digest: Buffer.alloc(32, 9) }))).arrayBuffer(),
      ),
    );
    expect(reply.token?.signerSerialHex).toBe(current);

    const after = await signPhoto('r2.jpg');
    for (const bytes of [before.signedBytes, after.signedBytes]) {
      const verdict = await verifyFile(tenant.api_key, bytes, 'r.jpg');
      expect(verdict.status).toMatch(/^verified_manifest/);
      expect(verdict.signals.timestamp_valid).toBe(true);
    }
  }, 120_000);
});

describe('Cairn’s TSA unable to sign', () => {
  it('answers systemFailure, and a sign is refused with 503 cairn.signer.unavailable rather than left untimed', async () => {
    // The TSA's sealed key replaced by another certificate's: sealed keys are bound to their serial, so it cannot open.
    const [tsa] = await sql<{ serial_hex: string; encrypted_private_key: string }>(
      `select serial_hex, encrypted_private_key from signer.certificates where role = 'tsa' and status = 'active'`,
    );
    await sql(
      `update signer.certificates set encrypted_private_key = (select encrypted_private_key from signer.certificates
         where role = 'ocsp_responder' and status = 'active') where serial_hex = $1`,
      [tsa!.serial_hex],
    );
    try {
      await stack.stopService('signer');
      await stack.restart('signer');
      const reply = readTimeStampReply(
        Buffer.from(
          await (
            await postTsa(timeStampQuery({ hashOid: HASH_OIDS.sha256, digest: Buffer.alloc(32, 3) }))
          ).arrayBuffer(),
        ),
      );
      expect([reply.status, reply.failureBits, reply.token]).toEqual([2, [25], undefined]);
      const res = await postSign(stack, tenant.api_key, { recipe: 'image-genai-v1', bytes: photo, name: 'w.jpg' });
      expect(res.status).toBe(503);
      expect(((await res.json()) as { code: string }).code).toBe('cairn.signer.unavailable');
    } finally {
      await sql(`update signer.certificates set encrypted_private_key = $2 where serial_hex = $1`, [
        tsa!.serial_hex,
        tsa!.encrypted_private_key,
      ]);
      await stack.stopService('signer');
      await stack.restart('signer');
    }
    // Its key back, the TSA stamps again.
    const { signedBytes } = await signPhoto('v.jpg');
    expect((await verifyFile(tenant.api_key, signedBytes, 'v.jpg')).signals.timestamp_valid).toBe(true);
  }, 120_000);
});

describe("an operator's own time-stamping authority (TSA_URL)", () => {
  let external: ExternalTsa;
  afterAll(async () => {
    delete stack.env.TSA_URL;
    delete stack.env.SIGN_WORKER_TIMEOUT_MS;
    await stack.stopService('signer');
    await stack.restart('signer');
    await external?.close();
  });

  it('stamps every sign instead of Cairn’s: trusted where its root is an anchor in force, untrusted elsewhere', async () => {
    external = await startExternalTsa();
    stack.env.TSA_URL = external.url;
    await stack.stopService('signer');
    await stack.restart('signer');
    const { signedBytes } = await signPhoto('x.jpg');
    expect(external.requests).toBeGreaterThanOrEqual(1);

    // The default list does not know the operator's TSA: the signature verifies, its time-stamp is not trusted.
    const byDefault = await verifyFile(tenant.api_key, signedBytes, 'x.jpg');
    expect(byDefault.status).toMatch(/^verified_manifest/);
    expect(byDefault.signals.timestamp_valid).toBe(false);

    // A tenant whose list holds Cairn's root and the operator's TSA root trusts the time-stamp too.
    const own = await onboardEnterprise(stack);
    await setTrustList(own.api_key, [
      await cairnRootEntry(),
      { issuer_cn: 'Cairn Root CA', certificate_pem: external.rootPem },
    ]);
    const trusted = await verifyFile(own.api_key, signedBytes, 'x.jpg');
    expect(trusted.signals.timestamp_valid).toBe(true);
  }, 120_000);

  it('a time-stamp that fails fails the sign: 503 cairn.signer.unavailable, nothing recorded', async () => {
    external.mode = 'http_error';
    const assetsBefore = await sql<{ n: string }>(`select count(*) as n from signer.assets where tenant_id = $1`, [
      tenant.tenant_id,
    ]);
    const res = await postSign(stack, tenant.api_key, { recipe: 'image-genai-v1', bytes: photo, name: 'y.jpg' });
    expect(res.status).toBe(503);
    expect(((await res.json()) as { code: string }).code).toBe('cairn.signer.unavailable');
    const assetsAfter = await sql<{ n: string }>(`select count(*) as n from signer.assets where tenant_id = $1`, [
      tenant.tenant_id,
    ]);
    expect(assetsAfter[0]!.n).toBe(assetsBefore[0]!.n);
  }, 60_000);
  it('a time-stamping authority that never answers is cut off by the sign worker budget: 503, nothing recorded', async () => {
    // c2pa-rs sets no timeout of its own on the time-stamp request: the worker's budget is what bounds it.
    external.mode = 'hang';
    stack.env.SIGN_WORKER_TIMEOUT_MS = '3000';
    const count = async () =>
      (await sql<{ n: string }>(`select count(*) as n from signer.assets where tenant_id = $1`, [tenant.tenant_id]))[0]!
        .n;
    const before = await count();
    await stack.stopService('signer');
    await stack.restart('signer');
    const res = await postSign(stack, tenant.api_key, { recipe: 'image-genai-v1', bytes: photo, name: 'z.jpg' });
    expect(res.status).toBe(503);
    expect(((await res.json()) as { code: string }).code).toBe('cairn.sign.worker_failed');
    expect(external.requests).toBeGreaterThanOrEqual(1);
    expect(await count()).toBe(before);
  }, 60_000);
});

describe('the public time-stamping path is bounded; the signer’s own signs are not', () => {
  afterAll(async () => {
    delete stack.env.TSA_PUBLIC_REQUESTS_PER_SECOND;
    await stack.stopService('signer');
    await stack.restart('signer');
  });

  it('grants outside callers TSA_PUBLIC_REQUESTS_PER_SECOND (429 with Retry-After beyond), while every sign is still stamped', async () => {
    stack.env.TSA_PUBLIC_REQUESTS_PER_SECOND = '1';
    await stack.stopService('signer');
    await stack.restart('signer');
    const query = () =>
      timeStampQuery({ hashOid: HASH_OIDS.sha256, digest: createHash('sha256').update(crypto.randomUUID()).digest() });
    // Twenty at once against a bucket of two that refills one a second: most are refused before any signature.
    const answers = await Promise.all(Array.from({ length: 20 }, () => postTsa(query())));
    const granted = answers.filter((res) => res.status === 200);
    const refused = answers.filter((res) => res.status === 429);
    expect(granted.length + refused.length).toBe(20);
    expect(granted.length).toBeGreaterThanOrEqual(1);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    for (const res of refused) expect(res.headers.get('retry-after')).toBe('1');
    for (const res of granted) expect(readTimeStampReply(Buffer.from(await res.arrayBuffer())).status).toBe(0);

    // The bucket is empty again; the sign's own time-stamp does not come out of it.
    await Promise.all(Array.from({ length: 5 }, () => postTsa(query())));
    const { signedBytes } = await signPhoto('bounded.jpg');
    const verdict = await verifyFile(tenant.api_key, signedBytes, 'bounded.jpg');
    expect(verdict.status).toMatch(/^verified_manifest/);
    expect(verdict.signals.timestamp_valid).toBe(true);
  }, 120_000);

  it('TSA_PUBLIC_REQUESTS_PER_SECOND=0 serves the signer only: the public path is 404, signs are stamped', async () => {
    stack.env.TSA_PUBLIC_REQUESTS_PER_SECOND = '0';
    await stack.stopService('signer');
    await stack.restart('signer');
    const res = await postTsa(timeStampQuery({ hashOid: HASH_OIDS.sha256, digest: Buffer.alloc(32, 3) }));
    expect(res.status).toBe(404);
    const { signedBytes } = await signPhoto('private.jpg');
    expect((await verifyFile(tenant.api_key, signedBytes, 'private.jpg')).signals.timestamp_valid).toBe(true);
  }, 120_000);
});
