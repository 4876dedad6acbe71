// readManifest against the c2pa-rs peer corpus and against Cairn-signed assets, through the real child-process
// pool. The corpus is read in place from ../shared (never copied). Here, not under services/verifier: the
// Cairn-signed assets come from the signer's C2PA adapter, and only root tests use two services' code.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { buildAndSign, newBuilder, buildManifestPlan } from '../services/signer/src/adapters/c2pa/index.js';
import {
  collectGarbage,
  localSignerFor,
  makeTestCredential,
  type TestCredential,
} from '../services/signer/test/c2pa-fixtures.js';
import {
  createManifestReader,
  type C2paReading,
  type ManifestReader,
  type ManifestReading,
} from '../services/verifier/src/adapters/c2pa/index.js';
import { decodeCbor } from '../services/verifier/src/domain/c2pa/cbor.js';
import { signatureCose } from '../services/verifier/src/domain/c2pa/jumbf.js';
import { VALID_AND_TRUSTED } from '../services/verifier/test/support/readings.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

const SHARED = `${SHARED_DIR}/fixtures/`;
const CORPUS = `${SHARED}c2pa-rs`;
const PHOTO = `${SHARED}photos/astronaut.png`;
const AI = 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia';

type SignInput = Parameters<typeof buildAndSign>[0];

/** Signs `input.asset` with `credential` as Cairn, an AI-generated asset with no metadata unless `input` says. */
const signAsCairn = (
  credential: Parameters<typeof localSignerFor>[0],
  input: Pick<SignInput, 'asset' | 'mimeType'> & Partial<SignInput>,
) =>
  buildAndSign({
    signer: localSignerFor(credential),
    claimGenerator: { name: 'cairn', version: '0.3.0' },
    digitalSourceType: AI,
    metadata: {},
    ...input,
  });
const TEST_ANCHORS = readFileSync(`${CORPUS}/test-trust-anchors.pem`, 'utf8');

let reader: ManifestReader;
let credential: TestCredential;

function manifest(reading: C2paReading): ManifestReading {
  if (reading.kind !== 'manifest') throw new Error(`expected a manifest, got ${JSON.stringify(reading)}`);
  return reading;
}

async function readAsset(
  asset: Buffer,
  mimeType: string,
  trustAnchorsPem: string[],
  timeoutMs?: number,
): Promise<{ reading: C2paReading }> {
  return {
    reading: await reader.readManifest(
      { asset, mimeType, trustAnchorsPem, allowRemoteFetch: false },
      timeoutMs ? { timeoutMs } : {},
    ),
  };
}

beforeAll(async () => {
  reader = createManifestReader({ size: 2, timeoutMs: 5000 });
  credential = await makeTestCredential({ commonName: 'Cairn Verifier Test', organization: 'Cairn QA' });
  await reader.ready();
});

afterAll(async () => {
  await reader.close();
  collectGarbage(); // buildAndSign's callback signers pin the event loop until collected
});

