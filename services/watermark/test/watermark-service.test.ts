import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { sql } from 'drizzle-orm';
import { withTenant } from '@cairn/db';
import { CairnError } from '@cairn/errors';
import { newId } from '@cairn/ids';
import { watermarkV1 } from '@cairn/proto';
import { createClient, type ClientOf } from '@cairn/rpc';
import { startService, type RunningService } from '@cairn/runtime';
import { onSpanEnd } from '@cairn/telemetry';
import { createSandbox, type Sandbox } from '@cairn/testing';
import { createImageWatermark } from '../src/domain/image/cairn-dct-v1.js';
import type { RawImage } from '../src/domain/image/raw-image.js';
import { payloadFor, payloadHex } from '../src/domain/payload.js';
import { watermarkService } from '../src/service.js';
import sharp from 'sharp';
import { ATTACKS, decodeFile, loadPhoto, png } from './support/images.js';

let sandbox: Sandbox;
let service: RunningService;
let client: ClientOf<typeof watermarkV1.WatermarkService>;
let coffee: RawImage;
let chelsea: RawImage;
let coffeePng: Buffer;
let chelseaPng: Buffer;

beforeAll(async () => {
  sandbox = await createSandbox();
  service = await startService(watermarkService({ ...sandbox.env, WATERMARK_WORKERS: '1' }));
  client = createClient(watermarkV1.WatermarkService, `127.0.0.1:${service.grpcPort}`, { deadlineMs: 30_000 });
  [coffee, chelsea] = await Promise.all([loadPhoto('coffee.png'), loadPhoto('chelsea.png')]);
  [coffeePng, chelseaPng] = await Promise.all([png(coffee), png(chelsea)]);
});

afterAll(async () => {
  client.close();
  await service.stop();
  await sandbox.dispose();
});

/** The cairn error a failed call carries, and the gRPC status it travelled with. */
async function failure(call: Promise<unknown>): Promise<{ code: string; message: string; grpc: number | undefined }> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof CairnError))
    throw new Error(`expected the call to fail with a CairnError, got ${String(error)}`);
  return { code: error.code, message: error.message, grpc: (error.cause as ServiceError | undefined)?.code };
}

function ids() {
  return { tenantId: newId('tenant'), watermarkId: newId('watermark'), assetId: newId('asset') };
}

