import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * AES-256-GCM for small secrets at rest that must be read back (an onboarding answer holding an API key, a
 * webhook secret the HMAC needs). Format: v1.<iv>.<tag>.<ciphertext>, base64url parts. `aad` binds a sealed
 * value to its row, so it cannot be moved to another.
 */
export class Sealer {
  private readonly key: Buffer;

  /** `keyName` names the setting the key came from, for the start-up error. */
  constructor(hexKey: string, keyName = 'the sealing key') {
    this.key = Buffer.from(hexKey, 'hex');
    if (this.key.length !== 32) throw new Error(`${keyName} must be 32 bytes (64 hex characters)`);
  }

  seal(plaintext: string, aad: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(aad, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [
      'v1',
      iv.toString('base64url'),
      cipher.getAuthTag().toString('base64url'),
      ciphertext.toString('base64url'),
    ].join('.');
  }

  open(sealed: string, aad: string): string {
    const [version, iv, tag, ciphertext] = sealed.split('.');
    if (version !== 'v1' || !iv || !tag || ciphertext === undefined) throw new Error('Unknown sealed format');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(aad, 'utf8'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
  }
}