describe('peer corpus (c2pa-rs fixtures, EXPECTED.md)', () => {
  type Expectation = (r: C2paReading, custom: boolean) => void;
  const signedValid = (): Expectation => (r, custom) => {
    const m = manifest(r);
    expect(m.signatureValid).toBe(true);
    expect(m.assertionsValid).toBe(true);
    expect(m.hardBindingValid).toBe(true);
    // Default list: manifest_signer_untrusted. Test anchors as a custom list: verified_manifest.
    expect(m.trusted).toBe(custom);
    expect(m.validationCodes.includes('signingCredential.untrusted')).toBe(!custom);
    expect(m.signer.certChainPem.length).toBeGreaterThan(0);
    expect(m.signer.commonName).toBe('C2PA Signer');
  };
  const cases: Array<[string, string, Expectation]> = [
    ['CA.jpg', 'image/jpeg', signedValid()],
    ['C.jpg', 'image/jpeg', signedValid()],
    [
      'XCA.jpg',
      'image/jpeg',
      (r) => {
        // manifest_content_modified either way: the claim is intact, the bytes it covers are not.
        const m = manifest(r);
        expect(m.signatureValid).toBe(true);
        expect(m.assertionsValid).toBe(true);
        expect(m.hardBindingValid).toBe(false);
        expect(m.validationCodes).toContain('assertion.dataHash.mismatch');
      },
    ],
    [
      'E-sig-CA.jpg',
      'image/jpeg',
      (r) => {
        // manifest_tampered either way.
        const m = manifest(r);
        expect(m.signatureValid).toBe(false);
        expect(m.validationCodes).toContain('claimSignature.mismatch');
        expect(m.timestamped).toBe(false); // its time-stamp no longer matches the signature either
      },
    ],
    ['no_manifest.jpg', 'image/jpeg', (r) => expect(r).toEqual({ kind: 'none' })],
    ['sample1.wav', 'audio/wav', (r) => expect(r).toEqual({ kind: 'none' })],
    [
      'cloud.jpg',
      'image/jpeg',
      (r) =>
        expect(r).toEqual({
          kind: 'remote',
          url: 'https://cai-manifests.adobe.com/manifests/adobe-urn-uuid-5f37e182-3687-462e-a7fb-573462780391',
          fetched: false,
        }),
    ],
    [
      'nested_moov_1000.mp4',
      'video/mp4',
      (r) => {
        expect(['malformed', 'none']).toContain(r.kind);
        if (r.kind === 'malformed') expect(r.detail).toMatch(/nested/);
      },
    ],
  ];

  for (const custom of [false, true]) {
    const list = custom ? 'test-trust-anchors.pem' : 'default (empty) list';
    it.each(cases)(`%s with the ${list}`, async (file, mimeType, expectation) => {
      const { reading } = await readAsset(readFileSync(`${CORPUS}/${file}`), mimeType, custom ? [TEST_ANCHORS] : []);
      expectation(reading, custom);
    });
  }

  it('answers the next read after the hostile MP4', async () => {
    const hostile = await readAsset(readFileSync(`${CORPUS}/nested_moov_1000.mp4`), 'video/mp4', []);
    expect(hostile.reading.kind).not.toBe('manifest');
    const next = await readAsset(readFileSync(`${CORPUS}/CA.jpg`), 'image/jpeg', [TEST_ANCHORS]);
    expect(manifest(next.reading).trusted).toBe(true);
  });

  it('keeps the trust list per read: concurrent reads with different lists do not interfere', async () => {
    const ca = readFileSync(`${CORPUS}/CA.jpg`);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        reader.readManifest({
          asset: ca,
          mimeType: 'image/jpeg',
          trustAnchorsPem: i % 2 ? [TEST_ANCHORS] : [],
          allowRemoteFetch: false,
        }),
      ),
    );
    expect(results.map((r) => manifest(r).trusted)).toEqual([false, true, false, true, false, true]);

    // One child, alternating lists: nothing carries over from the previous read.
    const single = createManifestReader({ size: 1 });
    try {
      const seq: boolean[] = [];
      for (const anchors of [[TEST_ANCHORS], [], [TEST_ANCHORS], []]) {
        seq.push(
          manifest(
            await single.readManifest({
              asset: ca,
              mimeType: 'image/jpeg',
              trustAnchorsPem: anchors,
              allowRemoteFetch: false,
            }),
          ).trusted,
        );
      }
      expect(seq).toEqual([true, false, true, false]);
    } finally {
      await single.close();
    }
  });
});

