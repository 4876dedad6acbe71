// The verify use case (app/verify) over in-memory fakes of its ports (app/ports.ts): which asset a file is named
// as, and what the verdict says, for the signals the fakes answer. The end-to-end tests (test/verify-api.test.ts,
// test/sign-verify.test.ts, test/verify-statuses.test.ts) run the same paths through the real services.
import { afterAll, describe, expect, it } from '@jest/globals';
import { create } from '@bufbuild/protobuf';
import sharp from 'sharp';
import { blobKeys, PUBLIC_OWNER } from '@cairn/blob';
import { createDb, createPool } from '@cairn/db';
import { CairnError } from '@cairn/errors';
import { createLogger } from '@cairn/logging';
import { DEFAULT_MEDIA_LIMITS } from '@cairn/media';
import { outboundPolicy } from '@cairn/outbound';
import { signerV1, softbindingV1, verifierV1, watermarkV1 } from '@cairn/proto';
import type { C2paReading, ManifestReading } from '../src/domain/c2pa/types.js';
import { trustedReading } from './support/readings.js';
import type {
  ManifestReader,
  TrustInForce,
  VerifyAnchor,
  VerifySigner,
  VerifySoftBinding,
  VerifyWatermark,
} from '../src/app/ports.js';
import { verify, type VerifyDeps } from '../src/app/verify/index.js';
import { ReadingMemo } from '../src/app/verify/reading-memo.js';
import { SignalCache, type SignalEpochs } from '../src/app/verify/signal-cache.js';

const BASE = 'https://cairn.example';
const ASSET = 'a_01JAAAAAAAAAAAAAAAAAAAAAAA';
const MANIFEST = 'm_01JAAAAAAAAAAAAAAAAAAAAAAA';
const PAYLOAD = '0123456789abcdef';

/** What the fakes answer: the files Cairn keeps, the C2PA reading, the mark, the content checks. */
interface World {
  blobs: Map<string, Buffer>;
  reading: C2paReading;
  /** The mark the watermark service reads, with its own content check's answer when it made one. */
  mark?: { payloadHex: string; registered: boolean; assetId: string; confidence: number; contentConsistent?: boolean };
  /** Matches of the soft-binding lookup (asset ids): the assets whose fingerprints the file's are near. */
  lookupMatches: string[];
}

function deps(world: World): VerifyDeps {
  const reader: ManifestReader = {
    readManifest: async () => world.reading,
    ready: async () => undefined,
    close: async () => undefined,
    pids: [],
  };
  const signer: VerifySigner = {
    getAsset: async () => create(signerV1.GetAssetResponseSchema, {}),
    getManifest: async ({ manifestId }) =>
      manifestId === MANIFEST
        ? create(signerV1.GetManifestResponseSchema, {
            assetId: ASSET,
            manifestId: MANIFEST,
            assetBlobKey: `signed/${ASSET}`,
          })
        : Promise.reject(new CairnError('cairn.not_found', 'no such manifest')),
    getPublicAsset: async ({ assetId }) =>
      create(signerV1.GetPublicAssetResponseSchema, {
        asset: assetId === ASSET ? { assetId: ASSET, manifestId: MANIFEST } : undefined,
      }),
    findAssetByContent: async () => create(signerV1.FindAssetByContentResponseSchema, {}),
  };
  const detected = () =>
    create(watermarkV1.DetectImageResponseSchema, {
      applicable: true,
      ...(world.mark ? { detected: true, ...world.mark } : { detected: false }),
    });
  const watermark: VerifyWatermark = {
    detectImage: async (request) =>
      request.sha256 ? create(watermarkV1.DetectImageResponseSchema, { readingMissing: true }) : detected(),
    detectAudio: async () => Promise.reject(new Error('not an audio test')),
    detectVideo: async () => Promise.reject(new Error('not a video test')),
  };
  const softbinding: VerifySoftBinding = {
    // The soft-binding content check compares videos; an image's content is asked of the lookup.
    compareContent: async () => Promise.reject(new Error('not a video test')),
    lookup: async () =>
      create(softbindingV1.LookupResponseSchema, {
        matches: world.lookupMatches.map((assetId) => ({
          assetId,
          manifestUri: `${BASE}/v1/manifests/${MANIFEST}`,
          verifierUrl: `${BASE}/v/${assetId}`,
          similarity: 0.97,
        })),
      }),
  };
  const anchor: VerifyAnchor = {
    checkAnchor: async () => Promise.reject(new Error('the fakes read no manifest store to anchor')),
  };
  const trust: TrustInForce = {
    forTenant: async () => ({ pems: [], source: 'default', lists: [] }),
    cairnRoots: async () => [],
  };
  const epochs: SignalEpochs = { current: async () => ({}), advance: async () => undefined };
  return {
    // Only a tenant's verify writes (its asset.verified event): these verifies are public and never query it.
    db: createDb(pool),
    blobs: { getBuffer: async (key: string) => world.blobs.get(key) ?? null },
    reader,
    readings: new ReadingMemo(1 << 20, 60_000),
    signals: new SignalCache(1 << 20, 60_000),
    signalEpochs: epochs,
    signer,
    watermark,
    softbinding,
    anchor,
    trust,
    outbox: {
      enqueue: async () => Promise.reject(new Error('a public verify records no event')),
      enqueueAlone: async () => Promise.reject(new Error('a public verify records no event')),
      flush: async () => undefined,
    },
    logger: createLogger({ service: 'verifier-test', level: 'silent' }),
    publicBaseUrl: BASE,
    ocspTimeoutMs: 1000,
    outboundPolicy: outboundPolicy('development'),
    mediaLimits: DEFAULT_MEDIA_LIMITS,
  };
}

