import { expect } from '@jest/globals';
import { readFile } from 'node:fs/promises';
import sharp from 'sharp';
import { waitFor } from '@cairn/testing';
import { SHARED_DIR } from '../../packages/testing/src/shared.js';
import { multipart, signAndFetch, type Stack } from './stack.js';

export type LookupMatch = Record<string, unknown>;

/** `POST /v1/lookup` with a file (multipart field "file"). */
export function lookupFile(
  stack: Stack,
  key: string,
  file: { bytes: Buffer; name: string; type?: string },
): Promise<Response> {
  return stack.request('/v1/lookup', { method: 'POST', key, body: multipart({}, { field: 'file', ...file }) });
}

/** The matches of a lookup answer, which must be a 200. */
export async function matchesOf(res: Response): Promise<LookupMatch[]> {
  expect(res.status).toBe(200);
  return ((await res.json()) as { matches: LookupMatch[] }).matches;
}

/**
 * The first match of a lookup, which must name `signed` (its asset and manifest, and its verifier page when
 * `verifierUrl` is given) found by `alg`; answered for the caller's check of the score.
 */
export function expectFirstMatch(
  matches: LookupMatch[],
  signed: { asset_id: string; manifest_uri: string },
  alg: string,
  verifierUrl?: string,
): LookupMatch {
  expect(matches[0]).toMatchObject({
    asset_id: signed.asset_id,
    manifest_uri: signed.manifest_uri,
    ...(verifierUrl === undefined ? {} : { verifier_url: verifierUrl }),
    alg,
  });
  return matches[0]!;
}

/** Indexing follows asset.signed asynchronously: waits until looking the signed file up finds something. */
export async function untilIndexed(lookup: () => Promise<Response>): Promise<void> {
  await waitFor('the signed asset indexed', async () => (await matchesOf(await lookup())).length > 0, 30_000, 250);
}

/** The astronaut photo at 1024 × 1024, JPEG 90, signed under image-genai-v1: what the image lookup tests look for. */
export async function signAstronaut<Signed extends { asset_id: string }>(
  stack: Stack,
  apiKey: string,
): Promise<{ signed: Signed; signedBytes: Buffer }> {
  const photo = await sharp(await readFile(`${SHARED_DIR}/fixtures/photos/astronaut.png`))
    .resize(1024, 1024)
    .jpeg({ quality: 90 })
    .toBuffer();
  return signAndFetch<Signed>(stack, apiKey, { recipe: 'image-genai-v1', bytes: photo, name: 'a.jpg' });
}

/**
 * JPEG 60, resized to 50%, cropped 5% (from the top-left), re-encoded: no manifest survives, nor the watermark,
 * which does not survive crops. Only the fingerprint can find such a copy.
 */
export async function degradedCopy(bytes: Buffer): Promise<Buffer> {
  const half = await sharp(bytes)
    .resize({ width: Math.round(((await sharp(bytes).metadata()).width ?? 0) / 2) })
    .jpeg({ quality: 60 })
    .toBuffer();
  const { width = 0, height = 0 } = await sharp(half).metadata();
  return sharp(half)
    .extract({
      left: Math.round(width * 0.05),
      top: Math.round(height * 0.05),
      width: Math.round(width * 0.95),
      height: Math.round(height * 0.95),
    })
    .jpeg({ quality: 60 })
    .toBuffer();
}
