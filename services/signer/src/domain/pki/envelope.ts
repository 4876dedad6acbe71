import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Private keys at rest: AES-256-GCM envelope encryption.
 *
 * A fresh 256-bit data key encrypts the PKCS#8; the KEK (SIGNER_KEK) wraps the data key. Both layers carry
 * the certificate serial as additional authenticated data, so a sealed key copied onto another certificate's
 * row fails to open instead of silently signing under the wrong certificate. The KEK id (a hash of the KEK,
 * not the KEK) says which KEK a row needs, which is what a KEK rotation has to know.
 *
 * Format (one text column): `v1.<kekId>.<dekIv>.<wrappedDek‖tag>.<dataIv>.<ciphertext‖tag>`, base64url parts.
 */
const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export type OpenResult =
  { ok: true; plaintext: Buffer } | { ok: false; reason: 'kek_mismatch' | 'malformed' | 'authentication_failed' };

export function kekId(kek: Buffer): string {
  return createHash('sha256').update('cairn.signer.kek-id\0').update(kek).digest('hex').slice(0, 16);
}

function aad(layer: 'dek' | 'data', serialHex: string): Buffer {
  return Buffer.from(`cairn.signer.private-key|${VERSION}|${layer}|${serialHex.toLowerCase()}`, 'utf8');
}

function encrypt(key: Buffer, plaintext: Buffer, additional: Buffer): { iv: Buffer; sealed: Buffer } {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(additional);
  const sealed = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
  return { iv, sealed };
}

function decrypt(key: Buffer, iv: Buffer, sealed: Buffer, additional: Buffer): Buffer | undefined {
  if (iv.length !== IV_BYTES || sealed.length < TAG_BYTES) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, iv);
    decipher.setAAD(additional);
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    return Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - TAG_BYTES)), decipher.final()]);
  } catch {
    return undefined;
  }
}

function assertKek(kek: Buffer): void {
  if (kek.length !== 32) throw new Error('the key-encryption key must be 32 bytes');
}

/** Seals `plaintext` (a PKCS#8 DER) for the certificate `serialHex`. */
export function sealPrivateKey(kek: Buffer, serialHex: string, plaintext: Buffer): string {
  assertKek(kek);
  const dek = randomBytes(32);
  try {
    const data = encrypt(dek, plaintext, aad('data', serialHex));
    const wrapped = encrypt(kek, dek, aad('dek', serialHex));
    return [VERSION, kekId(kek), wrapped.iv, wrapped.sealed, data.iv, data.sealed]
      .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
      .join('.');
  } finally {
    dek.fill(0);
  }
}

/** Opens what sealPrivateKey produced; the caller zeroes `plaintext` when done with it. */
export function openPrivateKey(kek: Buffer, serialHex: string, sealedText: string): OpenResult {
  assertKek(kek);
  const parts = sealedText.split('.');
  if (parts.length !== 6 || parts[0] !== VERSION) return { ok: false, reason: 'malformed' };
  const [, id, dekIv, wrappedDek, dataIv, ciphertext] = parts as [string, string, string, string, string, string];
  if (id !== kekId(kek)) return { ok: false, reason: 'kek_mismatch' };
  const dek = decrypt(
    kek,
    Buffer.from(dekIv, 'base64url'),
    Buffer.from(wrappedDek, 'base64url'),
    aad('dek', serialHex),
  );
  if (!dek) return { ok: false, reason: 'authentication_failed' };
  try {
    const plaintext = decrypt(
      dek,
      Buffer.from(dataIv, 'base64url'),
      Buffer.from(ciphertext, 'base64url'),
      aad('data', serialHex),
    );
    return plaintext ? { ok: true, plaintext } : { ok: false, reason: 'authentication_failed' };
  } finally {
    dek.fill(0);
  }
}
