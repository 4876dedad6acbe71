// The lookup use case (app/lookup.ts) over in-memory fakes of its ports (app/ports.ts): an index that answers by
// Hamming distance within the radius it is asked for, as store/fingerprints.ts does, and a blob store of uploads.
// The hashing is the real one (adapters/image-hash.ts). The end-to-end tests (test/lookup.test.ts and its audio,
// text and video siblings) run the same paths through the real services and Postgres.
import { describe, expect, it } from '@jest/globals';
import { readFile } from 'node:fs/promises';
import sharp from 'sharp';
import { blobKeys } from '@cairn/blob';
import { DEFAULT_MEDIA_LIMITS } from '@cairn/media';
import { fingerprinters } from '../src/adapters/fingerprinters.js';
import { pdqFingerprinter } from '../src/adapters/image-hash.js';
import { lookup, type LookupDeps } from '../src/app/lookup.js';
import type { HashIndex, LookupScope, PublicMatch } from '../src/app/ports.js';
import { PDQ_ALG } from '../src/domain/pdq.js';
import { LOOKUP_RADIUS } from '../src/domain/threshold.js';

const TENANT = 't_01JAAAAAAAAAAAAAAAAAAAAAAA';
const OTHER_TENANT = 't_01JBBBBBBBBBBBBBBBBBBBBBBB';

class FakeHashIndex implements HashIndex {
  readonly rows: Array<{ tenantId: string; alg: string; bits: Uint8Array; assetId: string }> = [];

  async search(scope: LookupScope, bits: Uint8Array, radius: number, limit = 10, alg?: string): Promise<PublicMatch[]> {
    return this.rows
      .filter((row) => (scope === 'public' || row.tenantId === scope.tenantId) && (!alg || row.alg === alg))
      .map((row) => ({ row, distance: hamming(row.bits, bits) }))
      .filter(({ distance }) => distance <= radius)
      .sort((a, b) => a.distance - b.distance)
      .slice(0, limit)
      .map(({ row, distance }) => ({
        asset_id: row.assetId,
        manifest_uri: `https://cairn.example/v1/manifests/m_${row.assetId}`,
        verifier_url: `https://cairn.example/v/${row.assetId}`,
        distance,
        similarity: Math.round((1 - distance / 128) * 1000) / 1000,
        alg: row.alg,
      }));
  }

  async rowsOf(): Promise<Array<{ variant: string; bits: Uint8Array; quality: number }>> {
    return [];
  }
}

function hamming(a: Uint8Array, b: Uint8Array): number {
  let bits = 0;
  for (let i = 0; i < a.length; i++) {
    let x = (a[i] ?? 0) ^ (b[i] ?? 0);
    for (; x; x &= x - 1) bits++;
  }
  return bits;
}

function world() {
  const images = new FakeHashIndex();
  const blobs = new Map<string, Buffer>();
  const recorded: Array<[string, number]> = [];
  const deps: LookupDeps = {
    blobs: { getBuffer: async (key: string) => blobs.get(key) ?? null },
    indexes: {
      images,
      audio: {
        search: async () => Promise.reject(new Error('not an audio test')),
        alignmentWith: async () => Promise.reject(new Error('not an audio test')),
      },
      text: { search: async () => Promise.reject(new Error('not a text test')) },
    },
    fingerprints: fingerprinters,
    maxResults: 10,
    mediaLimits: DEFAULT_MEDIA_LIMITS,
    recordLookup: async (tenantId, matches) => {
      recorded.push([tenantId, matches]);
    },
  };
  let uploads = 0;
  const upload = (owner: string, bytes: Buffer) => {
    const key = blobKeys.upload(owner, `01JC${String(++uploads).padStart(22, '0')}`);
    blobs.set(key, bytes);
    return { case: 'uploadBlobKey' as const, value: key };
  };
  const index = async (tenantId: string, assetId: string, bytes: Buffer) => {
    const { bits } = await pdqFingerprinter.hashImage(bytes);
    images.rows.push({ tenantId, alg: PDQ_ALG, bits, assetId });
    return bits;
  };
  return { deps, recorded, upload, index };
}

/** Natural photographs (test/fixtures/README.md): PDQ's hashes of them are far apart. */
const picture = (name: 'coins' | 'moon') => readFile(new URL(`./fixtures/${name}.jpg`, import.meta.url));

describe('lookup', () => {
  it('finds the asset of a re-encoded copy, and records the tenant’s lookup', async () => {
    const w = world();
    const original = await picture('coins');
    await w.index(TENANT, 'a_1', original);
    const copy = await sharp(original).resize({ width: 200 }).jpeg({ quality: 70 }).toBuffer();
    const matches = await lookup(w.deps, { tenantId: TENANT, query: w.upload(TENANT, copy), limit: 5 });
    expect(matches.map((m) => m.asset_id)).toEqual(['a_1']);
    expect(matches[0]?.distance).toBeLessThanOrEqual(LOOKUP_RADIUS);
    expect(w.recorded).toEqual([[TENANT, 1]]);
  });

  it('answers no match for content beyond the lookup radius, and records that lookup too', async () => {
    const w = world();
    await w.index(TENANT, 'a_1', await picture('coins'));
    const matches = await lookup(w.deps, {
      tenantId: TENANT,
      query: w.upload(TENANT, await picture('moon')),
      limit: 5,
    });
    expect(matches).toEqual([]);
    expect(w.recorded).toEqual([[TENANT, 0]]);
  });

  it('matches a binding value within the radius and not one just beyond it', async () => {
    const w = world();
    const bits = await w.index(TENANT, 'a_1', await picture('coins'));
    const flipped = (count: number) => {
      const value = Uint8Array.from(bits);
      for (let i = 0; i < count; i++) value[i >> 3]! ^= 1 << (i & 7);
      return Buffer.from(value).toString('hex');
    };
    const near = await lookup(w.deps, {
      tenantId: '',
      query: { case: 'binding', value: { alg: PDQ_ALG, value: flipped(LOOKUP_RADIUS) } },
      limit: 5,
    });
    expect(near.map((m) => m.asset_id)).toEqual(['a_1']);
    const far = await lookup(w.deps, {
      tenantId: '',
      query: { case: 'binding', value: { alg: PDQ_ALG, value: flipped(LOOKUP_RADIUS + 1) } },
      limit: 5,
    });
    expect(far).toEqual([]);
    // A public lookup is nobody's to record.
    expect(w.recorded).toEqual([]);
  });

  it('keeps a tenant to its own assets and its own uploads', async () => {
    const w = world();
    const original = await picture('coins');
    await w.index(OTHER_TENANT, 'a_other', original);
    expect(await lookup(w.deps, { tenantId: TENANT, query: w.upload(TENANT, original), limit: 5 })).toEqual([]);
    await expect(
      lookup(w.deps, { tenantId: TENANT, query: w.upload(OTHER_TENANT, original), limit: 5 }),
    ).rejects.toMatchObject({ code: 'cairn.validation.invalid_body' });
  });
});
