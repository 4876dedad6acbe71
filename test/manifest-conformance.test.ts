import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import sharp from 'sharp';
import { Builder, Reader } from '@contentauth/c2pa-node';
import { runFfmpeg } from '@cairn/media';
import { signerV1 } from '@cairn/proto';
import { createClient } from '@cairn/rpc';
import { clip } from './support/video.js';
import { callbackSignerFor, makeTestCredential, type TestCredential } from '../services/signer/test/c2pa-fixtures.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';
import { onboard, signAndFetch, startStack, type Stack } from './support/stack.js';

// What a validator reads in the manifests Cairn signs, next to what the reference SDK (c2pa-rs, through c2pa-node)
// writes for the same file: Cairn's manifests carry the C2PA 2.3 watermark action bound to their soft-binding
// assertion, the 2.4 AI disclosure and specVersion, and a validator reports nothing on them it would not report
// on the reference SDK's own manifest (no failure; no informational code the reference does not get).

const AI = 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia';
const KEY_ID = 'conformance-k1';
const SOFT_BINDING_URI = 'self#jumbf=c2pa.assertions/c2pa.soft-binding';

type Json = Record<string, unknown>;
interface StatusEntry {
  code: string;
  url?: string;
}
interface Report {
  state: string;
  failure: string[];
  informational: string[];
  /** c2pa-rs's flat status list (failures and warnings). */
  status: string[];
  success: StatusEntry[];
  manifest: Json;
  assertions: Array<{ label: string; data: Json; created?: boolean }>;
}

let stack: Stack;
let apiKey: string;
let reference: TestCredential;
let settings: string;

/** Reads a manifest the way a validator does: every code it reports, under the same trust settings for both. */
async function readReport(asset: Buffer, mimeType: string, sidecar?: Buffer): Promise<Report> {
  const reader = sidecar
    ? await Reader.fromManifestDataAndAsset(sidecar, { buffer: asset, mimeType }, settings)
    : await Reader.fromAsset({ buffer: asset, mimeType }, settings);
  if (!reader) throw new Error('no manifest');
  const store = reader.json() as Json;
  const results = (store.validation_results as { activeManifest: Record<string, StatusEntry[]> }).activeManifest;
  const manifest = (store.manifests as Record<string, Json>)[store.active_manifest as string] as Json;
  return {
    state: store.validation_state as string,
    failure: results.failure!.map((s) => s.code),
    informational: results.informational!.map((s) => s.code),
    status: ((store.validation_status as StatusEntry[] | undefined) ?? []).map((s) => s.code),
    success: results.success!,
    manifest,
    assertions: manifest.assertions as Report['assertions'],
  };
}

/** The reference SDK's own minimal manifest for `upload`: c2pa.created with the source type, nothing else. */
async function referenceSign(upload: Buffer, mimeType: string, sidecar: boolean): Promise<Report> {
  const builder = Builder.withJson(
    {
      claim_generator_info: [{ name: 'reference', version: '1.0.0' }],
      assertions: [
        { label: 'c2pa.actions.v2', data: { actions: [{ action: 'c2pa.created', digitalSourceType: AI }] } },
      ],
    },
    JSON.stringify({ verify: { verify_after_sign: false } }),
  );
  if (sidecar) builder.setNoEmbed(true);
  const dest = { buffer: null as Buffer | null };
  const store = await builder.signAsync(callbackSignerFor(reference), { buffer: upload, mimeType }, dest);
  return sidecar ? readReport(upload, mimeType, store) : readReport(dest.buffer!, mimeType);
}

