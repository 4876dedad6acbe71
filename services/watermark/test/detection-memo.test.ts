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

describe('DetectionMemo.contentCheck', () => {
  it('checks a kept reading once per description, again for another description, and never keeps an unkept one', () => {
    const memo = new DetectionMemo(1 << 20);
    memo.set('kept', reading(10));
    let checks = 0;
    const check = (answer: boolean) => () => {
      checks += 1;
      return answer;
    };
    const description = Uint8Array.from([0, 4, 0, 3, 9, 9, 9]);
    expect(memo.contentCheck('kept', description, check(true))).toBe(true);
    expect(memo.contentCheck('kept', Uint8Array.from(description), check(false))).toBe(true);
    expect(checks).toBe(1);
    // Another description (another mark's row) is compared again.
    expect(memo.contentCheck('kept', Uint8Array.from([0, 4, 0, 3, 1, 1, 1]), check(false))).toBe(false);
    expect(checks).toBe(2);
    // No description, or a reading not kept: checked every time.
    expect(memo.contentCheck('kept', null, check(true))).toBe(true);
    expect(memo.contentCheck('other', description, check(false))).toBe(false);
    expect(memo.contentCheck('other', description, check(true))).toBe(true);
    expect(checks).toBe(5);
  });
});
