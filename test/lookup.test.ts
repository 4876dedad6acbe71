import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFile } from 'node:fs/promises';
import sharp from 'sharp';
import { hashImageBytes } from '../services/softbinding/src/adapters/image-hash.js';
import {
  degradedCopy,
  expectFirstMatch,
  lookupFile,
  matchesOf,
  signAstronaut,
  untilIndexed,
} from './support/lookup.js';
import { multipart, onboard, type Stack } from './support/stack.js';
import { startWatermarkStack } from './support/watermark-fleet.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

const PHOTOS = `${SHARED_DIR}/fixtures/photos`;
let stack: Stack;
let owner: { tenant_id: string; api_key: string };
let other: { tenant_id: string; api_key: string };
let signed: { asset_id: string; manifest_uri: string; verifier_url: string };
let signedBytes: Buffer;
let copy: Buffer;

function lookup(bytes: Buffer, key: string) {
  return lookupFile(stack, key, { bytes, name: 'q.jpg' });
}

beforeAll(async () => {
  stack = await startWatermarkStack();
  owner = await onboard(stack);
  other = await onboard(stack);
  ({ signed, signedBytes } = await signAstronaut<typeof signed>(stack, owner.api_key));
  copy = await degradedCopy(signedBytes);
  await untilIndexed(() => lookup(signedBytes, owner.api_key));
}, 120_000);
afterAll(() => stack?.stop());

describe('POST /v1/lookup', () => {
  it('finds a signed image re-encoded at JPEG 60, resized to 50% and cropped 5%', async () => {
    const matches = await matchesOf(await lookup(copy, owner.api_key));
    const first = expectFirstMatch(matches, signed, 'cairn.pdq.v1', signed.verifier_url);
    expect(first.distance as number).toBeLessThanOrEqual(31);
  });

  it('does not find a different image', async () => {
    const different = await sharp(await readFile(`${PHOTOS}/coffee.png`))
      .jpeg()
      .toBuffer();
    expect(((await (await lookup(different, owner.api_key)).json()) as { matches: unknown[] }).matches).toEqual([]);
  });

  it('never shows one tenant another tenant’s assets', async () => {
    expect(((await (await lookup(copy, other.api_key)).json()) as { matches: unknown[] }).matches).toEqual([]);
  });

  it('looks up by binding value, and refuses unknown algorithms', async () => {
    const value = Buffer.from((await hashImageBytes(copy)).bits).toString('hex');
    const res = await stack.request('/v1/lookup', {
      method: 'POST',
      key: owner.api_key,
      json: { binding: { alg: 'cairn.pdq.v1', value } },
    });
    expect(((await res.json()) as { matches: Array<{ asset_id: string }> }).matches[0]?.asset_id).toBe(signed.asset_id);
    const bad = await stack.request('/v1/lookup', {
      method: 'POST',
      key: owner.api_key,
      json: { binding: { alg: 'md5', value } },
    });
    expect(bad.status).toBe(400);
  });

  it('meters every lookup, matches or not', async () => {
    const usage = (await (await stack.request('/v1/usage', { key: other.api_key })).json()) as {
      meters: Record<string, { used: number }>;
    };
    expect(usage.meters.lookup?.used).toBe(1);
  });
});

describe('verify falls back on the fingerprint', () => {
  it('gives fingerprint_match_only with public fields when manifest and watermark are gone', async () => {
    // cairn-sync-v2 survives the crop and re-encode of `copy`; a heavy blur (σ 6, a documented limit of the mark)
    // and a re-encode leave no mark and no manifest, while the coarse fingerprint still holds.
    const washed = await sharp(signedBytes).blur(6).jpeg({ quality: 60 }).toBuffer();
    const res = await stack.request('/v1/verify', {
      method: 'POST',
      body: multipart({}, { field: 'file', bytes: washed, name: 'c.jpg' }),
    });
    const result = (await res.json()) as {
      status: string;
      matches: Array<Record<string, unknown>>;
      signals: Record<string, unknown>;
    };
    expect(result.signals).toMatchObject({ c2pa_manifest_present: false, watermark_present: false });
    expect(result.status).toBe('fingerprint_match_only');
    expect(result.signals.fingerprint_match).toBe(true);
    expect(result.matches[0]).toEqual({
      asset_id: signed.asset_id,
      manifest_uri: signed.manifest_uri,
      verifier_url: signed.verifier_url,
      via: 'fingerprint',
      similarity: expect.any(Number),
    });
  });
});
