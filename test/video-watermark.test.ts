import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sniffMediaType } from '@cairn/media';
import { clip, transcoded } from '../services/watermark/test/support/video.js';
import { lookupFile, untilIndexed } from './support/lookup.js';
import { watermarkBindingOf } from './support/soft-binding.js';
import { multipart, onboard, startStack, type Stack } from './support/stack.js';

let stack: Stack;
let owner: { tenant_id: string; api_key: string };
let signed: { asset_id: string; manifest_id: string; watermark_id: string; media_type: string };
let signedBytes: Buffer;

interface Verification {
  status: string;
  signals: Record<string, unknown>;
  matches: Array<{ asset_id?: string; via?: string }>;
}

async function verifyFile(bytes: Buffer, name: string): Promise<Verification> {
  const res = await stack.request('/v1/verify', {
    method: 'POST',
    body: multipart({}, { field: 'file', bytes, name }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as Verification;
}

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'verifier', 'softbinding', 'gateway'], {
    PUBLIC_VERIFY_PER_MINUTE: '1000',
  });
  owner = await onboard(stack);
  // 2 s of a moving test pattern with a tone, 1280×720 at 25 fps, H.264/AAC in MP4, made here with ffmpeg (720p:
  // below it H.264 CRF 28 smooths the frame mark's chips away, see services/watermark/README.md).
  const upload = await clip('testsrc2', { seconds: 2, width: 1280, height: 720, audio: true });
  const res = await stack.request('/v1/sign', {
    method: 'POST',
    key: owner.api_key,
    headers: { 'idempotency-key': crypto.randomUUID() },
    body: multipart(
      { recipe: 'video-genai-v1', metadata: JSON.stringify({ generator: 'ClipGen', model: 'v1' }) },
      { field: 'asset', bytes: upload, name: 'clip.mp4' },
    ),
  });
  if (res.status !== 200) throw new Error(`sign: ${res.status} ${await res.text()}`);
  signed = (await res.json()) as typeof signed;
  signedBytes = Buffer.from(
    await (await stack.request(`/v1/assets/${signed.asset_id}/content`, { key: owner.api_key })).arrayBuffer(),
  );
  // A watermark-only lead is checked against the content's fingerprint: wait until the signed clip is indexed.
  await untilIndexed(() => lookupFile(stack, owner.api_key, { bytes: signedBytes, name: 'a.mp4' }));
}, 240_000);
afterAll(() => stack?.stop());

describe('video watermark through HTTP (video-genai-v1)', () => {
  it('signs an MP4 as MP4 whose frames carry the mark the manifest names (cairn-sync-v2 and its payload)', async () => {
    expect(signed.media_type).toBe('video/mp4');
    expect(signed.watermark_id).toMatch(/^w_/);
    expect(sniffMediaType(signedBytes)?.mediaType).toBe('video/mp4');
    const binding = watermarkBindingOf(
      Buffer.from(await (await stack.request(`/v1/manifests/${signed.manifest_id}`)).arrayBuffer()),
    );
    expect(binding.alg).toBe('cairn-sync-v2');
    expect(binding.payloadHex).toMatch(/^[0-9a-f]{16}$/);
  });

  it('the signed file verifies verified_manifest_and_watermark_match', async () => {
    const result = await verifyFile(signedBytes, 'clip.mp4');
    expect(result.signals).toMatchObject({ c2pa_manifest_present: true, c2pa_signature_valid: true });
    expect(result.status).toBe('verified_manifest_and_watermark_match');
  }, 60_000);

  it('the same re-encoded with H.264 CRF 28 (manifest gone) verifies watermark_only, naming its asset', async () => {
    const copy = await transcoded(signedBytes, ['-c:v', 'libx264', '-crf', '28', '-c:a', 'aac', '-b:a', '96k']);
    const result = await verifyFile(copy, 'copy.mp4');
    expect(result.signals.c2pa_manifest_present).toBe(false);
    expect(result.status).toBe('watermark_only');
    expect(result.matches[0]).toMatchObject({ asset_id: signed.asset_id, via: 'watermark' });
  }, 60_000);

  it('an unmarked clip of the same kind verifies no_provenance (the detector does not invent a mark)', async () => {
    const other = await clip('mandelbrot', { seconds: 2, width: 1280, height: 720 });
    const result = await verifyFile(other, 'other.mp4');
    expect(result.status).toBe('no_provenance');
  }, 60_000);
});