/** Cairn's manifest for `upload` signed over HTTP: the embedded store, or the sidecar served at manifest_uri. */
async function cairnSign(
  recipe: string,
  upload: Buffer,
  name: string,
  mimeType: string,
  sidecar: boolean,
): Promise<Report & { watermarkId?: string; warnings?: string[] }> {
  const { signed, signedBytes } = await signAndFetch<{
    asset_id: string;
    manifest_id: string;
    media_type: string;
    watermark_id?: string;
    warnings?: string[];
  }>(stack, apiKey, { recipe, bytes: upload, name, metadata: { generator: 'Conformance Studio', model: 'gen-2' } });
  expect(signed.media_type).toBe(mimeType);
  const answer = {
    ...(signed.watermark_id ? { watermarkId: signed.watermark_id } : {}),
    ...(signed.warnings ? { warnings: signed.warnings } : {}),
  };
  if (!sidecar) return { ...(await readReport(signedBytes, mimeType)), ...answer };
  const store = Buffer.from(await (await stack.request(`/v1/manifests/${signed.manifest_id}`)).arrayBuffer());
  return { ...(await readReport(signedBytes, mimeType, store)), ...answer };
}

function actionsOf(report: Report): Json[] {
  return report.assertions.find((a) => a.label === 'c2pa.actions.v2')!.data.actions as Json[];
}

/** Nothing a validator reports on Cairn's manifest that it does not report on the reference SDK's. */
function expectNoMoreThanReference(cairn: Report, ref: Report): void {
  expect(ref.failure).toEqual([]);
  expect(cairn.failure).toEqual([]);
  expect(cairn.state).toBe(ref.state);
  for (const code of cairn.informational) expect(ref.informational).toContain(code);
  for (const code of cairn.status) expect(ref.status).toContain(code);
}

/** The bound watermark action, naming the soft-binding assertion the claim lists, with its algorithm and key. */
function expectBoundWatermark(report: Report, alg: string): void {
  const [first, ...rest] = actionsOf(report);
  expect(first).toMatchObject({ action: 'c2pa.created', digitalSourceType: AI });
  expect(rest).toEqual([
    {
      action: 'c2pa.watermarked.bound',
      parameters: { 'com.cairn.watermark': { softBinding: SOFT_BINDING_URI, alg, keyId: KEY_ID } },
    },
  ]);
  const softBinding = report.assertions.find((a) => a.label === 'c2pa.soft-binding');
  expect(softBinding).toMatchObject({ created: true, data: { alg, blocks: [{ scope: {} }] } });
  expect(String((softBinding!.data.blocks as Json[])[0]!.value)).toMatch(/^[0-9a-f]{16}$/);
  // The URI resolves: the claim lists that assertion and its hash matched.
  const label = report.manifest.label as string;
  expect(report.success).toContainEqual(
    expect.objectContaining({
      code: 'assertion.hashedURI.match',
      url: `self#jumbf=/c2pa/${label}/c2pa.assertions/c2pa.soft-binding`,
    }),
  );
  // A watermark action needs a soft-binding assertion in the same manifest (C2PA 2.3 §18.15.5): exactly one here.
  expect(report.assertions.filter((a) => a.label.startsWith('c2pa.soft-binding'))).toHaveLength(1);
}

function expectGenerative(report: Report): void {
  const [info] = report.manifest.claim_generator_info as Json[];
  expect(info).toMatchObject({ name: 'cairn', specVersion: '2.4.0' });
  expect(report.assertions.find((a) => a.label === 'c2pa.ai-disclosure')).toEqual({
    label: 'c2pa.ai-disclosure',
    data: { modelType: 'c2pa.types.model', modelName: 'gen-2' },
    created: true,
  });
  expect(report.assertions.map((a) => a.label)).not.toContain('stds.schema-org.CreativeWork');
}

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'gateway'], {
    WATERMARK_KEYS: `${KEY_ID}:${'5a'.repeat(32)}`,
  });
  ({ api_key: apiKey } = await onboard(stack));
  reference = await makeTestCredential({ commonName: 'Reference SDK Signer' });
  const signer = createClient(signerV1.SignerService, String(stack.env.SIGNER_GRPC_ADDR));
  const { rootPem } = await signer.getTrustAnchors({});
  signer.close();
  settings = JSON.stringify({
    verify: { verify_trust: true },
    trust: { trust_anchors: [...rootPem, reference.caCertPem].join('\n') },
  });
}, 120_000);

afterAll(() => stack?.stop());

