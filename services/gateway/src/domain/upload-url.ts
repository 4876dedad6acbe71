import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The filesystem store's upload URL: `/v1/uploads/{id}/content?expires=<unix s>&signature=<HMAC>`. The PUT to it
 * carries no API key, so the URL itself is the credential: HMAC-SHA256 over the id and expiry with a key derived
 * from CAIRN_DATA_KEY (a key of its own, so a signature is worth nothing anywhere else).
 */
export class UploadUrlSigner {
  private readonly key: Buffer;

  constructor(dataKeyHex: string) {
    this.key = createHmac('sha256', Buffer.from(dataKeyHex, 'hex')).update('cairn-upload-url-v1').digest();
  }

  sign(uploadId: string, expiresUnix: number): string {
    return createHmac('sha256', this.key).update(`${uploadId}\n${expiresUnix}`).digest('base64url');
  }

  /** True when `signature` is this id's and expiry's and the expiry is still ahead of `nowUnix`. */
  verify(uploadId: string, expires: string, signature: string, nowUnix: number): boolean {
    if (!/^\d{1,12}$/.test(expires)) return false;
    const expected = Buffer.from(this.sign(uploadId, Number(expires)), 'base64url');
    const given = Buffer.from(signature, 'base64url');
    // Length first: timingSafeEqual throws on unequal lengths, and a length says nothing about the key.
    const valid = given.length === expected.length && timingSafeEqual(given, expected);
    return valid && Number(expires) > nowUnix;
  }
}
