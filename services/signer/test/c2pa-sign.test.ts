import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import sharp from 'sharp';
import { Reader } from '@contentauth/c2pa-node';
import {
  buildAndSign,
  buildManifestPlan,
  C2paInputError,
  C2paSignError,
  type BuildAndSignInput,
  type EmbeddableMimeType,
} from '../src/adapters/c2pa/index.js';
import {
  callbackSignerFor,
  collectGarbage,
  localSignerFor,
  makeTestCredential,
  type TestCredential,
} from './c2pa-fixtures.js';
import { SHARED_DIR } from '../../../packages/testing/src/shared.js';

const PHOTO = `${SHARED_DIR}/fixtures/photos/astronaut.png`;
const WAV = `${SHARED_DIR}/fixtures/c2pa-rs/sample1.wav`;
const AI = 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia';
const PROMPT_HASH = `sha256:${'ab'.repeat(32)}`;

const METADATA = {
  generator: 'Cairn Image Studio',
  model: 'diffusion-xl-1.0',
  prompt_hash: PROMPT_HASH,
  created_at: '2026-11-20T10:00:00Z',
  creator: 'Ada Lovelace',
  legal_entity: 'Analytical Engines Ltd',
  legal_case_ref: 'CASE-42',
};

type Json = Record<string, unknown>;
interface Assertion {
  label: string;
  data: Json;
}

let credential: TestCredential;
let png: Buffer;
let jpeg: Buffer;
let thumbnail: Buffer;

/** Reader JSON of a signed asset, with the test CA as the only trust anchor. */
async function readBack(
  signed: Buffer,
  mimeType: string,
): Promise<{ store: Json; manifest: Json; assertions: Assertion[]; reader: Reader }> {
  const settings = JSON.stringify({ verify: { verify_trust: true }, trust: { trust_anchors: credential.caCertPem } });
  const reader = await Reader.fromAsset({ buffer: signed, mimeType }, settings);
  if (!reader) throw new Error('no manifest found');
  const store = reader.json() as Json;
  const manifests = store.manifests as Record<string, Json>;
  const manifest = manifests[store.active_manifest as string] as Json;
  return { store, manifest, assertions: manifest.assertions as Assertion[], reader };
}

function assertion(assertions: Assertion[], label: string): Json | undefined {
  return assertions.find((a) => a.label === label)?.data;
}

function input(
  overrides: Partial<BuildAndSignInput> & Pick<BuildAndSignInput, 'asset' | 'mimeType' | 'signer'>,
): BuildAndSignInput {
  return {
    claimGenerator: { name: 'cairn', version: '0.1.0' },
    title: 'astronaut',
    digitalSourceType: AI,
    metadata: METADATA,
    softBinding: { alg: 'cairn-dct-v1', value: '00ff10aa', keyId: 'k1' },
    ...overrides,
  };
}

beforeAll(async () => {
  credential = await makeTestCredential();
  png = readFileSync(PHOTO);
  jpeg = await sharp(png).jpeg({ quality: 90 }).toBuffer();
  thumbnail = await sharp(png).resize(256, 256).jpeg({ quality: 75 }).toBuffer();
});

// Let the process exit promptly: CallbackSigners keep the event loop alive until collected.
afterAll(() => collectGarbage());

