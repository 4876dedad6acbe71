import { describe, expect, it } from '@jest/globals';
import { activeManifestLabel, manifestLabels, writeBox, writeSuperbox } from '@cairn/jumbf';
import { activeManifestOnly } from '../src/domain/manifest-store.js';

const box = writeBox;
const superbox = (label: string, ...children: Buffer[]) => writeSuperbox(label, children);

describe('activeManifestOnly', () => {
  it('keeps the store description and the last (active) manifest, byte for byte', () => {
    const active = superbox('urn:c2pa:second', box('cbor', Buffer.from([0xa1, 0x61, 0x61, 0x01])));
    const store = superbox('c2pa', superbox('urn:c2pa:first', box('cbor', Buffer.from([0xa0]))), active);
    const only = activeManifestOnly(store);
    expect(only).not.toBeNull();
    expect(manifestLabels(only!)).toEqual(['urn:c2pa:second']);
    expect(activeManifestLabel(only!)).toBe(activeManifestLabel(store));
    expect(only!.subarray(only!.length - active.length).equals(active)).toBe(true);
  });

  it('answers a single-manifest store unchanged', () => {
    const store = superbox('c2pa', superbox('urn:c2pa:only'));
    expect(activeManifestOnly(store)).toBe(store);
  });

  it('refuses bytes that are not a manifest store', () => {
    expect(activeManifestOnly(Buffer.from('not jumbf'))).toBeNull();
  });
});
