import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'drizzle-orm';
import { newId } from '@cairn/ids';
import { watermarkV1 } from '@cairn/proto';
import { createClient, type ClientOf } from '@cairn/rpc';
import { startService, type RunningService } from '@cairn/runtime';
import { createSandbox, type Sandbox } from '@cairn/testing';
import type { NewMark } from '../src/app/ports.js';
import { MarkRegistry } from '../src/store/marks.js';
import { createKeyedImageWatermark } from '../src/domain/image/cairn-dct-keyed-v1.js';
import { createImageWatermark } from '../src/domain/image/cairn-dct-v1.js';
import { SyncTileWatermark } from '../src/domain/image/cairn-sync-v2.js';
import type { RawImage } from '../src/domain/image/raw-image.js';
import { keyedPayloadFor, payloadFor, payloadHex } from '../src/domain/payload.js';
import { watermarkService } from '../src/service.js';
import { ATTACKS, decodeFile, loadPhoto, png } from './support/images.js';
import { recording } from '../../../test/support/audio.js';
import { audioPayloadFor } from '../src/domain/audio/cairn-audio-wm-v1.js';

/** One running watermark service and a client to it; `stop` ends both. */
async function start(
  env: NodeJS.ProcessEnv,
): Promise<{ service: RunningService; client: ClientOf<typeof watermarkV1.WatermarkService>; stop(): Promise<void> }> {
  const service = await startService(watermarkService({ ...env, WATERMARK_WORKERS: '1' }));
  const client = createClient(watermarkV1.WatermarkService, `127.0.0.1:${service.grpcPort}`, { deadlineMs: 30_000 });
  return { service, client, stop: async () => (client.close(), await service.stop()) };
}

const ids = () => ({ tenantId: newId('tenant'), watermarkId: newId('watermark'), assetId: newId('asset') });

/** Records `id`'s mark as signs recorded it before the present algorithms: what a retry of that id must write again. */
const recordIssued = (
  running: Awaited<ReturnType<typeof start>>,
  id: ReturnType<typeof ids>,
  payload: Uint8Array,
  mark: Pick<NewMark, 'algorithm' | 'keyId'>,
) => new MarkRegistry(running.service.context.db).record({ ...id, payloadHex: payloadHex(payload), ...mark });

const hexKey = () => randomBytes(32).toString('hex');

let photos: Record<'coffee' | 'chelsea' | 'astronaut' | 'camera', RawImage>;
const sandboxes: Sandbox[] = [];
async function sandbox(): Promise<Sandbox> {
  const created = await createSandbox();
  sandboxes.push(created);
  return created;
}

beforeAll(async () => {
  const [coffee, chelsea, astronaut, camera] = await Promise.all(
    ['coffee.png', 'chelsea.png', 'astronaut.png', 'camera.png'].map((f) => loadPhoto(f)),
  );
  photos = { coffee: coffee!, chelsea: chelsea!, astronaut: astronaut!, camera: camera! };
});
afterAll(async () => {
  for (const s of sandboxes) await s.dispose();
});

