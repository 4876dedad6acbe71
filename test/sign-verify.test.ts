import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFile } from 'node:fs/promises';
import sharp from 'sharp';
import { multipart, onboard, startStack, type Stack, verifyUpload } from './support/stack.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

const PHOTOS = `${SHARED_DIR}/fixtures/photos`;
let stack: Stack;
let tenant: { tenant_id: string; api_key: string };
let photoJpeg: Buffer;

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'verifier', 'gateway']);
  tenant = await onboard(stack);
  photoJpeg = await sharp(await readFile(`${PHOTOS}/astronaut.png`))
    .jpeg({ quality: 90 })
    .toBuffer();
}, 120_000);
afterAll(() => stack?.stop());

async function sign(
  bytes: Buffer,
  name = 'photo.jpg',
  metadata: Record<string, string> = { generator: 'ImageGen', model: 'v3' },
) {
  return stack.request('/v1/sign', {
    method: 'POST',
    key: tenant.api_key,
    headers: { 'idempotency-key': crypto.randomUUID() },
    body: multipart({ recipe: 'image-genai-v1', metadata: JSON.stringify(metadata) }, { field: 'asset', bytes, name }),
  });
}

const verifyFile = (bytes: Buffer, key?: string) =>
  verifyUpload<
    Record<string, unknown> & {
      status: string;
      confidence: number | null;
      matches: Array<Record<string, unknown>>;
    }
  >(stack, bytes, 'x', key);

describe('image sign → verify through HTTP', () => {
  let signed: Record<string, string>;
  let signedBytes: Buffer;
  /** The first test's signed JPEG, or signed here when a test runs without it (`-t`): no test needs another first. */
  async function signedJpeg(): Promise<void> {
    if (signed) return;
    const res = await sign(photoJpeg);
    expect(res.status).toBe(200);
    signed = (await res.json()) as Record<string, string>;
    signedBytes = Buffer.from(
      await (await stack.request(`/v1/assets/${signed.asset_id}/content`, { key: tenant.api_key })).arrayBuffer(),
    );
  }

  it('signs a JPEG: watermark, C2PA manifest, stored asset, public URLs', async () => {
    const res = await sign(photoJpeg);
    expect(res.status).toBe(200);
    signed = (await res.json()) as Record<string, string>;
    expect(signed).toMatchObject({
      asset_id: expect.stringMatching(/^a_/),
      watermark_id: expect.stringMatching(/^w_/),
      manifest_uri: `${stack.baseUrl}/v1/manifests/${signed.manifest_id}`,
      verifier_url: `${stack.baseUrl}/v/${signed.asset_id}`,
      asset_url: `${stack.baseUrl}/v1/assets/${signed.asset_id}/content`,
      media_type: 'image/jpeg',
    });
    const download = await stack.request(`/v1/assets/${signed.asset_id}/content`, { key: tenant.api_key });
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('image/jpeg');
    signedBytes = Buffer.from(await download.arrayBuffer());
    const manifest = await stack.request(`/v1/manifests/${signed.manifest_id}`);
    expect(manifest.headers.get('content-type')).toBe('application/c2pa');
    expect(manifest.headers.get('cache-control')).toContain('immutable');
    expect(signedBytes.includes(Buffer.from(await manifest.arrayBuffer()))).toBe(true);
  });

  it('verifies the downloaded file: verified_manifest_and_watermark_match', async () => {
    await signedJpeg();
    const result = await verifyFile(signedBytes);
    expect(result.status).toBe('verified_manifest_and_watermark_match');
    expect(result.confidence).toBeGreaterThan(0.8);
    expect(result.signals).toMatchObject({
      c2pa_manifest_present: true,
      c2pa_signature_valid: true,
      signer_trusted: true,
      ocsp_status: 'good',
      watermark_present: true,
      watermark_payload_valid: true,
    });
    expect(result.claims).toMatchObject({ generator: 'ImageGen', model: 'v3', ai_generated: true });
    expect(result.manifest_id).toBe(signed.manifest_id);
  });

  it('flipped signature bytes: manifest_tampered with null confidence', async () => {
    await signedJpeg();
    const manifest = Buffer.from(await (await stack.request(`/v1/manifests/${signed.manifest_id}`)).arrayBuffer());
    const at = signedBytes.indexOf(manifest);
    // The COSE signature sits near the end of the manifest store: flip bytes there.
    const tampered = Buffer.from(signedBytes);
    for (let i = 0; i < 8; i++) {
      const index = at + manifest.length - 40 - i;
      tampered[index] = (tampered[index] ?? 0) ^ 0xff;
    }
    const result = await verifyFile(tampered);
    expect(result.status).toBe('manifest_tampered');
    expect(result.confidence).toBeNull();
  });

  it('manifest stripped: watermark_only with the original in matches', async () => {
    await signedJpeg();
    const stripped = await sharp(signedBytes).jpeg({ quality: 90 }).toBuffer();
    const result = await verifyFile(stripped);
    expect(result.status).toBe('watermark_only');
    expect(result.matches[0]).toMatchObject({
      asset_id: signed.asset_id,
      manifest_uri: signed.manifest_uri,
      verifier_url: signed.verifier_url,
      via: 'watermark',
    });
  });

  it('a plain photo: no_provenance', async () => {
    const plain = await sharp(await readFile(`${PHOTOS}/coffee.png`))
      .jpeg()
      .toBuffer();
    const result = await verifyFile(plain);
    expect(result.status).toBe('no_provenance');
    expect(result.confidence).toBe(0);
  });
});