describe('EmbedImage → DetectImage over gRPC', () => {
  it('marks an image, and detection after JPEG q75 resolves the mark to its tenant and asset', async () => {
    const mark = ids();
    const embedded = await client.embedImage({ ...mark, encoded: coffeePng });
    // Keyed: the payload is not the public derivation of the id.
    expect(embedded.payloadHex).toMatch(/^[0-9a-f]{16}$/);
    expect(embedded.payloadHex).not.toBe(payloadHex(payloadFor(mark.watermarkId)));
    expect(embedded.algorithm).toBe('cairn-sync-v2');
    expect(embedded.keyId).toMatch(/^dev-[0-9a-f]{8}$/);
    expect(embedded.psnrDb).toBeGreaterThanOrEqual(38);
    // The marked file comes back encoded as it was sent (PNG here), with its thumbnail; never raw pixels.
    expect(embedded).toMatchObject({ width: coffee.width, height: coffee.height });
    const markedImage = await decodeFile(embedded.encoded);
    expect(markedImage).toMatchObject({ width: coffee.width, height: coffee.height, channels: 3 });
    expect((await sharp(Buffer.from(embedded.encoded)).metadata()).format).toBe('png');
    const thumbnail = await sharp(Buffer.from(embedded.thumbnail)).metadata();
    expect(thumbnail.format).toBe('jpeg');
    expect(Math.max(thumbnail.width ?? 0, thumbnail.height ?? 0)).toBe(256);

    const published = await ATTACKS['JPEG q75'](markedImage);
    const detected = await client.detectImage({ encoded: await png(published) });
    expect(detected).toMatchObject({
      detected: true,
      payloadHex: embedded.payloadHex,
      registered: true,
      watermarkId: mark.watermarkId,
      assetId: mark.assetId,
      tenantId: mark.tenantId,
      algorithm: 'cairn-sync-v2',
      keyId: embedded.keyId,
      keyless: false,
      // The picture is the one the mark was embedded in.
      contentConsistent: true,
    });
    expect(detected.confidence).toBeGreaterThan(0.5);
    expect(detected.confidence).toBeLessThanOrEqual(1);
    // Asked as background work (the verifier's stored verdict), the same file gets exactly the same answer.
    await expect(client.detectImage({ encoded: await png(published), background: true })).resolves.toEqual(detected);
  });

  it('answers detected=false for an unmarked photo', async () => {
    const detected = await client.detectImage({ encoded: chelseaPng });
    expect(detected).toMatchObject({
      detected: false,
      registered: false,
      payloadHex: '',
      watermarkId: '',
      tenantId: '',
      algorithm: 'cairn-sync-v2',
      keyId: '',
    });
  });

  it('answers detected but not registered for a valid mark the registry does not know', async () => {
    const stray = payloadFor(newId('watermark'));
    const marked = createImageWatermark().embed(chelsea, stray);
    const detected = await client.detectImage({ encoded: await png(marked) });
    expect(detected).toMatchObject({
      detected: true,
      payloadHex: payloadHex(stray),
      registered: false,
      watermarkId: '',
      tenantId: '',
      algorithm: 'cairn-dct-v1',
      keyless: true,
    });
  });

  it('is idempotent on the watermark id, and refuses the id for another asset or tenant', async () => {
    const mark = ids();
    const first = await client.embedImage({ ...mark, encoded: chelseaPng });
    const again = await client.embedImage({ ...mark, encoded: chelseaPng });
    expect(again.payloadHex).toBe(first.payloadHex);
    expect(Buffer.from(again.encoded).equals(Buffer.from(first.encoded))).toBe(true);

    const otherAsset = await failure(client.embedImage({ ...mark, assetId: newId('asset'), encoded: chelseaPng }));
    expect(otherAsset).toMatchObject({ code: 'cairn.sign.idempotency_conflict', grpc: GrpcStatus.ALREADY_EXISTS });
    const otherTenant = await failure(client.embedImage({ ...mark, tenantId: newId('tenant'), encoded: chelseaPng }));
    expect(otherTenant.code).toBe('cairn.sign.idempotency_conflict');
  });
});