describe('development key (WATERMARK_KEYS unset)', () => {
  let env: NodeJS.ProcessEnv;
  let running: Awaited<ReturnType<typeof start>>;
  const victim = ids();
  let victimMark: { payloadHex: string; keyId: string; image: RawImage };

  beforeAll(async () => {
    env = (await sandbox()).env;
    running = await start(env);
    const embedded = await running.client.embedImage({ ...victim, encoded: await png(photos.coffee) });
    victimMark = { payloadHex: embedded.payloadHex, keyId: embedded.keyId, image: await decodeFile(embedded.encoded) };
  }, 60_000);
  afterAll(() => running.stop());

  it('generates one key, keeps it sealed in the schema, and still detects its marks after a restart', async () => {
    expect(victimMark.keyId).toMatch(/^dev-[0-9a-f]{8}$/);
    await running.stop();
    running = await start(env);
    const detected = await running.client.detectImage({
      encoded: await png(await ATTACKS['JPEG q75'](victimMark.image)),
    });
    expect(detected).toMatchObject({
      detected: true,
      registered: true,
      assetId: victim.assetId,
      algorithm: 'cairn-sync-v2',
      keyId: victimMark.keyId,
      keyless: false,
    });
    const rows = (
      await running.service.context.db.execute<{ kid: string; sealed_key: string }>(
        sql`select kid, sealed_key from watermark.generated_keys`,
      )
    ).rows;
    expect(rows.map((r) => r.kid)).toEqual([victimMark.keyId]);
    expect(rows[0]!.sealed_key).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(rows[0]!.sealed_key).not.toMatch(/[0-9a-f]{64}/);
  });

  it.each([
    ['chelsea', 'cairn-sync-v2'],
    ['astronaut', 'cairn-sync-v2'],
    ['chelsea', 'cairn-dct-keyed-v1'],
    ['camera', 'cairn-dct-keyed-v1'],
  ] as const)(
    'does not name the victim for its (public) payload stamped into %s with the published %s code and a wrong key',
    async (photo, algorithm) => {
      const payload = Uint8Array.from(Buffer.from(victimMark.payloadHex, 'hex'));
      const wrongKey = Uint8Array.from(randomBytes(32));
      const code =
        algorithm === 'cairn-sync-v2' ? new SyncTileWatermark(wrongKey) : createKeyedImageWatermark(wrongKey);
      const forged = code.embed(photos[photo], payload);
      const detected = await running.client.detectImage({ encoded: await png(forged) });
      expect(detected).toMatchObject({ registered: false, watermarkId: '', assetId: '', tenantId: '' });
      expect(detected.payloadHex).not.toBe(victimMark.payloadHex);
    },
  );

  it('reads the payload stamped with the keyless code, but reports it keyless and not as the victim', async () => {
    const forged = createImageWatermark().embed(
      photos.chelsea,
      Uint8Array.from(Buffer.from(victimMark.payloadHex, 'hex')),
    );
    const detected = await running.client.detectImage({ encoded: await png(forged) });
    expect(detected).toMatchObject({
      detected: true,
      payloadHex: victimMark.payloadHex,
      registered: false,
      watermarkId: '',
      assetId: '',
      algorithm: 'cairn-dct-v1',
      keyless: true,
      keyId: '',
    });
  });

  it('still decodes a cairn-dct-v1 mark issued before, reported keyless, and re-embeds its id as the same v1 mark', async () => {
    const old = ids();
    const payload = payloadFor(old.watermarkId);
    // A mark issued before keyed marks existed: recorded as cairn-dct-v1 with no key, embedded with v1's code.
    await recordIssued(running, old, payload, { algorithm: 'cairn-dct-v1', keyId: null });
    const marked = createImageWatermark().embed(photos.camera, payload);
    const detected = await running.client.detectImage({ encoded: await png(await ATTACKS['JPEG q75'](marked)) });
    expect(detected).toMatchObject({
      detected: true,
      registered: true,
      watermarkId: old.watermarkId,
      assetId: old.assetId,
      algorithm: 'cairn-dct-v1',
      keyId: '',
      keyless: true,
    });
    const resolved = await running.client.resolvePayload({ payloadHex: payloadHex(payload) });
    expect(resolved).toMatchObject({
      registered: true,
      assetId: old.assetId,
      algorithm: 'cairn-dct-v1',
      keyId: '',
      keyless: true,
    });
    const again = await running.client.embedImage({ ...old, encoded: await png(photos.camera) });
    expect(again).toMatchObject({ payloadHex: payloadHex(payload), algorithm: 'cairn-dct-v1', keyId: '' });
  });
});

