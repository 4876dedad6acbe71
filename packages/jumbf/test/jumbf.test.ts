import { describe, expect, it } from '@jest/globals';
import { activeManifestLabel, manifestLabels, readBox, writeBox, writeSuperbox } from '../src/index.js';

const box = writeBox;
const superbox = (label: string, ...children: Buffer[]) => writeSuperbox(label, children);

describe('@cairn/jumbf', () => {
  const store = superbox(
    'c2pa',
    superbox('urn:c2pa:first'),
    superbox('urn:c2pa:second', box('cbor', Buffer.from([0xa0]))),
  );

  it('lists the manifests in order; the active one is the last', () => {
    expect(manifestLabels(store)).toEqual(['urn:c2pa:first', 'urn:c2pa:second']);
    expect(activeManifestLabel(store)).toBe('urn:c2pa:second');
  });

  it('refuses boxes that claim more than their parent holds', () => {
    const lying = Buffer.from(store);
    lying.writeUInt32BE(store.length + 100, 0);
    expect(readBox(lying, 0, lying.length)).toBeUndefined();
    expect(manifestLabels(lying)).toEqual([]);
    const huge = Buffer.concat([
      Buffer.from([0, 0, 0, 1]),
      Buffer.from('jumb', 'latin1'),
      Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
    ]);
    expect(readBox(huge, 0, huge.length)).toBeUndefined();
  });

  it('answers nothing for something that is not a store', () => {
    expect(activeManifestLabel(Buffer.from('not jumbf at all'))).toBeUndefined();
    expect(manifestLabels(Buffer.alloc(0))).toEqual([]);
  });
});
