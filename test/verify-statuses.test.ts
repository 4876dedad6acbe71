import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFile } from 'node:fs/promises';
import sharp from 'sharp';
import { signerV1 } from '@cairn/proto';
import { createClient } from '@cairn/rpc';
import { waitFor } from '@cairn/testing';
import { collectGarbage, makeTestCredential } from '../services/signer/test/c2pa-fixtures.js';
import { signedElsewhere } from './support/signed-elsewhere.js';
import { onboard, signAndFetch, startStack, type Stack, verifyUpload } from './support/stack.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

const PHOTOS = `${SHARED_DIR}/fixtures/photos`;
let stack: Stack;
let tenant: { tenant_id: string; api_key: string };
let photo: Buffer;
let signed: { asset_id: string; manifest_id: string };
let signedBytes: Buffer;

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'verifier', 'gateway'], { PUBLIC_VERIFY_PER_MINUTE: '1000' });
  tenant = await onboard(stack);
  photo = await sharp(await readFile(`${PHOTOS}/coffee.png`))
    .jpeg({ quality: 90 })
    .toBuffer();
  ({ signed, signedBytes } = await signAndFetch<typeof signed>(stack, tenant.api_key, signPhoto()));
}, 120_000);
afterAll(async () => {
  await stack?.stop();
  collectGarbage();
});

const verify = (bytes: Buffer) =>
  verifyUpload<{
    status: string;
    confidence: number | null;
    warnings: string[];
    signals: Record<string, unknown>;
  }>(stack, bytes, 'f');

async function manifestBytes(): Promise<Buffer> {
  return Buffer.from(await (await stack.request(`/v1/manifests/${signed.manifest_id}`)).arrayBuffer());
}

async function signElsewhere(options: Parameters<typeof makeTestCredential>[0]) {
  return signedElsewhere(photo, await makeTestCredential(options));
}

/** The photo signed as the tests here sign it. */
const signPhoto = () => ({ recipe: 'image-genai-v1', bytes: photo, name: 'c.jpg' });

