import { verify, type KeyObject } from 'node:crypto';

/**
 * An ES256 signature as COSE carries it: 64 bytes of raw r‖s. A DER ECDSA-Sig-Value (SEQUENCE of two INTEGERs),
 * which many HSMs and KMSs answer, is converted; anything else is undefined.
 */
export function es256Raw(signature: Buffer): Buffer | undefined {
  return signature.length === 64 ? signature : derToRaw(signature);
}

function derToRaw(der: Buffer): Buffer | undefined {
  if (der.length < 8 || der[0] !== 0x30) return undefined;
  let at = 2;
  const parts: Buffer[] = [];
  for (let i = 0; i < 2; i++) {
    if (der[at] !== 0x02) return undefined;
    const length = der[at + 1]!;
    let value = der.subarray(at + 2, at + 2 + length);
    at += 2 + length;
    while (value.length > 32 && value[0] === 0) value = value.subarray(1);
    if (value.length > 32) return undefined;
    parts.push(Buffer.concat([Buffer.alloc(32 - value.length), value]));
  }
  return Buffer.concat(parts);
}

/** Whether `raw` (r‖s) is an ECDSA P-256 / SHA-256 signature of `data` by the holder of `publicKey`. */
export function verifiesEs256(publicKey: KeyObject, data: Buffer, raw: Buffer): boolean {
  try {
    return verify('sha256', data, { key: publicKey, dsaEncoding: 'ieee-p1363' }, raw);
  } catch {
    return false;
  }
}