describe('a reading of Cairn’s own signed file is kept for the very same bytes', () => {
  /** How many image searches (decode and worker) and registry lookups the service ran since the call. */
  function searches(): { count: () => number; lookups: () => number; decodes: () => number; stop: () => void } {
    let count = 0;
    let lookups = 0;
    let decodes = 0;
    const stop = onSpanEnd((span) => {
      if (span.name === 'watermark.detect') count += 1;
      if (span.name === 'watermark.registry.find') lookups += 1;
      if (span.name === 'watermark.decode') decodes += 1;
    });
    return { count: () => count, lookups: () => lookups, decodes: () => decodes, stop };
  }

  /** The marked PNG as the signer stores it: a C2PA manifest store in a `caBX` chunk after IHDR. */
  function withManifestChunk(png: Uint8Array): Buffer {
    const file = Buffer.from(png);
    const afterIhdr = 8 + 12 + file.readUInt32BE(8);
    const store = Buffer.alloc(64, 0x2a);
    const head = Buffer.alloc(8);
    head.writeUInt32BE(store.length);
    head.write('caBX', 4, 'latin1');
    return Buffer.concat([file.subarray(0, afterIhdr), head, store, Buffer.alloc(4), file.subarray(afterIhdr)]);
  }

  it('answers a verify of a Cairn copy’s bytes exactly as the full search would, from the embedding’s read-back', async () => {
    const mark = ids();
    const embedded = await client.embedImage({ ...mark, encoded: coffeePng });
    const seen = searches();
    try {
      // Cairn's signed copy (the marked file with its manifest store): its reading is the read-back's, neither
      // decoded nor searched again.
      const signed = await client.detectImage({ encoded: withManifestChunk(embedded.encoded), cairnCopy: true });
      expect(seen.decodes()).toBe(0);
      const first = await client.detectImage({ encoded: embedded.encoded, cairnCopy: true });
      expect(first).toEqual(signed);
      expect(first).toMatchObject({
        detected: true,
        registered: true,
        assetId: mark.assetId,
        tenantId: mark.tenantId,
        contentConsistent: true,
      });
      // An upload of the same bytes (cairn_copy unset) gets the kept reading, and the kept answer: the mark's row
      // was final (found, its description written), so neither the search nor the lookup runs again.
      const again = await client.detectImage({ encoded: embedded.encoded });
      expect(again).toEqual(first);
      // Named by its SHA-256 instead of sent: the same answer, from the same kept reading.
      const sha256 = createHash('sha256').update(embedded.encoded).digest('hex');
      expect(await client.detectImage({ sha256 })).toEqual(first);
      // Not even the first: EmbedImage read the mark back from these pixels before answering, and that reading is
      // kept (under the pixels, which a signed copy shares), so Cairn's copy is never searched a second time.
      expect(seen.count()).toBe(0);
      expect(seen.decodes()).toBe(0);
      // One registry lookup per distinct file (the signed copy, the marked file); none for a file asked again.
      expect(seen.lookups()).toBe(2);
    } finally {
      seen.stop();
    }
  });

  it('answers reading_missing for a digest it keeps no reading of, and refuses one that is no SHA-256', async () => {
    const unknown = createHash('sha256').update(chelseaPng).digest('hex');
    await client.detectImage({ encoded: chelseaPng }); // an upload: searched, never kept
    expect(await client.detectImage({ sha256: unknown })).toMatchObject({
      readingMissing: true,
      detected: false,
      registered: false,
      payloadHex: '',
    });
    expect((await failure(client.detectImage({ sha256: 'not-a-digest' }))).code).toBe('cairn.validation.invalid_body');
  });

  it('never keeps an upload’s reading: the same uploaded bytes are searched each time', async () => {
    const mark = ids();
    const embedded = await client.embedImage({ ...mark, encoded: chelseaPng });
    const upload = await png(await ATTACKS['JPEG q75'](await decodeFile(embedded.encoded)));
    const seen = searches();
    try {
      const first = await client.detectImage({ encoded: upload });
      expect(first).toMatchObject({ detected: true, registered: true, assetId: mark.assetId });
      expect(await client.detectImage({ encoded: upload })).toEqual(first);
      expect(seen.count()).toBe(2);
      expect(seen.lookups()).toBe(2);
    } finally {
      seen.stop();
    }
  });
});

