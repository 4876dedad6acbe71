/**
 * The watermark a Cairn manifest store names in its `c2pa.soft-binding` assertion: what anyone who fetches the
 * public manifest learns (the algorithm and the payload, hex). Read from the assertion's CBOR as stored in the
 * JUMBF (`alg` and `value` are text strings there), which is all a test needs.
 */
export function watermarkBindingOf(store: Buffer): { alg: string; payloadHex: string } {
  const text = store.toString('latin1');
  const alg = /alg[\x60-\x77](cairn-sync-v2|cairn-dct(?:-keyed)?-v1|cairn-audio-wm-v[13])/.exec(text)?.[1];
  // CBOR text of 16 characters: major type 3, length 16 (0x70).
  const payloadHex = /value\x70([0-9a-f]{16})/.exec(text)?.[1];
  if (!alg || !payloadHex) throw new Error('the manifest store names no Cairn watermark');
  return { alg, payloadHex };
}
