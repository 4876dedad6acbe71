import { describe, expect, it } from '@jest/globals';
import { CairnError } from '@cairn/errors';
import { bindingBytes } from '../src/app/c2pa-resolution.js';

describe('bindingBytes', () => {
  const bytes = Buffer.from(Array.from({ length: 32 }, (_, i) => i * 7));

  it('reads base64, base64url (padded or not) and hex', () => {
    expect(bindingBytes(bytes.toString('base64'), 32, 'x').equals(bytes)).toBe(true);
    expect(bindingBytes(bytes.toString('base64url'), 32, 'x').equals(bytes)).toBe(true);
    expect(bindingBytes(bytes.toString('base64').replace(/=+$/, ''), 32, 'x').equals(bytes)).toBe(true);
    expect(bindingBytes(bytes.toString('hex').toUpperCase(), 32, 'x').equals(bytes)).toBe(true);
  });

  it.each([
    ['wrong length', Buffer.alloc(31).toString('base64')],
    ['not base64', '%%%%'],
    ['hex of the wrong size', 'ab'.repeat(31)],
    ['inner padding', 'AA==AA=='],
  ])('refuses %s', (_what, value) => {
    expect(() => bindingBytes(value, 32, 'x')).toThrow(CairnError);
  });
});