describe('validation', () => {
  const valid = () => ({ ...ids(), encoded: coffeePng });

  it('refuses bytes that are no image, or an image it cannot decode, with INVALID_ARGUMENT (an undecodable embed as the sign’s unsupported_mime)', async () => {
    const truncated = coffeePng.subarray(0, 2000);
    const cases = [
      [Buffer.from('not an image at all'), 'must be'],
      [truncated, 'cannot be decoded'],
      [Buffer.alloc(0), 'encoded (the image file) is required'],
    ] as const;
    for (const [encoded, message] of cases) {
      // An embed serves a sign: an upload that only looks like an image is the sign's unsupported_mime.
      const embedCode = encoded === truncated ? 'cairn.sign.unsupported_mime' : 'cairn.validation.invalid_body';
      const calls = [
        [() => client.embedImage({ ...valid(), encoded }), embedCode],
        [() => client.detectImage({ encoded }), 'cairn.validation.invalid_body'],
      ] as const;
      for (const [call, code] of calls) {
        const error = await failure(call());
        expect(error).toMatchObject({ code, grpc: GrpcStatus.INVALID_ARGUMENT });
        expect(error.message).toContain(message);
      }
    }
  });

  it('refuses an image declaring more pixels than MEDIA_MAX_IMAGE_PIXELS from its header: cairn.media.too_large, nothing recorded', async () => {
    // 10000×10000 of one colour: a few hundred KB that would decode to 300 MB.
    const bomb = await sharp({ create: { width: 10_000, height: 10_000, channels: 3, background: '#336699' } })
      .png({ compressionLevel: 9 })
      .toBuffer();
    const mark = ids();
    for (const call of [
      () => client.embedImage({ ...mark, encoded: bomb }),
      () => client.detectImage({ encoded: bomb }),
    ]) {
      const error = await failure(call());
      expect(error.code).toBe('cairn.media.too_large');
      expect(error.message).toContain('10000×10000');
    }
    // The refused embed wrote no registry row: the id is still free for another asset.
    await expect(client.embedImage({ ...mark, assetId: newId('asset'), encoded: chelseaPng })).resolves.toMatchObject({
      algorithm: 'cairn-sync-v2',
    });
  });

  it('answers not applicable for an image too small to carry a mark', async () => {
    const small = await sharp(coffeePng).resize(60, 40).png().toBuffer();
    await expect(client.detectImage({ encoded: small })).resolves.toMatchObject({ applicable: false, detected: false });
  });

  it.each([
    [
      'an image under 256 on a side',
      async () => ({ encoded: await sharp(coffeePng).resize(600, 255, { fit: 'fill' }).png().toBuffer() }),
      'at least 256×256',
    ],
    ['a malformed tenant id', async () => ({ tenantId: 'tenant-1' }), 'tenant_id must be a tenant id'],
    [
      'a watermark id of the wrong kind',
      async () => ({ watermarkId: newId('asset') }),
      'watermark_id must be a watermark id',
    ],
    ['a missing asset id', async () => ({ assetId: '' }), 'asset_id must be an asset id'],
  ] as const)('refuses an embed with %s', async (_, change, message) => {
    const error = await failure(client.embedImage({ ...valid(), ...(await change()) }));
    expect(error).toMatchObject({ code: 'cairn.validation.invalid_body', grpc: GrpcStatus.INVALID_ARGUMENT });
    expect(error.message).toContain(message);
  });
});

describe('registry row-level security', () => {
  it('shows a tenant only its own marks, and a payload lookup exactly its one row', async () => {
    const a = ids();
    const b = ids();
    await client.embedImage({ ...a, encoded: chelseaPng });
    const bMark = await client.embedImage({ ...b, encoded: chelseaPng });
    const db = service.context.db;
    const visible = (tenantId: string) =>
      withTenant(db, tenantId, (tx) =>
        tx.execute<{ watermark_id: string }>(sql`select watermark_id from watermark.marks`),
      );
    expect((await visible(a.tenantId)).rows.map((r) => r.watermark_id)).toEqual([a.watermarkId]);
    expect((await visible(newId('tenant'))).rows).toEqual([]);

    const byPayload = await db.transaction(async (tx) => {
      await tx.execute(sql`select set_config('cairn.watermark_payload', ${bMark.payloadHex}, true)`);
      const rows = (await tx.execute<{ watermark_id: string }>(sql`select watermark_id from watermark.marks`)).rows;
      // Reading by payload opens the row for reading only.
      const updated = await tx.execute(sql`update watermark.marks set asset_id = 'a_x' returning watermark_id`);
      return { rows, updated: updated.rows.length };
    });
    expect(byPayload).toEqual({ rows: [{ watermark_id: b.watermarkId }], updated: 0 });

    // Nothing set: nothing visible, even to the table's owner (FORCE ROW LEVEL SECURITY).
    expect((await db.execute(sql`select 1 from watermark.marks`)).rows).toEqual([]);
  });
});
