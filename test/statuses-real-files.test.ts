import { describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import sharp from 'sharp';
import { createImageWatermark } from '../services/watermark/src/domain/image/cairn-dct-v1.js';
import { signAndFetch, stackForFile, verifyUpload } from './support/stack.js';
import { expectConflict } from './support/watermark-fleet.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

// Two statuses that only hand-built evidence used to produce, made here from real files through HTTP.

const PHOTOS = `${SHARED_DIR}/fixtures/photos`;
const file = stackForFile(['watermark', 'signer', 'verifier', 'gateway'], { PUBLIC_VERIFY_PER_MINUTE: '1000' });

type Result = {
  status: string;
  confidence: number | null;
  asset_id?: string;
  matches: Array<{ asset_id: string }>;
  warnings: string[];
  developer_explanation: string;
};

async function sign(bytes: Buffer, recipe: string): Promise<{ asset_id: string; bytes: Buffer }> {
  const { signed, signedBytes } = await signAndFetch(file.stack, file.tenant.api_key, { recipe, bytes, name: 'p.jpg' });
  return { asset_id: signed.asset_id, bytes: signedBytes };
}

const publicVerify = (bytes: Buffer): Promise<Result> => verifyUpload<Result>(file.stack, bytes, 'f');

describe('statuses from real files', () => {
  it('manifest_watermark_conflict: a photo carrying asset B’s watermark, signed again by Cairn as asset A', async () => {
    const photo = await sharp(await readFile(`${PHOTOS}/camera.png`))
      .jpeg({ quality: 92 })
      .toBuffer();
    const b = await sign(photo, 'image-genai-v1');
    // B's pixels (its watermark) without B's manifest: a plain re-encode drops the JUMBF store.
    const stripped = await sharp(b.bytes).jpeg({ quality: 95 }).toBuffer();
    expect((await publicVerify(stripped)).matches.map((m) => m.asset_id)).toContain(b.asset_id);
    // Signed as a captured photograph: a valid Cairn manifest of A, pixels (and so B's mark) left as they are.
    const a = await sign(stripped, 'image-capture-v1');
    const result = await publicVerify(a.bytes);
    expectConflict(result, a.asset_id, b.asset_id);
  }, 60_000);

  it('a captured photograph signed without a watermark verifies as verified_manifest, not AI-generated', async () => {
    const photo = await sharp(await readFile(`${PHOTOS}/chelsea.png`))
      .jpeg({ quality: 92 })
      .toBuffer();
    const captured = await sign(photo, 'image-capture-v1');
    const result = (await publicVerify(captured.bytes)) as Result & {
      claims?: { ai_generated?: boolean };
      signals: Record<string, unknown>;
    };
    expect(result.status).toBe('verified_manifest');
    expect(result.claims?.ai_generated).toBe(false);
    expect(result.warnings).not.toContain('watermark_not_found');
  }, 60_000);

  it('watermark_unregistered: a mark made with the published keyless code for a payload Cairn never issued', async () => {
    const { data, info } = await sharp(await readFile(`${PHOTOS}/coffee.png`))
      .removeAlpha()
      .raw()
      .toBuffer({ resolveWithObject: true });
    const algorithm = createImageWatermark();
    const marked = algorithm.embed(
      { pixels: new Uint8Array(data), width: info.width, height: info.height, channels: 3 },
      Uint8Array.from(randomBytes(algorithm.payloadBytes)),
    );
    const png = await sharp(Buffer.from(marked.pixels), {
      raw: { width: marked.width, height: marked.height, channels: 3 },
    })
      .png()
      .toBuffer();
    const result = await publicVerify(png);
    expect(result.status).toBe('watermark_unregistered');
    expect(result.matches).toEqual([]);
    expect(result.confidence).toBeLessThanOrEqual(0.35);
  }, 60_000);
});