describe('verification statuses from real assets', () => {
  it('pixels edited after signing: manifest_content_modified', async () => {
    const edited = Buffer.from(signedBytes);
    // Overwrite entropy-coded image data just before the end-of-image marker; the manifest is untouched.
    const end = edited.lastIndexOf(Buffer.from([0xff, 0xd9]));
    edited.fill(0x00, end - 400, end - 100);
    const result = await verify(edited);
    expect(result.status).toBe('manifest_content_modified');
    expect(result.confidence).toBeLessThanOrEqual(0.35);
  });

  it('corrupt JUMBF: manifest_malformed, never a 500', async () => {
    const manifest = await manifestBytes();
    const at = signedBytes.indexOf(manifest);
    const corrupt = Buffer.from(signedBytes);
    // Overwrite the type of the store's outer JUMBF box ("jumb"): still found, no longer parseable.
    corrupt.fill(0xff, at + 4, at + 8);
    const result = await verify(corrupt);
    expect(result.status).toBe('manifest_malformed');
    expect(result.confidence).toBeNull();
  });

  it('a chain from a CA not on the trust list: manifest_signer_untrusted', async () => {
    const result = await verify(await signElsewhere({ commonName: 'Someone Else', organization: 'Elsewhere Inc' }));
    expect(result.status).toBe('manifest_signer_untrusted');
    expect(result.signals).toMatchObject({ c2pa_signature_valid: true, signer_trusted: false });
  });

  it('a signing certificate that has expired since, with no time-stamp: manifest_certificate_expired', async () => {
    // c2pa-rs will not sign with an expired certificate; sign with one that lapses two seconds later.
    const lapsesAt = Date.now() + 2000;
    const file = await signElsewhere({
      leafNotBefore: new Date(Date.now() - 86_400_000),
      leafNotAfter: new Date(lapsesAt),
    });
    await new Promise((r) => setTimeout(r, Math.max(0, lapsesAt - Date.now()) + 1200));
    const result = await verify(file);
    expect(result.status).toBe('manifest_certificate_expired');
  });

  it('watermark service down: inconclusive, naming it in warnings', async () => {
    await stack.stopService('watermark');
    try {
      const result = await verify(signedBytes);
      expect(result.status).toBe('inconclusive');
      expect(result.warnings).toContain('watermark_unavailable');
      expect(result.confidence).toBeGreaterThan(0);
    } finally {
      await stack.restart('watermark');
    }
  }, 30_000);

  it('OCSP responder down: still verified, with the warning ocsp_unavailable', async () => {
    // A verifier that keeps no answer about Cairn's certificate (just started; kept answers are the last test's
    // subject). One verify of a file outside Cairn's chains loads the trust list, which needs the signer.
    await stack.stopService('verifier');
    await stack.restart('verifier');
    expect((await verify(await signElsewhere({ commonName: 'Warm Up' }))).status).toBe('manifest_signer_untrusted');
    await stack.stopService('signer');
    try {
      const result = await verify(signedBytes);
      expect(result.status).toBe('verified_manifest_and_watermark_match');
      expect(result.signals.ocsp_status).toBe('unavailable');
      expect(result.warnings).toContain('ocsp_unavailable');
    } finally {
      await stack.restart('signer');
    }
  }, 30_000);

  it('a revoked signing certificate (OCSP): manifest_signer_revoked, and signing goes on with a new one', async () => {
    const signer = createClient(signerV1.SignerService, String(stack.env.SIGNER_GRPC_ADDR));
    try {
      const revoked = await signer.revokeCertificate({ serialHex: '', reason: 'keyCompromise' });
      expect(revoked.serialHex).toMatch(/^[0-9a-f]+$/);
    } finally {
      signer.close();
    }
    const result = await verify(signedBytes);
    expect(result.status).toBe('manifest_signer_revoked');
    expect(result.confidence).toBeNull();
    expect(result.signals.ocsp_status).toBe('revoked');
    const { signedBytes: freshBytes } = await signAndFetch(stack, tenant.api_key, signPhoto());
    expect((await verify(freshBytes)).status).toBe('verified_manifest_and_watermark_match');
  }, 30_000);

  it('a kept OCSP answer outlives a responder outage and ends with certificate.revoked: the next verify after the event says revoked', async () => {
    const { signed: asset, signedBytes: bytes } = await signAndFetch(stack, tenant.api_key, signPhoto());
    expect((await verify(bytes)).signals.ocsp_status).toBe('good');
    // The answer is kept: with the responder (the signer) down, the next verify still has it.
    await stack.stopService('signer');
    try {
      const kept = await verify(bytes);
      expect(kept.status).toBe('verified_manifest_and_watermark_match');
      expect(kept.signals.ocsp_status).toBe('good');
      expect(kept.warnings).not.toContain('ocsp_unavailable');
    } finally {
      await stack.restart('signer');
    }
    const signer = createClient(signerV1.SignerService, String(stack.env.SIGNER_GRPC_ADDR));
    try {
      await signer.revokeCertificate({ serialHex: '', reason: 'keyCompromise' });
    } finally {
      signer.close();
    }
    // The event is delivered once the asset's page shows it: the verifier replaces the kept answers' token before
    // it marks the stored verdicts for recomputation, and the page recomputes from Cairn's copy.
    await waitFor(
      'the page to show the revocation',
      async () =>
        /data-status="manifest_signer_revoked"/.test(await (await stack.request(`/v/${asset.asset_id}`)).text()),
      20_000,
      200,
    );
    const next = await verify(bytes);
    expect(next.status).toBe('manifest_signer_revoked');
    expect(next.signals.ocsp_status).toBe('revoked');
    expect(next.confidence).toBeNull();
  }, 60_000);
});