function manifestReading(overrides: Partial<ManifestReading> = {}): ManifestReading {
  return trustedReading({
    timestamped: true,
    timestampTrusted: true,
    signer: { commonName: 'Cairn Signing', certChainPem: [] },
    signedAt: '2026-11-20T10:00:00Z',
    softBinding: { alg: 'com.cairn.watermark.sync.2', value: PAYLOAD },
    softBindings: [{ alg: 'com.cairn.watermark.sync.2', value: PAYLOAD }],
    ...overrides,
  });
}

const png = () =>
  sharp({ create: { width: 64, height: 64, channels: 3, background: { r: 120, g: 80, b: 40 } } })
    .png()
    .toBuffer();

async function uploaded(world: World, bytes: Buffer): Promise<verifierV1.VerifyRequest> {
  const key = blobKeys.upload(PUBLIC_OWNER, '01JBBBBBBBBBBBBBBBBBBBBBBB');
  world.blobs.set(key, bytes);
  return create(verifierV1.VerifyRequestSchema, { input: { case: 'uploadBlobKey', value: key } });
}

// Connects on a first query only, which these public verifies never make.
const pool = createPool(process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres', 1);
afterAll(() => pool.end());

const mark = { payloadHex: PAYLOAD, registered: true, assetId: ASSET, confidence: 0.97 };

describe('verify', () => {
  it('names the asset of a file whose valid manifest and watermark agree', async () => {
    const world: World = {
      blobs: new Map([[`signed/${ASSET}`, await png()]]),
      reading: manifestReading(),
      mark,
      lookupMatches: [],
    };
    const request = create(verifierV1.VerifyRequestSchema, {
      input: { case: 'manifestUri', value: `${BASE}/v1/manifests/${MANIFEST}` },
    });
    const outcome = await verify(deps(world), request);
    expect(outcome.verdict.status).toBe('verified_manifest_and_watermark_match');
    expect(outcome).toMatchObject({ assetId: ASSET, manifestId: MANIFEST, modality: 'image' });
    expect(outcome.verdict.signals).toMatchObject({ signer_trusted: true, watermark_present: true });
  });

  it.each([
    ['the watermark service placed it on the asset’s content', { ...mark, contentConsistent: true }, []],
    [
      'the watermark service could not, but its fingerprints are the asset’s',
      { ...mark, contentConsistent: false },
      [ASSET],
    ],
    ['a mark that carries no content check, on content whose fingerprints are the asset’s', mark, [ASSET]],
  ])('leads a stripped upload back to its asset through its mark: %s', async (_, found, lookupMatches) => {
    const world: World = { blobs: new Map(), reading: { kind: 'none' }, mark: found, lookupMatches };
    const outcome = await verify(deps(world), await uploaded(world, await png()));
    expect(outcome.verdict.status).toBe('watermark_only');
    expect(outcome.assetId).toBe(ASSET);
    expect(outcome.verdict.warnings).not.toContain('watermark_content_mismatch');
    expect(outcome.verdict.matches).toEqual([
      expect.objectContaining({ assetId: ASSET, via: 'watermark', verifierUrl: `${BASE}/v/${ASSET}` }),
    ]);
  });

  it.each([
    ['the watermark service’s check', { ...mark, contentConsistent: false }],
    ['a mark that carries no content check', mark],
  ])('names no asset for a mark copied onto other content (%s; fingerprints elsewhere)', async (_, found) => {
    const world: World = {
      blobs: new Map(),
      reading: { kind: 'none' },
      mark: found,
      lookupMatches: ['a_01JBBBBBBBBBBBBBBBBBBBBBBB'],
    };
    const outcome = await verify(deps(world), await uploaded(world, await png()));
    expect(outcome.verdict.status).toBe('watermark_only');
    expect(outcome.assetId).toBeUndefined();
    expect(outcome.verdict.matches).toEqual([]);
    expect(outcome.verdict.warnings).toContain('watermark_content_mismatch');
  });

  it('says no provenance, and names no asset, when nothing leads to a record', async () => {
    const world: World = { blobs: new Map(), reading: { kind: 'none' }, lookupMatches: [] };
    const outcome = await verify(deps(world), await uploaded(world, await png()));
    expect(outcome.verdict.status).toBe('no_provenance');
    expect(outcome.assetId).toBeUndefined();
    expect(outcome.manifestId).toBeUndefined();
  });

  it('refuses a file it cannot verify before reading any signal', async () => {
    const world: World = {
      blobs: new Map(),
      reading: manifestReading(),
      mark,
      lookupMatches: [],
    };
    const request = await uploaded(world, Buffer.from([0x00, 0x01, 0x02, 0x03, 0xff, 0xfe, 0x00, 0x00]));
    await expect(verify(deps(world), request)).rejects.toMatchObject({ code: 'cairn.verify.unsupported_file_type' });
  });
});
