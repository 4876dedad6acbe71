import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { signerV1 } from '@cairn/proto';
import { createClient } from '@cairn/rpc';
import { waitFor } from '@cairn/testing';
import { buildAndSign } from '../services/signer/src/adapters/c2pa/index.js';
import { answerOcspRequest } from '../services/signer/src/domain/pki/ocsp-response.js';
import { localSignerFor, makeTestCredential, type TestCredential } from '../services/signer/test/c2pa-fixtures.js';
import { signedElsewhere } from './support/signed-elsewhere.js';
import { multipart, onboard, signAndFetch, startStack, type Stack, verifyUpload } from './support/stack.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

// docs/decisions/0010-stored-verdicts.md, 0015-outbound-requests-vetted.md: what anyone is told about an asset Cairn
// signed cannot be rewritten by an upload, and an untrusted file makes the verifier call nobody. The attacker has no
// account (public verify) unless a test says otherwise.

const PHOTOS = `${SHARED_DIR}/fixtures/photos`;
let stack: Stack;
let victim: { tenant_id: string; api_key: string };
let signed: { asset_id: string; manifest_id: string };
let signedBytes: Buffer;
let otherPhoto: Buffer;

type Result = {
  status: string;
  confidence: number | null;
  asset_id?: string;
  manifest_id?: string;
  warnings: string[];
  matches: Array<{ asset_id: string }>;
  signals: Record<string, unknown>;
  claims?: Record<string, unknown>;
};

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'verifier', 'gateway'], { PUBLIC_VERIFY_PER_MINUTE: '1000' });
  victim = await onboard(stack);
  const photo = await sharp(await readFile(`${PHOTOS}/coffee.png`))
    .jpeg({ quality: 90 })
    .toBuffer();
  otherPhoto = await sharp(await readFile(`${PHOTOS}/chelsea.png`))
    .jpeg({ quality: 90 })
    .toBuffer();
  ({ signed, signedBytes } = await signAndFetch<typeof signed>(stack, victim.api_key, {
    recipe: 'image-genai-v1',
    metadata: { generator: 'Victim Studio', model: 'honest-1' },
    bytes: photo,
    name: 'c.jpg',
  }));
}, 120_000);
afterAll(async () => {
  await stack?.stop();
});

const publicVerify = (bytes: Buffer): Promise<Result> => verifyUpload<Result>(stack, bytes, 'f.jpg');

/** What everyone is told about the victim's asset: its public page and its stored result. */
async function victimView(): Promise<{ page: string; pageStatus: string | undefined; stored: Result }> {
  const pageRes = await stack.request(`/v/${signed.asset_id}`);
  expect(pageRes.status).toBe(200);
  const page = await pageRes.text();
  const storedRes = await stack.request(`/v1/verify/${signed.manifest_id}`, { key: victim.api_key });
  expect(storedRes.status).toBe(200);
  return { page, pageStatus: /data-status="([a-z_]+)"/.exec(page)?.[1], stored: (await storedRes.json()) as Result };
}

async function expectVictimUnchanged(): Promise<void> {
  const view = await victimView();
  expect(view.pageStatus).toBe('verified_manifest_and_watermark_match');
  expect(view.stored.status).toBe('verified_manifest_and_watermark_match');
  expect(view.stored.asset_id).toBe(signed.asset_id);
  expect(view.stored.claims).toMatchObject({ generator: 'Victim Studio', model: 'honest-1' });
  expect(view.page).toContain('Victim Studio');
  expect(view.page).not.toContain('Mallory');
}

/** A C2PA manifest signed by a CA of the attacker's, naming the victim's asset every way an unsigned field could. */
async function forgeNamingVictim(credential: TestCredential, bytes: Buffer): Promise<Buffer> {
  const result = await buildAndSign({
    asset: bytes,
    mimeType: 'image/jpeg',
    signer: localSignerFor(credential),
    claimGenerator: { name: 'cairn', version: 'forged' },
    title: `${signed.asset_id}.jpg`,
    record: { assetId: signed.asset_id, manifestId: signed.manifest_id },
    digitalSourceType: 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia',
    metadata: { generator: 'Mallory Forge', model: 'evil-9' },
  });
  return result.signed;
}

