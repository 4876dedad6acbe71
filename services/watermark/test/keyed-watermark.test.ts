import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { createKeyedImageWatermark } from '../src/domain/image/cairn-dct-keyed-v1.js';
import { createImageWatermark } from '../src/domain/image/cairn-dct-v1.js';
import { psnr } from '../src/domain/image/psnr.js';
import type { RawImage } from '../src/domain/image/raw-image.js';
import { parseWatermarkKeys } from '../src/domain/keys.js';
import { keyedPayloadFor, payloadFor, payloadHex } from '../src/domain/payload.js';
import { ATTACKS, loadPhoto } from './support/images.js';

const PHOTOS = ['coffee.png', 'chelsea.png', 'astronaut.png', 'camera.png'] as const;
const photos = new Map<string, RawImage>();
const serviceKey = Uint8Array.from(randomBytes(32));
const victimPayload = keyedPayloadFor(serviceKey, 'w_victim');

beforeAll(async () => {
  for (const file of PHOTOS) photos.set(file, await loadPhoto(file));
});

describe('cairn-dct-keyed-v1', () => {
  it.each(PHOTOS)(
    'marks %s invisibly (PSNR ≥ 38 dB) and reads it back after JPEG q75 and resize + JPEG',
    async (file) => {
      const original = photos.get(file)!;
      const marked = createKeyedImageWatermark(serviceKey).embed(original, victimPayload);
      expect(psnr(original, marked)).toBeGreaterThanOrEqual(38);
      for (const attack of ['JPEG q75', '0.75× resize then JPEG q75'] as const) {
        const detection = createKeyedImageWatermark(serviceKey).detect(await ATTACKS[attack](marked));
        expect(detection && payloadHex(detection.payload)).toBe(payloadHex(victimPayload));
      }
    },
  );

  it.each(PHOTOS)(
    'does not read a mark that the published code embedded in %s with a wrong key, nor one stamped keyless',
    (file) => {
      const original = photos.get(file)!;
      const detector = createKeyedImageWatermark(serviceKey);
      // The attacker knows the victim's payload (manifests publish it) and has the code, not the key.
      const forgedWithWrongKey = createKeyedImageWatermark(Uint8Array.from(randomBytes(32))).embed(
        original,
        victimPayload,
      );
      const forgedKeyless = createImageWatermark().embed(original, victimPayload);
      expect(detector.detect(forgedWithWrongKey)).toBeNull();
      expect(detector.detect(forgedKeyless)).toBeNull();
      // The keyless forgery is a valid mark (the public detector reads it), just not one under the service's key.
      expect(payloadHex(createImageWatermark().detect(forgedKeyless)!.payload)).toBe(payloadHex(victimPayload));
    },
  );

  it('is not read by the keyless detector, and does not read keyless marks', () => {
    const original = photos.get('coffee.png')!;
    expect(
      createImageWatermark().detect(createKeyedImageWatermark(serviceKey).embed(original, victimPayload)),
    ).toBeNull();
    expect(
      createKeyedImageWatermark(serviceKey).detect(createImageWatermark().embed(original, payloadFor('w_old'))),
    ).toBeNull();
  });

  it('derives payloads from the watermark id under the key: unpredictable from the id without it', () => {
    expect(payloadHex(keyedPayloadFor(serviceKey, 'w_victim'))).toBe(payloadHex(victimPayload));
    expect(payloadHex(keyedPayloadFor(Uint8Array.from(randomBytes(32)), 'w_victim'))).not.toBe(
      payloadHex(victimPayload),
    );
    expect(payloadHex(victimPayload)).not.toBe(payloadHex(payloadFor('w_victim')));
    expect(() => keyedPayloadFor(new Uint8Array(16), 'w_x')).toThrow('32 bytes');
  });
});

describe('WATERMARK_KEYS', () => {
  const hex = (byte: number) => Buffer.alloc(32, byte).toString('hex');

  it('takes kid:hex lists and JSON, first key first', () => {
    for (const text of [
      `k2:${hex(2)}, k1:${hex(1)}`,
      JSON.stringify([
        { kid: 'k2', key: hex(2) },
        { kid: 'k1', key: hex(1) },
      ]),
    ]) {
      const parsed = parseWatermarkKeys(text);
      expect(parsed.ok && parsed.keys.map((k) => [k.kid, Buffer.from(k.secret).toString('hex')])).toEqual([
        ['k2', hex(2)],
        ['k1', hex(1)],
      ]);
    }
  });

  it.each([
    ['a short key', `k1:${hex(1).slice(2)}`, 'must be 64 hex characters'],
    ['a key id with a space', `my key:${hex(1)}`, 'the key id must be'],
    ['a repeated key id', `k1:${hex(1)},k1:${hex(2)}`, 'appears twice'],
    ['broken JSON', '[{"kid": "k1"', 'not valid JSON'],
    ['a JSON object', '{"k1": "00"}', 'the key id must be'],
    ['no key', ':', 'the key id must be'],
  ])('refuses %s, never echoing the secret', (_, text, problem) => {
    const parsed = parseWatermarkKeys(text);
    expect(parsed.ok).toBe(false);
    const problems = parsed.ok ? '' : parsed.problems.join('\n');
    expect(problems).toContain(problem);
    expect(problems).not.toMatch(/[0-9a-f]{32}/);
  });
});
