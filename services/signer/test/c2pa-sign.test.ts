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
    softBinding: { alg: 'cairn-dct-v1', value: '00ff10aa' },
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

    // Claim generator: cairn/<version> (c2pa-rs adds its own version as an extra key).
    const [info] = manifest.claim_generator_info as Json[];
    expect(info).toMatchObject({ name: 'cairn', version: '0.1.0' });
    expect(manifest.title).toBe('astronaut');
    expect(manifest.claim_version).toBe(2);

    // Actions v2: c2pa.created with the digital source type and the generator as software agent.
    const actions = assertion(assertions, 'c2pa.actions.v2')?.actions as Json[];
    expect(actions[0]).toMatchObject({
      action: 'c2pa.created',
      digitalSourceType: AI,
      softwareAgent: { name: 'Cairn Image Studio' },
      when: '2026-11-20T10:00:00.000Z',
    });

    // The metadata assertion carries exactly the sign metadata, no prompt.
    expect(assertion(assertions, 'com.cairn.generation')).toEqual(METADATA);
    expect(JSON.stringify(manifest)).not.toMatch(/"prompt"/);

    expect(assertion(assertions, 'c2pa.soft-binding')).toEqual({
      alg: 'cairn-dct-v1',
      blocks: [{ scope: {}, value: '00ff10aa' }],
    });
    expect(assertion(assertions, 'stds.schema-org.CreativeWork')).toMatchObject({
      author: [
        { '@type': 'Person', name: 'Ada Lovelace' },
        { '@type': 'Organization', name: 'Analytical Engines Ltd' },
      ],
    });

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
    const actions = assertion(assertions, 'c2pa.actions.v2')?.actions as Json[];
    expect(actions[0]?.action).toBe('c2pa.opened');
    expect((manifest.ingredients as Json[])[0]?.relationship).toBe('parentOf');
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
    expect(assertions.map((a) => a.label)).toEqual(['c2pa.actions.v2']);
    expect(manifest.thumbnail).toBeUndefined(); // c2pa-rs's own thumbnail is off
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
