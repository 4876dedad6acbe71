import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import type { GenService } from '@bufbuild/protobuf/codegenv2';
import { sql } from 'drizzle-orm';
import { withTenant } from '@cairn/db';
import { CairnError } from '@cairn/errors';
import { newId } from '@cairn/ids';
import { watermarkV1 } from '@cairn/proto';
import { createClient, type ServiceClient } from '@cairn/rpc';
import { startService, type RunningService } from '@cairn/runtime';
import { createSandbox, type Sandbox } from '@cairn/testing';
import { createImageWatermark } from '../src/domain/image/cairn-dct-v1.js';
import type { RawImage } from '../src/domain/image/raw-image.js';
import { payloadFor, payloadHex } from '../src/domain/payload.js';
import { watermarkService } from '../src/service.js';
import { ATTACKS, loadPhoto } from './support/images.js';

type WatermarkMethods = typeof watermarkV1.WatermarkService extends GenService<infer M> ? M : never;

let sandbox: Sandbox;
let service: RunningService;
let client: ServiceClient<WatermarkMethods>;
let coffee: RawImage;
let chelsea: RawImage;

beforeAll(async () => {
  sandbox = await createSandbox();
  service = await startService(watermarkService({ ...sandbox.env, WATERMARK_WORKERS: '1' }));
  client = createClient(watermarkV1.WatermarkService, `127.0.0.1:${service.grpcPort}`, { deadlineMs: 30_000 });
  [coffee, chelsea] = await Promise.all([loadPhoto('coffee.png'), loadPhoto('chelsea.png')]);
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
  if (!(error instanceof CairnError)) throw new Error(`expected the call to fail with a CairnError, got ${String(error)}`);
  return { code: error.code, message: error.message, grpc: (error.cause as ServiceError | undefined)?.code };
}

function ids() {
  return { tenantId: newId('tenant'), watermarkId: newId('watermark'), assetId: newId('asset') };
}

describe('EmbedImage → DetectImage over gRPC', () => {
  it('marks an image, and detection after JPEG q75 resolves the mark to its tenant and asset', async () => {
    const mark = ids();
    const embedded = await client.embedImage({ ...mark, image: coffee });
    // Keyed: the payload is not the public derivation of the id.
    expect(embedded.payloadHex).toMatch(/^[0-9a-f]{16}$/);
    expect(embedded.payloadHex).not.toBe(payloadHex(payloadFor(mark.watermarkId)));
    expect(embedded.algorithm).toBe('cairn-dct-keyed-v1');
    expect(embedded.keyId).toMatch(/^dev-[0-9a-f]{8}$/);
    expect(embedded.psnrDb).toBeGreaterThanOrEqual(38);
    expect(embedded.image).toMatchObject({ width: coffee.width, height: coffee.height, channels: 3 });
    expect(embedded.image!.pixels.length).toBe(coffee.pixels.length);

    const published = await ATTACKS['JPEG q75']({ ...embedded.image!, channels: 3 });
    const detected = await client.detectImage({ image: published });
    expect(detected).toMatchObject({
      detected: true,
      payloadHex: embedded.payloadHex,
      registered: true,
      watermarkId: mark.watermarkId,
      assetId: mark.assetId,
      tenantId: mark.tenantId,
      algorithm: 'cairn-dct-keyed-v1',
      keyId: embedded.keyId,
      keyless: false,
    });
    expect(detected.confidence).toBeGreaterThan(0.5);
    expect(detected.confidence).toBeLessThanOrEqual(1);
  });

  it('answers detected=false for an unmarked photo', async () => {
    const detected = await client.detectImage({ image: chelsea });
    expect(detected).toMatchObject({ detected: false, registered: false, payloadHex: '', watermarkId: '', tenantId: '', algorithm: 'cairn-dct-keyed-v1', keyId: '' });
  });

  it('answers detected but not registered for a valid mark the registry does not know', async () => {
    const stray = payloadFor(newId('watermark'));
    const marked = createImageWatermark().embed(chelsea, stray);
    const detected = await client.detectImage({ image: marked });
    expect(detected).toMatchObject({ detected: true, payloadHex: payloadHex(stray), registered: false, watermarkId: '', tenantId: '', algorithm: 'cairn-dct-v1', keyless: true });
  });

  it('is idempotent on the watermark id, and refuses the id for another asset or tenant', async () => {
    const mark = ids();
    const first = await client.embedImage({ ...mark, image: chelsea });
    const again = await client.embedImage({ ...mark, image: chelsea });
    expect(again.payloadHex).toBe(first.payloadHex);
    expect(Buffer.from(again.image!.pixels).equals(Buffer.from(first.image!.pixels))).toBe(true);

    const otherAsset = await failure(client.embedImage({ ...mark, assetId: newId('asset'), image: chelsea }));
    expect(otherAsset).toMatchObject({ code: 'cairn.sign.idempotency_conflict', grpc: GrpcStatus.ALREADY_EXISTS });
    const otherTenant = await failure(client.embedImage({ ...mark, tenantId: newId('tenant'), image: chelsea }));
    expect(otherTenant.code).toBe('cairn.sign.idempotency_conflict');
  });
});

describe('validation', () => {
  const valid = () => ({ ...ids(), image: coffee });

  it('refuses a pixel buffer that does not match the dimensions with INVALID_ARGUMENT / cairn.validation.invalid_body', async () => {
    const short = { ...coffee, pixels: coffee.pixels.subarray(0, coffee.pixels.length - 1) };
    for (const call of [() => client.embedImage({ ...valid(), image: short }), () => client.detectImage({ image: short })]) {
      const error = await failure(call());
      expect(error).toMatchObject({ code: 'cairn.validation.invalid_body', grpc: GrpcStatus.INVALID_ARGUMENT });
      expect(error.message).toContain('600×400×3 needs 720000');
    }
  });

  it.each([
    ['channels 2', (image: RawImage) => ({ image: { ...image, channels: 2 } }), 'channels must be 1 (gray), 3 (RGB) or 4 (RGBA)'],
    ['no image', () => ({ image: undefined }), 'image is required'],
    ['width above 8192', () => ({ image: { pixels: new Uint8Array(0), width: 8193, height: 1, channels: 1 } }), 'image.width must be between 1 and 8192'],
    ['an image under 256 on a side', (image: RawImage) => ({ image: { ...image, pixels: image.pixels.subarray(0, 600 * 255 * 3), height: 255 } }), 'at least 256×256'],
    ['a malformed tenant id', () => ({ tenantId: 'tenant-1' }), 'tenant_id must be a tenant id'],
    ['a watermark id of the wrong kind', () => ({ watermarkId: newId('asset') }), 'watermark_id must be a watermark id'],
    ['a missing asset id', () => ({ assetId: '' }), 'asset_id must be an asset id'],
  ] as const)('refuses an embed with %s', async (_, change, message) => {
    const error = await failure(client.embedImage({ ...valid(), ...change(coffee) }));
    expect(error).toMatchObject({ code: 'cairn.validation.invalid_body', grpc: GrpcStatus.INVALID_ARGUMENT });
    expect(error.message).toContain(message);
  });
});

describe('registry row-level security', () => {
  it('shows a tenant only its own marks, and a payload lookup exactly its one row', async () => {
    const a = ids();
    const b = ids();
    await client.embedImage({ ...a, image: chelsea });
    const bMark = await client.embedImage({ ...b, image: chelsea });
    const db = service.context.db;
    const visible = (tenantId: string) => withTenant(db, tenantId, (tx) => tx.execute<{ watermark_id: string }>(sql`select watermark_id from watermark.marks`));
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