describe('remote manifest references are reported, never fetched', () => {
  let server: Server;
  let hits = 0;
  let manifestStore: Buffer = Buffer.alloc(0);

  beforeAll(async () => {
    // A loopback server that would serve the real manifest store: if the reader fetched, it would succeed.
    server = createServer((_req, res) => {
      hits++;
      res.writeHead(200, { 'content-type': 'application/c2pa' }).end(manifestStore);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('gives kind remote with the URL and makes no request', async () => {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/manifests/m_test`;
    const jpeg = await sharp(PHOTO).jpeg().toBuffer();
    const { definition } = buildManifestPlan({
      asset: jpeg,
      mimeType: 'image/jpeg',
      signer: localSignerFor(credential),
      claimGenerator: { name: 'cairn', version: '0.1.0' },
      digitalSourceType: AI,
      metadata: {},
    });
    const builder = newBuilder(definition);
    builder.setNoEmbed(true);
    builder.setRemoteUrl(url);
    const out: { buffer: Buffer | null } = { buffer: null };
    manifestStore = builder.sign(localSignerFor(credential), { buffer: jpeg, mimeType: 'image/jpeg' }, out);
    const signed = out.buffer as Buffer;

    const { reading } = await readAsset(signed, 'image/jpeg', [credential.caCertPem]);
    expect(reading).toEqual({ kind: 'remote', url, fetched: false });
    expect(hits).toBe(0);
  });

  it('refuses allowRemoteFetch other than false', async () => {
    const input = {
      asset: Buffer.alloc(4),
      mimeType: 'image/jpeg',
      trustAnchorsPem: [],
      allowRemoteFetch: true,
    } as unknown as Parameters<ManifestReader['readManifest']>[0];
    await expect(reader.readManifest(input)).rejects.toThrow(/allowRemoteFetch/);
  });
});

describe('Cairn-signed assets', () => {
  const metadata = {
    generator: 'Cairn Image Studio',
    model: 'diffusion-xl-1.0',
    prompt_hash: `sha256:${'cd'.repeat(32)}`,
    created_at: '2026-11-20T10:00:00Z',
    creator: 'Ada Lovelace',
    legal_entity: 'Analytical Engines Ltd',
    legal_case_ref: 'CASE-42',
  };
  let jpeg: Buffer;
  let thumbnail: Buffer;
  let signed: { signed: Buffer; manifestStore: Buffer; manifestLabel: string };

  beforeAll(async () => {
    jpeg = await sharp(PHOTO).jpeg({ quality: 90 }).toBuffer();
    thumbnail = await sharp(PHOTO).resize(128, 128).jpeg({ quality: 70 }).toBuffer();
    signed = await buildAndSign({
      asset: jpeg,
      mimeType: 'image/jpeg',
      signer: localSignerFor(credential),
      claimGenerator: { name: 'cairn', version: '0.3.0' },
      title: 'astronaut.jpg',
      digitalSourceType: AI,
      metadata,
      softBinding: { alg: 'cairn-dct-v1', value: 'w_01JDTESTWATERMARK' },
      thumbnail: { bytes: thumbnail, mimeType: 'image/jpeg' },
    });
  });

  it('reads back valid and trusted with the test CA as anchor, with every claim', async () => {
    const { reading } = await readAsset(signed.signed, 'image/jpeg', [credential.caCertPem]);
    const m = manifest(reading);
    expect(m).toMatchObject({
      activeLabel: signed.manifestLabel,
      validationState: 'Trusted',
      ...VALID_AND_TRUSTED,
      timestamped: false,
      validationCodes: [],
      softBinding: { alg: 'cairn-dct-v1', value: 'w_01JDTESTWATERMARK' },
      claims: {
        claimGenerator: 'cairn/0.3.0',
        title: 'astronaut.jpg',
        generator: 'Cairn Image Studio',
        model: 'diffusion-xl-1.0',
        digitalSourceType: AI,
        aiGenerated: true,
        aiAssisted: false,
        createdAt: '2026-11-20T10:00:00Z',
        creator: 'Ada Lovelace',
        legalEntity: 'Analytical Engines Ltd',
        legalCaseRef: 'CASE-42',
        promptHash: metadata.prompt_hash,
      },
    });
    expect(m.signer).toMatchObject({
      commonName: 'Cairn Verifier Test',
      organization: 'Cairn QA',
      serialHex: credential.leafSerialHex.replace(/^0+/, ''),
    });
    expect(m.signer.certChainPem.map((p) => p.replace(/\s+/g, ''))).toEqual(
      [credential.leafCertPem, credential.caCertPem].map((p) => p.replace(/\s+/g, '')),
    );
    expect(m.thumbnail?.mimeType).toBe('image/jpeg');
    expect(m.thumbnail?.bytes.equals(thumbnail)).toBe(true);
    // The store found in the file is byte for byte the one the signer returned (and serves at manifest_uri).
    expect(m.manifestStore?.equals(signed.manifestStore)).toBe(true);
  });

  it('is valid but untrusted with the default (empty) list', async () => {
    const m = manifest((await readAsset(signed.signed, 'image/jpeg', [])).reading);
    expect(m.signatureValid).toBe(true);
    expect(m.trusted).toBe(false);
    expect(m.validationCodes).toEqual(['signingCredential.untrusted']);
  });

  it('flipped signature bytes → signature invalid', async () => {
    const cose = signatureCose(signed.manifestStore, signed.manifestLabel);
    if (!cose) throw new Error('no signature box');
    const sign1 = decodeCbor(cose) as { value: unknown[] };
    const signature = sign1.value[3] as Uint8Array;
    const storeAt = signed.signed.indexOf(signed.manifestStore);
    expect(storeAt).toBeGreaterThan(0);
    const at = storeAt + (signature.byteOffset - signed.manifestStore.byteOffset) + 10;
    const tampered = Buffer.from(signed.signed);
    for (let i = 0; i < 4; i++) tampered[at + i] = (tampered[at + i] as number) ^ 0xff;

    const m = manifest((await readAsset(tampered, 'image/jpeg', [credential.caCertPem])).reading);
    expect(m.signatureValid).toBe(false);
    expect(m.validationCodes).toContain('claimSignature.mismatch');
  });

  it('pixels edited after signing → hard binding invalid, signature still valid', async () => {
    const edited = Buffer.from(signed.signed);
    // Scan data starts after the SOS segment; change bytes in its middle without creating markers.
    const sos = edited.indexOf(
      Buffer.from([0xff, 0xda]),
      edited.indexOf(signed.manifestStore) + signed.manifestStore.length,
    );
    const scanStart = sos + 2 + edited.readUInt16BE(sos + 2);
    let changed = 0;
    for (let i = scanStart + Math.floor((edited.length - scanStart) / 2); changed < 16; i++) {
      const b = edited[i] as number;
      if (b === 0xff || b === 0x00 || edited[i - 1] === 0xff || (b ^ 0x01) === 0xff) continue;
      edited[i] = b ^ 0x01;
      changed++;
    }
    const m = manifest((await readAsset(edited, 'image/jpeg', [credential.caCertPem])).reading);
    expect(m.signatureValid).toBe(true);
    expect(m.assertionsValid).toBe(true);
    expect(m.hardBindingValid).toBe(false);
    expect(m.validationCodes).toContain('assertion.dataHash.mismatch');
  });

  it('manifest stripped by re-encoding → none', async () => {
    const reencoded = await sharp(signed.signed).jpeg({ quality: 90 }).toBuffer();
    expect((await readAsset(reencoded, 'image/jpeg', [credential.caCertPem])).reading).toEqual({ kind: 'none' });
  });

  it('extracts the store from PNG, WebP and WAV containers too', async () => {
    const assets: Array<[string, Buffer]> = [
      ['image/png', readFileSync(PHOTO)],
      ['image/webp', await sharp(PHOTO).webp().toBuffer()],
      ['audio/wav', readFileSync(`${CORPUS}/sample1.wav`)],
    ];
    for (const [mimeType, asset] of assets) {
      const result = await signAsCairn(credential, { asset, mimeType: mimeType as 'image/png' });
      const m = manifest((await readAsset(result.signed, mimeType, [credential.caCertPem])).reading);
      expect(m.trusted).toBe(true);
      expect(m.manifestStore?.equals(result.manifestStore)).toBe(true);
      expect(m.signer.certChainPem).toHaveLength(2);
    }
  });

  it('reassembles a store split over several JPEG APP11 segments', async () => {
    // A noisy 512×512 claim thumbnail pushes the store past one APP11 segment's 64 KiB.
    const noisy = await sharp({
      create: {
        width: 512,
        height: 512,
        channels: 3,
        background: '#808080',
        noise: { type: 'gaussian', mean: 128, sigma: 60 },
      },
    })
      .jpeg({ quality: 95 })
      .toBuffer();
    const result = await signAsCairn(credential, {
      asset: jpeg,
      mimeType: 'image/jpeg',
      thumbnail: { bytes: noisy, mimeType: 'image/jpeg' },
    });
    expect(result.manifestStore.length).toBeGreaterThan(65_535);
    expect(result.signed.includes(result.manifestStore)).toBe(false); // not contiguous in the file
    const m = manifest((await readAsset(result.signed, 'image/jpeg', [credential.caCertPem])).reading);
    expect(m.manifestStore?.equals(result.manifestStore)).toBe(true);
    expect(m.thumbnail?.bytes.equals(noisy)).toBe(true);
    expect(m.signer.certChainPem).toHaveLength(2);
  });

  it('a certificate that expired after signing (no time-stamp) → certificateExpired', async () => {
    // c2pa-rs refuses to sign with an expired certificate, so sign with one that expires in ~2 s and wait.
    const shortLived = await makeTestCredential({ leafNotAfter: new Date(Date.now() + 2000) });
    const result = await signAsCairn(shortLived, { asset: jpeg, mimeType: 'image/jpeg' });
    await new Promise((resolve) => setTimeout(resolve, 3200));
    const m = manifest((await readAsset(result.signed, 'image/jpeg', [shortLived.caCertPem])).reading);
    expect(m.certificateExpired).toBe(true);
    expect(m.timestamped).toBe(false);
    expect(m.signatureValid).toBe(true);
    expect(m.validationCodes).toContain('signingCredential.expired');
  });
});

describe('large files and the time budget', () => {
  /** A valid PCM WAV of about `bytes` bytes (silence with a ramp, so it is not all zeros). */
  function wav(bytes: number): Buffer {
    const dataLen = bytes - 44;
    const buf = Buffer.alloc(44 + dataLen);
    buf.write('RIFF', 0, 'latin1');
    buf.writeUInt32LE(36 + dataLen, 4);
    buf.write('WAVEfmt ', 8, 'latin1');
    buf.writeUInt32LE(16, 16);
    buf.writeUInt16LE(1, 20); // PCM
    buf.writeUInt16LE(1, 22); // mono
    buf.writeUInt32LE(48000, 24);
    buf.writeUInt32LE(96000, 28);
    buf.writeUInt16LE(2, 32);
    buf.writeUInt16LE(16, 34);
    buf.write('data', 36, 'latin1');
    buf.writeUInt32LE(dataLen, 40);
    for (let i = 44; i < buf.length; i += 4096) buf[i] = i & 0xff;
    return buf;
  }

  let big: Buffer;

  beforeAll(async () => {
    big = (await signAsCairn(credential, { asset: wav(64 * 1024 * 1024), mimeType: 'audio/wav' })).signed;
  });

  it('reads a 64 MiB signed WAV', async () => {
    const { reading } = await readAsset(big, 'audio/wav', [credential.caCertPem]);
    const m = manifest(reading);
    expect(m.trusted).toBe(true);
    expect(m.hardBindingValid).toBe(true);
  });

  it('a read over its budget is killed → malformed "timed out", and the next read works', async () => {
    const before = reader.pids;
    const { reading } = await readAsset(big, 'audio/wav', [], 5);
    expect(reading).toEqual({ kind: 'malformed', detail: 'timed out after 5 ms' });
    const next = await readAsset(readFileSync(`${CORPUS}/CA.jpg`), 'image/jpeg', []);
    expect(manifest(next.reading).signatureValid).toBe(true);
    expect(reader.pids).not.toEqual(before); // a replacement child was started
  });
});