describe('configured keys and rotation', () => {
  const k1 = hexKey();
  const k2 = hexKey();
  let env: NodeJS.ProcessEnv;
  const first = ids();
  let firstMark: { payloadHex: string; image: RawImage };

  beforeAll(async () => {
    env = (await sandbox()).env;
    const running = await start({ ...env, WATERMARK_KEYS: `k1:${k1}` });
    try {
      const embedded = await running.client.embedImage({ ...first, encoded: await png(photos.chelsea) });
      expect(embedded).toMatchObject({ algorithm: 'cairn-sync-v2', keyId: 'k1' });
      firstMark = { payloadHex: embedded.payloadHex, image: await decodeFile(embedded.encoded) };
    } finally {
      await running.stop();
    }
  }, 60_000);

  it('signs with the new current key and still detects (and re-embeds) marks of the older key listed after it', async () => {
    const running = await start({
      ...env,
      WATERMARK_KEYS: JSON.stringify([
        { kid: 'k2', key: k2 },
        { kid: 'k1', key: k1 },
      ]),
    });
    try {
      const old = await running.client.detectImage({ encoded: await png(await ATTACKS['JPEG q75'](firstMark.image)) });
      expect(old).toMatchObject({
        detected: true,
        registered: true,
        assetId: first.assetId,
        keyId: 'k1',
        algorithm: 'cairn-sync-v2',
        keyless: false,
      });
      const retried = await running.client.embedImage({ ...first, encoded: await png(photos.chelsea) });
      expect(retried).toMatchObject({ payloadHex: firstMark.payloadHex, keyId: 'k1' });

      const second = ids();
      const embedded = await running.client.embedImage({ ...second, encoded: await png(photos.coffee) });
      expect(embedded.keyId).toBe('k2');
      const detected = await running.client.detectImage({ encoded: await png(await decodeFile(embedded.encoded)) });
      expect(detected).toMatchObject({ registered: true, assetId: second.assetId, keyId: 'k2' });
      expect((await running.client.resolvePayload({ payloadHex: embedded.payloadHex })).keyId).toBe('k2');
    } finally {
      await running.stop();
    }
  });

  it('still detects a cairn-dct-keyed-v1 mark issued before cairn-sync-v2, and re-embeds its id as that mark', async () => {
    const running = await start({ ...env, WATERMARK_KEYS: `k1:${k1}` });
    try {
      const old = ids();
      const payload = keyedPayloadFor(Buffer.from(k1, 'hex'), old.watermarkId);
      // Recorded and embedded as signs did before the switch: keyed v1 under k1.
      await recordIssued(running, old, payload, { algorithm: 'cairn-dct-keyed-v1', keyId: 'k1' });
      const marked = createKeyedImageWatermark(Buffer.from(k1, 'hex')).embed(photos.coffee, payload);
      const detected = await running.client.detectImage({ encoded: await png(await ATTACKS['JPEG q75'](marked)) });
      expect(detected).toMatchObject({
        detected: true,
        registered: true,
        assetId: old.assetId,
        algorithm: 'cairn-dct-keyed-v1',
        keyId: 'k1',
        keyless: false,
      });
      // Its content is checked by fingerprint (in the verifier), not here.
      expect(detected.contentConsistent).toBeUndefined();
      const again = await running.client.embedImage({ ...old, encoded: await png(photos.coffee) });
      expect(again).toMatchObject({ payloadHex: payloadHex(payload), algorithm: 'cairn-dct-keyed-v1', keyId: 'k1' });
      const reread = await running.client.detectImage({ encoded: await png(await decodeFile(again.encoded)) });
      expect(reread).toMatchObject({ registered: true, assetId: old.assetId, algorithm: 'cairn-dct-keyed-v1' });
    } finally {
      await running.stop();
    }
  });

  it('writes new audio marks as cairn-audio-wm-v3, and still writes (and reads) cairn-audio-wm-v1 for an id recorded with it', async () => {
    const running = await start({ ...env, WATERMARK_KEYS: `k1:${k1}` });
    try {
      const speech = await recording('speech', 8);
      const fresh = ids();
      const embedded = await running.client.embedAudio({ ...fresh, encoded: speech });
      expect(embedded).toMatchObject({ algorithm: 'cairn-audio-wm-v3', keyId: 'k1' });
      const read = await running.client.detectAudio({ encoded: embedded.encoded });
      expect(read).toMatchObject({
        detected: true,
        registered: true,
        assetId: fresh.assetId,
        payloadHex: embedded.payloadHex,
        algorithm: 'cairn-audio-wm-v3',
        keyId: 'k1',
      });

      // Recorded as signs did before the switch: v1 under k1. A retry of that id writes v1 again, which is read.
      const old = ids();
      const payload = audioPayloadFor(Buffer.from(k1, 'hex'), old.watermarkId);
      await recordIssued(running, old, payload, { algorithm: 'cairn-audio-wm-v1', keyId: 'k1' });
      const again = await running.client.embedAudio({ ...old, encoded: speech });
      expect(again).toMatchObject({ payloadHex: payloadHex(payload), algorithm: 'cairn-audio-wm-v1', keyId: 'k1' });
      const reread = await running.client.detectAudio({ encoded: again.encoded });
      expect(reread).toMatchObject({
        detected: true,
        registered: true,
        assetId: old.assetId,
        algorithm: 'cairn-audio-wm-v1',
        keyId: 'k1',
      });
    } finally {
      await running.stop();
    }
  }, 60_000);

  it('no longer detects a mark once its key is dropped from WATERMARK_KEYS', async () => {
    const running = await start({ ...env, WATERMARK_KEYS: `k2:${k2}` });
    try {
      const detected = await running.client.detectImage({ encoded: await png(firstMark.image) });
      expect(detected).toMatchObject({ detected: false, registered: false, assetId: '' });
    } finally {
      await running.stop();
    }
  });

  it('refuses to start in production without WATERMARK_KEYS, and with a malformed one', async () => {
    await expect(start({ ...env, CAIRN_ENV: 'production' })).rejects.toThrow(
      'WATERMARK_KEYS is required in production',
    );
    const error = await start({ ...env, WATERMARK_KEYS: `k1:${k1.slice(4)}` }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(String(error)).toContain('WATERMARK_KEYS: entry 1 ("k1"): the key must be 64 hex characters');
    expect(String(error)).not.toContain(k1.slice(4));
  });
});
