import { describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { Sealer } from '../src/index.js';

const key = randomBytes(32).toString('hex');

describe('Sealer', () => {
  it('opens what it sealed, and the sealed text does not contain the secret', () => {
    const sealer = new Sealer(key);
    const sealed = sealer.seal('cairn_sk_secret', 'row-1');
    expect(sealed).toMatch(/^v1\./);
    expect(sealed).not.toContain('cairn_sk_secret');
    expect(sealer.open(sealed, 'row-1')).toBe('cairn_sk_secret');
  });

  it('refuses a value moved to another row, a tampered value, or another key', () => {
    const sealed = new Sealer(key).seal('whsec_x', 'wh_1');
    expect(() => new Sealer(key).open(sealed, 'wh_2')).toThrow();
    const tampered = sealed.slice(0, -2) + (sealed.endsWith('AA') ? 'BB' : 'AA');
    expect(() => new Sealer(key).open(tampered, 'wh_1')).toThrow();
    expect(() => new Sealer(randomBytes(32).toString('hex')).open(sealed, 'wh_1')).toThrow();
  });

  it('names the setting when the key is the wrong size', () => {
    expect(() => new Sealer('abcd', 'CAIRN_DATA_KEY')).toThrow('CAIRN_DATA_KEY must be 32 bytes');
  });
});
