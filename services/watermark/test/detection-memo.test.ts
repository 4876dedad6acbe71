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
