// The certificate chain of a manifest's COSE_Sign1 signature, found by walking the manifest store's JUMBF boxes
// (@cairn/jumbf). Bounded: only the known path is descended.
import { childBoxes, findLabelled, readBox } from '@cairn/jumbf';
import { decodeCbor, isTagged, type CborValue } from './cbor.js';

/** Raw COSE_Sign1 bytes of a manifest's `c2pa.signature` box. */
export function signatureCose(store: Uint8Array, manifestLabel: string): Uint8Array | undefined {
  const root = readBox(store, 0, store.length);
  if (!root || root.type !== 'jumb') return undefined;
  const manifest = findLabelled(store, root, manifestLabel);
  if (!manifest) return undefined;
  const signature = findLabelled(store, manifest, 'c2pa.signature');
  if (!signature) return undefined;
  const cbor = childBoxes(store, signature).find((b) => b.type === 'cbor');
  return cbor ? store.subarray(cbor.contentStart, cbor.end) : undefined;
}

const X5CHAIN = 33;

function headerChain(header: CborValue): Uint8Array[] | undefined {
  if (!(header instanceof Map)) return undefined;
  // Label 33 per RFC 9360; early C2PA writers used the text label "x5chain".
  const value = header.get(X5CHAIN) ?? header.get('x5chain');
  if (value instanceof Uint8Array) return [value];
  if (Array.isArray(value)) {
    const certs = value.filter((v): v is Uint8Array => v instanceof Uint8Array);
    return certs.length ? certs : undefined;
  }
  return undefined;
}

/** DER certificates of a COSE_Sign1 x5chain (leaf first); [] when absent or unparsable. */
export function coseCertificateChain(cose: Uint8Array): Uint8Array[] {
  let message = decodeCbor(cose);
  if (isTagged(message)) message = message.value; // tag 18 = COSE_Sign1
  if (!Array.isArray(message) || message.length !== 4) return [];
  const [protectedBytes, unprotectedHeader] = message;
  if (protectedBytes instanceof Uint8Array && protectedBytes.length > 0) {
    const fromProtected = headerChain(decodeCbor(protectedBytes));
    if (fromProtected) return fromProtected;
  }
  return headerChain(unprotectedHeader ?? null) ?? [];
}
