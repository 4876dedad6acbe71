import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { sniffMediaType } from '@cairn/media';
import { lookupFile, untilIndexed } from './lookup.js';
import { watermarkBindingOf } from './soft-binding.js';
import { onboard, signAndFetch, startStack, verifyUpload, type SignUpload, type Stack } from './stack.js';

/** What the audio and video watermark tests read of `POST /v1/verify`. */
export interface Verification {
  status: string;
  asset_id?: string;
  confidence: number | null;
  developer_explanation: string;
  signals: Record<string, unknown>;
  warnings: string[];
  matches: Array<{ asset_id?: string; via?: string }>;
}

export interface SignedAsset {
  asset_id: string;
  manifest_id: string;
  watermark_id: string;
  media_type: string;
}

/**
 * The fleet a watermark or lookup test signs, indexes and verifies through, in this process. Public verifies are
 * allowed 1000 a minute: these tests verify many copies from one address.
 */
export function startWatermarkStack(): Promise<Stack> {
  return startStack(['watermark', 'signer', 'verifier', 'softbinding', 'gateway'], {
    PUBLIC_VERIFY_PER_MINUTE: '1000',
  });
}

/** What a watermark test file signed in its beforeAll (signedForFile), read once that has run. */
export interface SignedFile {
  stack: Stack;
  /** The tenant that signed it. */
  owner: { tenant_id: string; api_key: string };
  signed: SignedAsset;
  signedBytes: Buffer;
  /** The upload's file name, which the signed file is verified under too. */
  name: string;
}

/**
 * A watermark test file's set-up: a beforeAll (allowed `timeoutMs`) that starts the watermark stack, onboards the
 * owner, and signs and indexes what `upload` makes (signAndIndex); an afterAll that stops the stack. Answers the
 * signed file, filled in place by that beforeAll.
 */
export function signedForFile(upload: () => Promise<SignUpload>, timeoutMs: number): SignedFile {
  const file = {} as SignedFile;
  beforeAll(async () => {
    file.stack = await startWatermarkStack();
    file.owner = await onboard(file.stack);
    const made = await upload();
    file.name = made.name;
    Object.assign(file, await signAndIndex(file.stack, file.owner.api_key, made));
  }, timeoutMs);
  afterAll(() => file.stack?.stop());
  return file;
}

/**
 * The two tests every medium's watermark test file opens with. `marked` (its title given): the signed file is of
 * `mediaType` (named and sniffed), marked, and its manifest names that mark's `alg` and a 64-bit payload in its
 * soft-binding assertion. Then: the signed file verifies verified_manifest_and_watermark_match, with a valid manifest.
 */
export function itSignsMarkedAndVerifies(
  file: SignedFile,
  marked: { title: string; mediaType: string; alg: string },
  verifyTimeoutMs?: number,
): void {
  it(marked.title, async () => {
    const { stack, signed, signedBytes } = file;
    expect(signed.media_type).toBe(marked.mediaType);
    expect(signed.watermark_id).toMatch(/^w_/);
    expect(sniffMediaType(signedBytes)?.mediaType).toBe(marked.mediaType);
    const binding = watermarkBindingOf(
      Buffer.from(await (await stack.request(`/v1/manifests/${signed.manifest_id}`)).arrayBuffer()),
    );
    expect(binding.alg).toBe(marked.alg);
    expect(binding.payloadHex).toMatch(/^[0-9a-f]{16}$/);
  });

  it(
    'the signed file verifies verified_manifest_and_watermark_match',
    async () => {
      const { stack, signedBytes, name } = file;
      const result = await verifyFile(stack, signedBytes, name);
      expect(result.signals).toMatchObject({ c2pa_manifest_present: true, c2pa_signature_valid: true });
      expect(result.status).toBe('verified_manifest_and_watermark_match');
    },
    verifyTimeoutMs,
  );
}

/** The verdict of a copy that lost its manifest but kept the mark: watermark_only, naming `assetId` by the mark. */
export function expectWatermarkOnly(result: Verification, assetId: string): void {
  expect(result.signals.c2pa_manifest_present).toBe(false);
  expect(result.status).toBe('watermark_only');
  expect(result.matches[0]).toMatchObject({ asset_id: assetId, via: 'watermark' });
}

/**
 * An honest copy of a signed asset that lost its manifest (re-encoded, cropped, mirrored): watermark_only naming the
 * asset, its content not doubted (the content check passed).
 */
export function expectHonestCopy(result: Verification, assetId: string): void {
  expectWatermarkOnly(result, assetId);
  expect(result.warnings).not.toContain('watermark_content_mismatch');
  expect(result.asset_id).toBe(assetId);
}

/**
 * A registered mark read on content that is not its asset's (lifted and laid onto other content): the content check
 * refuses it, and nothing of the asset is answered.
 */
export function expectTransplantRefused(result: Verification, assetId: string): void {
  expect(result.warnings).toContain('watermark_content_mismatch');
  expect(result.asset_id).toBeUndefined();
  expect(JSON.stringify(result)).not.toContain(assetId);
}

/**
 * manifest_watermark_conflict: a file signed as asset `signedAs` whose content carries the mark of asset `markOf`.
 * The verdict names the signed asset, explains with the other, and is not confident.
 */
export function expectConflict(
  result: {
    status: string;
    warnings: string[];
    asset_id?: string;
    developer_explanation: string;
    confidence: number | null;
  },
  signedAs: string,
  markOf: string,
): void {
  // With the warnings: another status (inconclusive, say) shows which signal it came from.
  expect({ status: result.status, warnings: result.warnings }).toMatchObject({ status: 'manifest_watermark_conflict' });
  expect(result.asset_id).toBe(signedAs);
  expect(result.developer_explanation).toContain(markOf);
  expect(result.confidence).toBeLessThanOrEqual(0.35);
}

/** An MP4 clip to sign under video-genai-v1, as ClipGen's. */
export function clipUpload(bytes: Buffer): SignUpload {
  return { recipe: 'video-genai-v1', metadata: { generator: 'ClipGen', model: 'v1' }, bytes, name: 'clip.mp4' };
}

/** A public `POST /v1/verify` of a file; it must answer 200. */
export function verifyFile(stack: Stack, bytes: Buffer, name: string): Promise<Verification> {
  return verifyUpload<Verification>(stack, bytes, name);
}

/**
 * Signs `bytes` under `recipe`, fetches the signed content, and waits until the soft-binding service has indexed
 * it: a watermark-only lead is checked against the content's fingerprint, so a verify before that names nothing.
 */
export async function signAndIndex(
  stack: Stack,
  apiKey: string,
  upload: SignUpload,
): Promise<{ signed: SignedAsset; signedBytes: Buffer }> {
  const { signed, signedBytes } = await signAndFetch<SignedAsset>(stack, apiKey, upload);
  const extension = upload.name.slice(upload.name.lastIndexOf('.'));
  await untilIndexed(() => lookupFile(stack, apiKey, { bytes: signedBytes, name: `a${extension}` }));
  return { signed, signedBytes };
}