describe('Cairn manifests next to the reference SDK', () => {
  it('JPEG (image-genai-v1): the bound watermark (cairn-sync-v2), AI disclosure, specVersion; nothing more reported', async () => {
    const photo = await readFile(`${SHARED_DIR}/fixtures/photos/chelsea.png`);
    const jpeg = await sharp(photo).resize(512, 512).jpeg({ quality: 85 }).toBuffer();
    const cairn = await cairnSign('image-genai-v1', jpeg, 'photo.jpg', 'image/jpeg', false);
    expectNoMoreThanReference(cairn, await referenceSign(jpeg, 'image/jpeg', false));
    expect(cairn.state).toBe('Trusted');
    expectBoundWatermark(cairn, 'cairn-sync-v2');
    expectGenerative(cairn);
  });

  it('WAV (audio-genai-v1): the bound audio watermark (cairn-audio-wm-v3)', async () => {
    const wav = await readFile(`${SHARED_DIR}/fixtures/c2pa-rs/sample1.wav`);
    const cairn = await cairnSign('audio-genai-v1', wav, 'sound.wav', 'audio/wav', false);
    expectNoMoreThanReference(cairn, await referenceSign(wav, 'audio/wav', false));
    expectBoundWatermark(cairn, 'cairn-audio-wm-v3');
    expectGenerative(cairn);
  });

  it('OGG with a sidecar manifest (audio-genai-v1): the same bound watermark in the sidecar', async () => {
    const ogg = await runFfmpeg({
      args: ['-i', 'pipe:0', '-codec:a', 'libvorbis', '-q:a', '6', '-f', 'ogg', 'pipe:1'],
      input: await readFile(`${SHARED_DIR}/fixtures/c2pa-rs/sample1.wav`),
    });
    const cairn = await cairnSign('audio-genai-v1', ogg, 'sound.ogg', 'audio/ogg', true);
    expectNoMoreThanReference(cairn, await referenceSign(ogg, 'audio/ogg', true));
    // The signer's Vorbis re-encode keeps the mark under most payloads, not all; a mark that does not read back is
    // not claimed: then the sidecar records no watermark action and no soft binding, and the answer says why.
    if (cairn.watermarkId) {
      expectBoundWatermark(cairn, 'cairn-audio-wm-v3');
    } else {
      expect(cairn.warnings).toEqual(['watermark_not_embedded']);
      expect(actionsOf(cairn).map((a) => a.action)).toEqual(['c2pa.created']);
      expect(cairn.assertions.map((a) => a.label)).not.toContain('c2pa.soft-binding');
    }
    expectGenerative(cairn);
  });

  it('MP4 (video-genai-v1): the frames’ bound watermark (cairn-sync-v2)', async () => {
    const mp4 = await clip('testsrc2', { seconds: 1, width: 640, height: 360, audio: true });
    const cairn = await cairnSign('video-genai-v1', mp4, 'clip.mp4', 'video/mp4', false);
    expectNoMoreThanReference(cairn, await referenceSign(mp4, 'video/mp4', false));
    expectBoundWatermark(cairn, 'cairn-sync-v2');
    expectGenerative(cairn);
  }, 120_000);

  it('a recipe that embeds no mark (image-capture-v1) records no watermark action, no soft binding, no AI disclosure', async () => {
    const photo = await readFile(`${SHARED_DIR}/fixtures/photos/chelsea.png`);
    const jpeg = await sharp(photo).resize(400, 400).jpeg({ quality: 85 }).toBuffer();
    const cairn = await cairnSign('image-capture-v1', jpeg, 'capture.jpg', 'image/jpeg', false);
    expectNoMoreThanReference(cairn, await referenceSign(jpeg, 'image/jpeg', false));
    expect(actionsOf(cairn).map((a) => a.action)).toEqual(['c2pa.created']);
    const labels = cairn.assertions.map((a) => a.label);
    expect(labels).not.toContain('c2pa.soft-binding');
    expect(labels).not.toContain('c2pa.ai-disclosure');
    const [info] = cairn.manifest.claim_generator_info as Json[];
    expect(info).toMatchObject({ specVersion: '2.4.0' });
  });
});