/** A loopback listener that counts every request made to it (an OCSP responder a file names). */
async function listener(
  answer: (url: string) => { status: number; headers?: Record<string, string> } = () => ({ status: 500 }),
): Promise<{ url: string; hits: () => number; close: () => Promise<void> }> {
  let hits = 0;
  const server: Server = createServer((req, res) => {
    hits += 1;
    req.resume();
    const { status, headers } = answer(req.url ?? '');
    res.writeHead(status, headers).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/ocsp`,
    hits: () => hits,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** An enterprise tenant whose custom trust list holds `caPem`. */
async function enterpriseTrusting(caPem: string): Promise<{ tenant_id: string; api_key: string }> {
  const tenant = await onboard(stack, 'free');
  const admin = await stack.sandbox.adminClient();
  try {
    await admin.query(`update tenant.tenants set plan = 'enterprise' where tenant_id = $1`, [tenant.tenant_id]);
  } finally {
    await admin.end();
  }
  const res = await stack.request('/v1/trust-list', {
    method: 'POST',
    key: tenant.api_key,
    json: { entries: [{ issuer_cn: 'Cairn Test Root CA', certificate_pem: caPem }] },
  });
  expect(res.status).toBe(200);
  // What the tenant now trusts is what it set, and only that (GET /v1/trust-list for its key).
  const inForce = (await (await stack.request('/v1/trust-list', { key: tenant.api_key })).json()) as {
    source: string;
    entries: Array<{ origin: string }>;
  };
  expect(inForce).toMatchObject({ source: 'custom', entries: [{ origin: 'custom' }] });
  return tenant;
}

async function verifyAs(key: string, bytes: Buffer): Promise<Result> {
  const res = await stack.request('/v1/verify', {
    method: 'POST',
    key,
    body: multipart({}, { field: 'file', bytes, name: 'f.jpg' }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as Result;
}

describe('no upload rewrites a public verdict', () => {
  it('starts verified: the page and the stored result describe the asset as signed', async () => {
    await expectVictimUnchanged();
  });

  it('a tampered copy is answered to its uploader; the victim’s page and stored result stay as they were', async () => {
    const tampered = Buffer.from(signedBytes);
    const end = tampered.lastIndexOf(Buffer.from([0xff, 0xd9]));
    tampered[end - 200] = tampered[end - 200]! ^ 0xff;
    const answer = await publicVerify(tampered);
    expect(answer.status).toBe('manifest_content_modified');
    // The manifest really is the victim's (signed by Cairn), so the uploader is told which asset it claims to be.
    expect(answer.asset_id).toBe(signed.asset_id);
    await expectVictimUnchanged();
  });

  it('a self-signed manifest naming the victim (title and com.cairn.record) links to nothing and changes nothing', async () => {
    const mallory = await makeTestCredential({ commonName: 'Mallory', organization: 'Mallory Forge Ltd' });
    const forged = await forgeNamingVictim(mallory, otherPhoto);
    const answer = await publicVerify(forged);
    expect(answer.status).toBe('manifest_signer_untrusted');
    expect(answer.asset_id).toBeUndefined();
    expect(answer.manifest_id).toBeUndefined();
    expect(answer.matches).toEqual([]);
    await expectVictimUnchanged();
  });

  it('an enterprise tenant that trusts the forger’s CA gets its own answer, never the victim’s record', async () => {
    const mallory = await makeTestCredential({ commonName: 'Mallory', organization: 'Mallory Forge Ltd' });
    const enterprise = await enterpriseTrusting(mallory.caCertPem);
    const answer = await verifyAs(enterprise.api_key, await forgeNamingVictim(mallory, otherPhoto));
    // Trusted by that tenant's own list, as it asked; but a chain that does not lead to Cairn names no Cairn asset.
    expect(answer.status).toBe('verified_manifest');
    expect(answer.signals).toMatchObject({ signer_trusted: true });
    expect(answer.asset_id).toBeUndefined();
    expect(answer.manifest_id).toBeUndefined();
    // The same tenant verifying the victim's real file reads it under its own list, where Cairn's root is not (the
    // reading Cairn keeps of its copy under the default list is not reused), and changes nothing in the public view.
    const real = await verifyAs(enterprise.api_key, signedBytes);
    expect(real.signals).toMatchObject({ signer_trusted: false });
    await expectVictimUnchanged();
  });

  it('uploads while the watermark or anchor service is down are inconclusive for their uploader only', async () => {
    for (const [service, warning] of [
      ['watermark', 'watermark_unavailable'],
      ['anchor', 'anchor_unavailable'],
    ] as const) {
      await stack.stopService(service);
      try {
        const answer = await publicVerify(signedBytes);
        expect(answer.status).toBe('inconclusive');
        expect(answer.warnings).toContain(warning);
        await expectVictimUnchanged();
      } finally {
        await stack.restart(service);
      }
    }
  }, 60_000);
});

describe('no request on behalf of an untrusted file', () => {
  it('an untrusted chain’s OCSP address is never contacted', async () => {
    const responder = await listener();
    try {
      const stranger = await makeTestCredential({ commonName: 'Stranger', ocspUrl: responder.url });
      const file = await signedElsewhere(otherPhoto, stranger);
      const answer = await publicVerify(file);
      expect(answer.status).toBe('manifest_signer_untrusted');
      expect(answer.signals.ocsp_status).toBe('not_checked');
      expect(responder.hits()).toBe(0);
    } finally {
      await responder.close();
    }
  });

  it('a trusted chain’s responder is asked once, and a redirect it answers is not followed', async () => {
    const target = await listener();
    const responder = await listener(() => ({ status: 302, headers: { location: target.url } }));
    try {
      const partner = await makeTestCredential({ commonName: 'Partner', ocspUrl: responder.url });
      const enterprise = await enterpriseTrusting(partner.caCertPem);
      const file = await signedElsewhere(otherPhoto, partner);
      const answer = await verifyAs(enterprise.api_key, file);
      expect(answer.signals.ocsp_status).toBe('unavailable');
      expect(responder.hits()).toBe(1);
      expect(target.hits()).toBe(0);
    } finally {
      await responder.close();
      await target.close();
    }
  });

  it('a tenant’s own CA’s OCSP answers are never kept: no event announces its revocations, so every verify asks', async () => {
    // A real responder for the partner's CA (the signer's own OCSP code, signing as the CA), whose answer we flip.
    let revokedAt: Date | undefined;
    let hits = 0;
    // Made once the responder's address is known (it goes into the certificate); asked only after that.
    let partner: TestCredential | undefined;
    const server: Server = createServer((req, res) => {
      hits += 1;
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const credential = partner!;
        const ca = new X509Certificate(credential.caCertPem);
        answerOcspRequest(Buffer.concat(chunks), {
          issuers: () =>
            Promise.resolve([
              { serialHex: ca.serialNumber, certificateDer: ca.raw, privateKey: credential.caPrivateKey },
            ]),
          lookup: () => Promise.resolve(revokedAt ? { status: 'revoked', revokedAt } : { status: 'good' }),
        }).then(
          (body) => res.writeHead(200, { 'content-type': 'application/ocsp-response' }).end(body),
          () => res.writeHead(500).end(),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ocsp`;
      partner = await makeTestCredential({ commonName: 'Partner With Responder', ocspUrl: url });
      const enterprise = await enterpriseTrusting(partner.caCertPem);
      const file = await signedElsewhere(otherPhoto, partner);
      const first = await verifyAs(enterprise.api_key, file);
      expect(first.signals.ocsp_status).toBe('good');
      expect(hits).toBe(1);
      // The CA revokes its certificate; Cairn hears of it only by asking, and the next verify asks.
      revokedAt = new Date();
      const second = await verifyAs(enterprise.api_key, file);
      expect(second.signals.ocsp_status).toBe('revoked');
      expect(second.status).toBe('manifest_signer_revoked');
      expect(hits).toBe(2);
      await expectVictimUnchanged();
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('with loopback refused (production’s policy), even a trusted chain’s loopback responder sees nothing', async () => {
    const responder = await listener();
    stack.env.OUTBOUND_ALLOW_LOOPBACK = 'false';
    await stack.stopService('verifier');
    await stack.restart('verifier');
    try {
      const partner = await makeTestCredential({ commonName: 'Partner', ocspUrl: responder.url });
      const enterprise = await enterpriseTrusting(partner.caCertPem);
      const file = await signedElsewhere(otherPhoto, partner);
      const answer = await verifyAs(enterprise.api_key, file);
      expect(answer.status).toBe('verified_manifest');
      expect(answer.signals.ocsp_status).toBe('unavailable');
      expect(responder.hits()).toBe(0);
    } finally {
      delete stack.env.OUTBOUND_ALLOW_LOOPBACK;
      await stack.stopService('verifier');
      await stack.restart('verifier');
      await responder.close();
    }
  }, 60_000);
});

describe('a stored verdict follows what changes it', () => {
  // Runs last: it revokes the signing certificate the other tests rely on.
  it('a revoked signing certificate turns the page to manifest_signer_revoked, computed from Cairn’s copy', async () => {
    await expectVictimUnchanged();
    const signer = createClient(signerV1.SignerService, String(stack.env.SIGNER_GRPC_ADDR));
    try {
      await signer.revokeCertificate({ serialHex: '', reason: 'keyCompromise' });
    } finally {
      signer.close();
    }
    const status = await waitFor(
      'the page to show the revocation',
      async () => {
        const page = await (await stack.request(`/v/${signed.asset_id}`)).text();
        const found = /data-status="([a-z_]+)"/.exec(page)?.[1];
        return found === 'manifest_signer_revoked' ? found : undefined;
      },
      20_000,
      200,
    );
    expect(status).toBe('manifest_signer_revoked');
    const stored = (await (
      await stack.request(`/v1/verify/${signed.manifest_id}`, { key: victim.api_key })
    ).json()) as Result;
    expect(stored.status).toBe('manifest_signer_revoked');
    expect(stored.confidence).toBeNull();
  }, 40_000);
});
