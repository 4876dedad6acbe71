import { describe, expect, it } from '@jest/globals';
import { DetectionMemo, type ImageReading } from '../src/app/detection-memo.js';

/** A cairn-sync-v2 reading holding `points` registered points (12 bytes each). */
function reading(points: number): ImageReading {
  return {
    applicable: true,
    outcome: {
      detection: { payload: new Uint8Array(8), confidence: 0.9 },
      algorithm: 'cairn-sync-v2',
      keyId: 'k1',
      registered: {
        xs: new Float32Array(points),
        ys: new Float32Array(points),
        values: new Float32Array(points),
        period: 32,
      },
    },
  };
}

describe('DetectionMemo', () => {
  it('keeps readings within its memory, dropping the least recently used first', () => {
    // Each reading: 256 + 8 + 3 × 4 × 1000 = 12,264 bytes; three fit in 40,000, four do not.
    const memo = new DetectionMemo(40_000);
    const keys = ['a', 'b', 'c', 'd'].map((s) => DetectionMemo.keyOf(Buffer.from(s)));
    memo.set(keys[0]!, reading(1000));
    memo.set(keys[1]!, reading(1000));
    memo.set(keys[2]!, reading(1000));
    expect(memo.get(keys[0]!)).toBeDefined(); // now the youngest
    memo.set(keys[3]!, reading(1000));
    expect(memo.get(keys[1]!)).toBeUndefined();
    expect(memo.get(keys[0]!)).toBeDefined();
    expect(memo.get(keys[2]!)).toBeDefined();
    expect(memo.get(keys[3]!)).toBeDefined();
  });

  it('keeps nothing larger than its whole memory, and nothing at all with none', () => {
    const memo = new DetectionMemo(10_000);
    memo.set('big', reading(1000));
    expect(memo.get('big')).toBeUndefined();
    const none = new DetectionMemo(0);
    none.set('small', { applicable: false });
    expect(none.get('small')).toBeUndefined();
  });

  it('keys a file by its SHA-256: equal bytes share a key, one changed byte does not', () => {
    const bytes = Buffer.from('the same file');
    expect(DetectionMemo.keyOf(Buffer.from(bytes))).toBe(DetectionMemo.keyOf(bytes));
    const changed = Buffer.from(bytes);
    changed[0] = changed[0]! ^ 1;
    expect(DetectionMemo.keyOf(changed)).not.toBe(DetectionMemo.keyOf(bytes));
  });
});

describe('DetectionMemo pixel keys', () => {
  it('keys decoded pixels by their content and shape, never as a file', () => {
    const image = { width: 2, height: 1, channels: 3 as const, pixels: Uint8Array.from([1, 2, 3, 4, 5, 6]) };
    const same = { ...image, pixels: Uint8Array.from(image.pixels) };
    expect(DetectionMemo.pixelKeyOf(same)).toBe(DetectionMemo.pixelKeyOf(image));
    // The same samples in another shape, or one sample changed, are other pictures.
    expect(DetectionMemo.pixelKeyOf({ ...image, width: 1, height: 2 })).not.toBe(DetectionMemo.pixelKeyOf(image));
    const changed = { ...image, pixels: Uint8Array.from([1, 2, 3, 4, 5, 7]) };
    expect(DetectionMemo.pixelKeyOf(changed)).not.toBe(DetectionMemo.pixelKeyOf(image));
    // A file whose bytes are these samples keys apart from them.
    expect(DetectionMemo.pixelKeyOf(image)).not.toBe(DetectionMemo.keyOf(image.pixels));
  });
});

describe('DetectionMemo answers', () => {
  it('keeps an answer only beside a kept reading, and drops it with the reading', () => {
    const memo = new DetectionMemo(3 * 12_264);
    const answer = {
      detected: true,
      applicable: true,
      payloadHex: '00'.repeat(8),
      confidence: 0.9,
      registered: true,
      watermarkId: 'w_1',
      assetId: 'a_1',
      tenantId: 't_1',
      algorithm: 'cairn-sync-v2',
      keyId: 'k1',
      keyless: false,
      contentConsistent: true,
    } as const;
    memo.keepAnswer('unkept', answer);
    expect(memo.answerOf('unkept')).toBeUndefined();
    memo.set('kept', reading(1000));
    expect(memo.answerOf('kept')).toBeUndefined();
    memo.keepAnswer('kept', answer);
    expect(memo.answerOf('kept')).toBe(answer);
    for (const key of ['b', 'c', 'd']) memo.set(key, reading(1000));
    expect(memo.answerOf('kept')).toBeUndefined();
  });
});

