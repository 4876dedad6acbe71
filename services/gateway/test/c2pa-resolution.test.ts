import { describe, expect, it } from '@jest/globals';
import { CairnError } from '@cairn/errors';
import { activeManifestLabel, manifestLabels, writeBox, writeSuperbox } from '@cairn/jumbf';
import { activeManifestOnly, bindingBytes } from '../src/http/routes/c2pa-resolution.js';

const box = writeBox;
const superbox = (label: string, ...children: Buffer[]) => writeSuperbox(label, children);

describe('activeManifestOnly', () => {
  it('keeps the store description and the last (active) manifest, byte for byte', () => {
    const active = superbox('urn:c2pa:second', box('cbor', Buffer.from([0xa1, 0x61, 0x61, 0x01])));
    const store = superbox('c2pa', superbox('urn:c2pa:first', box('cbor', Buffer.from([0xa0]))), active);
    const only = activeManifestOnly(store);
    expect(manifestLabels(only)).toEqual(['urn:c2pa:second']);
    expect(activeManifestLabel(only)).toBe(activeManifestLabel(store));
    expect(only.subarray(only.length - active.length).equals(active)).toBe(true);
  });

  it('answers a single-manifest store unchanged', () => {
    const store = superbox('c2pa', superbox('urn:c2pa:only'));
    expect(activeManifestOnly(store)).toBe(store);
  });

  it('refuses bytes that are not a manifest store', () => {
    expect(() => activeManifestOnly(Buffer.from('not jumbf'))).toThrow(CairnError);
  });
});

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
