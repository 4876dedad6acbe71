import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runFfmpeg } from '@cairn/media';
import { expectFirstMatch, lookupFile, matchesOf, untilIndexed } from './support/lookup.js';
import { photoSlideshow } from './support/video.js';
import { multipart, onboard, signAndFetch, startStack, type Stack, postSign, stopAndRemove } from './support/stack.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

const PHOTOS = `${SHARED_DIR}/fixtures/photos`;
const OWN = new URL('../services/softbinding/test/fixtures/', import.meta.url).pathname;
let stack: Stack;
let dir: string;
let owner: { tenant_id: string; api_key: string };
let other: { tenant_id: string; api_key: string };
let signed: { asset_id: string; manifest_uri: string; media_type: string };
let signedBytes: Buffer;
/** The slideshow as made, before signing (unmarked). */
let unsigned: Buffer;

/** A slideshow of real photos, two seconds each: hard cuts are real scene changes. */
function slideshow(photos: string[], name: string): Promise<Buffer> {
  return photoSlideshow(photos, join(dir, name), 2);
}

/** `bytes` through ffmpeg with the output options `args`, from file `input` to file `output` in the scratch directory. */
async function reencoded(bytes: Buffer, input: string, output: string, args: string[]): Promise<Buffer> {
  await writeFile(join(dir, input), bytes);
  await runFfmpeg({ args: ['-y', '-i', join(dir, input), ...args, join(dir, output)], timeoutMs: 60_000 });
  return readFile(join(dir, output));
}

/** Re-encoded at CRF 35 and half the size, into another file: no manifest survives. */
function degrade(bytes: Buffer): Promise<Buffer> {
  const args = ['-vf', 'scale=iw/2:ih/2', '-c:v', 'libx264', '-preset', 'veryfast', '-crf', '35'];
  return reencoded(bytes, 'in.mp4', 'degraded.mp4', args);
}

function lookup(bytes: Buffer, key: string) {
  return lookupFile(stack, key, { bytes, name: 'q.mp4' });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cairn-video-'));
  stack = await startStack(['watermark', 'signer', 'verifier', 'softbinding', 'gateway']);
  owner = await onboard(stack);
  other = await onboard(stack);
  const video = await slideshow(
    ['astronaut', 'camera', 'chelsea', 'coffee'].map((p) => `${PHOTOS}/${p}.png`),
    'a.mp4',
  );
  unsigned = video;
  ({ signed, signedBytes } = await signAndFetch<typeof signed>(stack, owner.api_key, {
    recipe: 'video-genai-v1',
    bytes: video,
    name: 'a.mp4',
  }));
  await untilIndexed(() => lookup(signedBytes, owner.api_key));
}, 120_000);
afterAll(() => stopAndRemove(stack, dir));

describe('video: sign MP4, then find a re-encoded copy', () => {
  it('signs MP4 with an embedded manifest that verifies', async () => {
    expect(signed.media_type).toBe('video/mp4');
    const res = await stack.request('/v1/verify', {
      method: 'POST',
      key: owner.api_key,
      body: multipart({}, { field: 'file', bytes: signedBytes, name: 'a.mp4' }),
    });
    const verdict = (await res.json()) as { status: string; signals: Record<string, unknown> };
    expect(verdict.signals.c2pa_signature_valid).toBe(true);
    // video-genai-v1 marks the frames: the signed file carries both.
    expect(verdict.status).toBe('verified_manifest_and_watermark_match');
  });

  it('signs WebM with a sidecar manifest that verifies by asset id', async () => {
    // Its own tenant: the same content signed again would (rightly) also match the other tests' lookups.
    const third = await onboard(stack);
    // From the unsigned slideshow: the signed MP4 already carries the first asset's frame mark, and a second mark
    // over it would make which one reads a matter of chance.
    const vp8 = ['-c:v', 'libvpx', '-b:v', '300k', '-deadline', 'realtime', '-cpu-used', '8'];
    const webm = await reencoded(unsigned, 'for-webm.mp4', 'a.webm', vp8);
    const res = await postSign(stack, third.api_key, { recipe: 'video-genai-v1', bytes: webm, name: 'a.webm' });
    expect(res.status).toBe(200);
    const result = (await res.json()) as { asset_id: string; media_type: string };
    expect(result.media_type).toBe('video/webm');
    const verdict = (await (
      await stack.request('/v1/verify', { method: 'POST', key: third.api_key, json: { asset_id: result.asset_id } })
    ).json()) as { status: string };
    // video-genai-v1 marks WebM frames too.
    expect(verdict.status).toBe('verified_manifest_and_watermark_match');
  });

  it('finds the signed video re-encoded at CRF 35 and half the size', async () => {
    const matches = await matchesOf(await lookup(await degrade(signedBytes), owner.api_key));
    expect(matches).toHaveLength(1);
    expect(expectFirstMatch(matches, signed, 'cairn.pdq-frames.v1').similarity as number).toBeGreaterThanOrEqual(0.3);
  });

  it('does not find a different video, and never another tenant’s', async () => {
    const different = await slideshow(
      ['moon', 'page', 'retina', 'rocket'].map((p) => `${OWN}${p}.jpg`),
      'c.mp4',
    );
    expect(await matchesOf(await lookup(different, owner.api_key))).toEqual([]);
    expect(await matchesOf(await lookup(signedBytes, other.api_key))).toEqual([]);
  });
});
