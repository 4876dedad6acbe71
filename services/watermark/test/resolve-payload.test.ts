import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CairnError } from '@cairn/errors';
import { newId } from '@cairn/ids';
import { watermarkV1 } from '@cairn/proto';
import { createClient, type ClientOf } from '@cairn/rpc';
import { startService, type RunningService } from '@cairn/runtime';
import { createSandbox, type Sandbox } from '@cairn/testing';
import { payloadFor, payloadHex } from '../src/domain/payload.js';
import { watermarkService } from '../src/service.js';
import { loadPhoto, png } from './support/images.js';

let sandbox: Sandbox;
let service: RunningService;
let client: ClientOf<typeof watermarkV1.WatermarkService>;

beforeAll(async () => {
  sandbox = await createSandbox();
  service = await startService(watermarkService({ ...sandbox.env, WATERMARK_WORKERS: '1' }));
  client = createClient(watermarkV1.WatermarkService, `127.0.0.1:${service.grpcPort}`, { deadlineMs: 30_000 });
});

afterAll(async () => {
  client.close();
  await service.stop();
  await sandbox.dispose();
});

describe('ResolvePayload', () => {
  it('resolves a registered payload to its watermark and asset, never to its tenant', async () => {
    const mark = { tenantId: newId('tenant'), watermarkId: newId('watermark'), assetId: newId('asset') };
    const embedded = await client.embedImage({ ...mark, encoded: await png(await loadPhoto('coffee.png')) });
    const resolved = await client.resolvePayload({ payloadHex: embedded.payloadHex.toUpperCase() });
    expect(resolved).toMatchObject({
      registered: true,
      watermarkId: mark.watermarkId,
      assetId: mark.assetId,
      algorithm: 'cairn-sync-v2',
      keyId: embedded.keyId,
      keyless: false,
    });
    expect(JSON.stringify(resolved)).not.toContain(mark.tenantId);
  });

  it('answers registered: false for a payload nobody embedded', async () => {
    const resolved = await client.resolvePayload({ payloadHex: payloadHex(payloadFor(newId('watermark'))) });
    expect(resolved.registered).toBe(false);
    expect(resolved.assetId).toBe('');
  });

  it.each(['', 'abc', 'zz'.repeat(8), '00'.repeat(9)])('refuses a malformed payload %j', async (payload) => {
    const error = await client.resolvePayload({ payloadHex: payload }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(CairnError);
    expect((error as CairnError).code).toBe('cairn.validation.invalid_body');
  });
});