describe('buildAndSign', () => {
  it.each([
    ['image/png', 'LocalSigner'],
    ['image/jpeg', 'CallbackSigner'],
  ] as const)('signs a %s with a %s and the manifest reads back complete', async (mimeType, signerKind) => {
    const asset = mimeType === 'image/png' ? png : jpeg;
    const signer = signerKind === 'LocalSigner' ? localSignerFor(credential) : callbackSignerFor(credential);
    const result = await buildAndSign(
      input({ asset, mimeType, signer, thumbnail: { bytes: thumbnail, mimeType: 'image/jpeg' } }),
    );

    const { store, manifest, assertions, reader } = await readBack(result.signed, mimeType);
    expect(store.validation_state).toBe('Trusted');
    expect(store.validation_status ?? []).toEqual([]);
    expect(store.active_manifest).toBe(result.manifestLabel);
    expect(result.manifestLabel).toMatch(/^urn:c2pa:/);

    // Claim generator: cairn/<version> and the C2PA version it follows (c2pa-rs adds its own version as an extra key).
    const [info] = manifest.claim_generator_info as Json[];
    expect(info).toMatchObject({ name: 'cairn', version: '0.1.0', specVersion: '2.4.0' });
    expect(manifest.title).toBe('astronaut');
    expect(manifest.claim_version).toBe(2);

    // Actions v2 (a created assertion): c2pa.created with the digital source type and the generator as software
    // agent, then the watermark bound to the soft-binding assertion, with its algorithm and key id.
    const actionsAssertion = assertions.find((a) => a.label === 'c2pa.actions.v2') as Assertion & { created?: boolean };
    expect(actionsAssertion.created).toBe(true);
    const actions = actionsAssertion.data.actions as Json[];
    expect(actions).toHaveLength(2);
    expect(actions[0]).toMatchObject({
      action: 'c2pa.created',
      digitalSourceType: AI,
      softwareAgent: { name: 'Cairn Image Studio' },
      when: '2026-11-20T10:00:00.000Z',
    });
    expect(actions[1]).toEqual({
      action: 'c2pa.watermarked.bound',
      parameters: {
        'com.cairn.watermark': {
          softBinding: 'self#jumbf=c2pa.assertions/c2pa.soft-binding',
          alg: 'cairn-dct-v1',
          keyId: 'k1',
        },
      },
    });
    // The URI names the soft-binding assertion the claim lists.
    const listed = ((store.validation_results as Json).activeManifest as { success: Array<{ url: string }> }).success;
    expect(listed.some((s) => s.url.endsWith('/c2pa.assertions/c2pa.soft-binding'))).toBe(true);

    // C2PA 2.4 AI disclosure beside the generative source type: the generic model type and the model's name.
    expect(assertion(assertions, 'c2pa.ai-disclosure')).toEqual({
      modelType: 'c2pa.types.model',
      modelName: 'diffusion-xl-1.0',
    });

    // The metadata assertion carries exactly the sign metadata, no prompt.
    expect(assertion(assertions, 'com.cairn.generation')).toEqual(METADATA);
    expect(JSON.stringify(manifest)).not.toMatch(/"prompt"/);

    expect(assertion(assertions, 'c2pa.soft-binding')).toEqual({
      alg: 'cairn-dct-v1',
      blocks: [{ scope: {}, value: '00ff10aa' }],
    });
    // Nothing deprecated in the version claimed: schema.org CreativeWork (deprecated since C2PA 1.4) is not written.
    expect(assertions.map((a) => a.label)).not.toContain('stds.schema-org.CreativeWork');

    // The claim thumbnail is the caller's bytes, untouched.
    const thumbRef = manifest.thumbnail as { format: string; identifier: string };
    expect(thumbRef.format).toBe('image/jpeg');
    const thumb = await reader.resourceToAsset(thumbRef.identifier, { buffer: null });
    expect(thumb.buffer.equals(thumbnail)).toBe(true);

    // The returned manifest store is the JUMBF embedded in the asset, and reads back as a sidecar too.
    expect(result.signed.includes(result.manifestStore)).toBe(true);
    const sidecar = await Reader.fromManifestDataAndAsset(result.manifestStore, { buffer: result.signed, mimeType });
    expect(sidecar.activeLabel()).toBe(result.manifestLabel);
    expect((sidecar.json() as { validation_state?: string }).validation_state).toBe('Valid'); // no trust list given: valid, untrusted
  });

  it.each([
    ['image/webp', async () => sharp(png).webp({ quality: 85 }).toBuffer()],
    ['audio/wav', async () => readFileSync(WAV)],
  ] as const)('embeds into %s', async (mimeType: EmbeddableMimeType, make: () => Promise<Buffer>) => {
    const result = await buildAndSign(input({ asset: await make(), mimeType, signer: localSignerFor(credential) }));
    const { store, assertions } = await readBack(result.signed, mimeType);
    expect(store.validation_state).toBe('Trusted');
    expect(assertion(assertions, 'com.cairn.generation')).toEqual(METADATA);
    expect(result.signed.includes(result.manifestStore)).toBe(true);
  });

  it('without a digital source type records the received file as the opened parent', async () => {
    const result = await buildAndSign(
      input({ asset: jpeg, mimeType: 'image/jpeg', signer: localSignerFor(credential), digitalSourceType: undefined }),
    );
    const { store, manifest, assertions } = await readBack(result.signed, 'image/jpeg');
    expect(store.validation_state).toBe('Trusted');
    // c2pa-rs puts c2pa.opened first in Cairn's actions assertion; the watermark follows it.
    const actions = assertion(assertions, 'c2pa.actions.v2')?.actions as Json[];
    expect(actions.map((a) => a.action)).toEqual(['c2pa.opened', 'c2pa.watermarked.bound']);
    expect((manifest.ingredients as Json[])[0]?.relationship).toBe('parentOf');
    // No source type: nothing says a model made it.
    expect(assertion(assertions, 'c2pa.ai-disclosure')).toBeUndefined();
  });

  it('omits optional assertions when not asked for', async () => {
    const result = await buildAndSign({
      asset: jpeg,
      mimeType: 'image/jpeg',
      signer: localSignerFor(credential),
      claimGenerator: { name: 'cairn', version: '2.0.0' },
      digitalSourceType: AI,
      metadata: {},
    });
    const { store, manifest, assertions } = await readBack(result.signed, 'image/jpeg');
    expect(store.validation_state).toBe('Trusted');
    // No mark, no watermark action; the AI disclosure without a model name (none given).
    expect(assertions.map((a) => a.label)).toEqual(['c2pa.actions.v2', 'c2pa.ai-disclosure']);
    expect((assertion(assertions, 'c2pa.actions.v2')?.actions as Json[]).map((a) => a.action)).toEqual([
      'c2pa.created',
    ]);
    expect(assertion(assertions, 'c2pa.ai-disclosure')).toEqual({ modelType: 'c2pa.types.model' });
    expect(manifest.thumbnail).toBeUndefined(); // c2pa-rs's own thumbnail is off
  });

  it('discloses AI only for a source type a trained model made: a capture gets none', async () => {
    const capture = 'http://cv.iptc.org/newscodes/digitalsourcetype/digitalCapture';
    const composite = 'http://cv.iptc.org/newscodes/digitalsourcetype/compositeWithTrainedAlgorithmicMedia';
    const labels = (digitalSourceType: string) =>
      buildManifestPlan(
        input({ asset: jpeg, mimeType: 'image/jpeg', signer: localSignerFor(credential), digitalSourceType }),
      ).definition.assertions.map((a) => a.label);
    expect(labels(capture)).not.toContain('c2pa.ai-disclosure');
    expect(labels(composite)).toContain('c2pa.ai-disclosure');
    expect(labels(AI)).toContain('c2pa.ai-disclosure');
  });

  it('never carries fields outside the sign metadata, and refuses a prompt in place of its hash', async () => {
    const withPrompt = { ...METADATA, prompt: 'a secret prompt' } as typeof METADATA;
    expect(
      buildManifestPlan(
        input({ asset: jpeg, mimeType: 'image/jpeg', signer: localSignerFor(credential), metadata: withPrompt }),
      ).definition.assertions.find((a) => a.label === 'com.cairn.generation')?.data,
    ).toEqual(METADATA);

    await expect(
      buildAndSign(
        input({
          asset: jpeg,
          mimeType: 'image/jpeg',
          signer: localSignerFor(credential),
          metadata: { prompt_hash: 'a cat on a mat' },
        }),
      ),
    ).rejects.toBeInstanceOf(C2paInputError);
  });

  it('refuses a type it neither embeds into nor signs with a sidecar', async () => {
    const mkv = Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0, 0, 0, 0]);
    await expect(
      buildAndSign(
        input({ asset: mkv, mimeType: 'video/x-matroska' as EmbeddableMimeType, signer: localSignerFor(credential) }),
      ),
    ).rejects.toBeInstanceOf(C2paSignError);
  });

  it('signs a sidecar type (OGG) without touching the file: the store is returned on its own', async () => {
    const ogg = Buffer.from('OggS\0\x02 not really a stream, and that does not matter to a data hash', 'latin1');
    const result = await buildAndSign(input({ asset: ogg, mimeType: 'audio/ogg', signer: localSignerFor(credential) }));
    expect(result.signed.equals(ogg)).toBe(true);
    expect(result.manifestStore.subarray(4, 8).toString('latin1')).toBe('jumb');
    expect(result.manifestLabel).toMatch(/^urn:c2pa:/);
  });

  it('wraps c2pa-rs failures (an asset that is not what its type says)', async () => {
    await expect(
      buildAndSign(
        input({ asset: Buffer.from('not a jpeg at all'), mimeType: 'image/jpeg', signer: localSignerFor(credential) }),
      ),
    ).rejects.toThrow(C2paSignError);
  });
});