describe('DetectionMemo keys of a file less its C2PA store', () => {
  /** A JPEG segment: marker, big-endian length (counting itself), payload. */
  const segment = (marker: number, payload: Buffer) =>
    Buffer.concat([Buffer.from([0xff, marker, (payload.length + 2) >> 8, (payload.length + 2) & 0xff]), payload]);
  const soi = Buffer.from([0xff, 0xd8]);
  const app0 = segment(0xe0, Buffer.from('JFIF\0\x01\x01'));
  const dqt = segment(0xdb, Buffer.alloc(65, 7));
  const scan = Buffer.concat([segment(0xda, Buffer.alloc(10, 1)), Buffer.alloc(200, 0x55), Buffer.from([0xff, 0xd9])]);
  const jpeg = Buffer.concat([soi, app0, dqt, scan]);
  const app11 = segment(0xeb, Buffer.concat([Buffer.from('JP'), Buffer.alloc(300, 9)]));

  /** A PNG chunk: big-endian length, type, data, CRC (not checked by the key). */
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    return Buffer.concat([length, Buffer.from(type, 'latin1'), data, Buffer.alloc(4, 0xcc)]);
  };
  const pngSignature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const ihdr = chunk('IHDR', Buffer.alloc(13, 1));
  const idat = chunk('IDAT', Buffer.alloc(100, 2));
  const iend = chunk('IEND', Buffer.alloc(0));
  const png = Buffer.concat([pngSignature, ihdr, idat, iend]);

  it('gives a signed copy (a manifest store added) the key of the file it was signed from', () => {
    const key = DetectionMemo.unsignedKeyOf(jpeg);
    expect(key).toBeDefined();
    // c2pa-rs puts the store in APP11 segments after the first; more than one when it is large.
    expect(DetectionMemo.unsignedKeyOf(Buffer.concat([soi, app0, app11, app11, dqt, scan]))).toBe(key);
    expect(
      DetectionMemo.unsignedKeyOf(Buffer.concat([pngSignature, ihdr, chunk('caBX', Buffer.alloc(50, 3)), idat, iend])),
    ).toBe(DetectionMemo.unsignedKeyOf(png));
    expect(DetectionMemo.unsignedKeyOf(png)).not.toBe(key);
  });

  it('gives any change the decoder reads another key, and never a file digest’s or a pixel key’s', () => {
    const key = DetectionMemo.unsignedKeyOf(jpeg)!;
    for (const at of [app0.length + 2 + 10, jpeg.length - 20]) {
      const changed = Buffer.from(jpeg);
      changed[at] = changed[at]! ^ 1;
      expect(DetectionMemo.unsignedKeyOf(changed)).not.toBe(key);
    }
    const otherData = Buffer.concat([pngSignature, ihdr, chunk('IDAT', Buffer.alloc(100, 4)), iend]);
    expect(DetectionMemo.unsignedKeyOf(otherData)).not.toBe(DetectionMemo.unsignedKeyOf(png));
    expect(key).not.toBe(DetectionMemo.keyOf(jpeg));
    expect(key.startsWith('px:')).toBe(false);
  });

  it('keys no file whose structure does not walk to its end, nor formats it does not know (the caller decodes)', () => {
    expect(DetectionMemo.unsignedKeyOf(jpeg.subarray(0, app0.length + 10))).toBeUndefined();
    // A segment declaring more bytes than the file holds.
    expect(
      DetectionMemo.unsignedKeyOf(Buffer.concat([soi, Buffer.from([0xff, 0xe1, 0xff, 0xff]), scan])),
    ).toBeUndefined();
    expect(DetectionMemo.unsignedKeyOf(png.subarray(0, png.length - 4))).toBeUndefined();
    // Bytes after IEND are left to the decoder too.
    expect(DetectionMemo.unsignedKeyOf(Buffer.concat([png, Buffer.from('trailing')]))).toBeUndefined();
    expect(DetectionMemo.unsignedKeyOf(Buffer.from('RIFF\0\0\0\0WEBPVP8 '))).toBeUndefined();
    expect(DetectionMemo.unsignedKeyOf(Buffer.alloc(0))).toBeUndefined();
  });
});
