import { CairnError } from '@cairn/errors';
import {
  checkMediaLimits,
  sniffMediaType,
  SNIFF_BYTES,
  type MediaLimits,
  type MediaProbe,
  type SniffedType,
} from '@cairn/media';

/** cairn.validation.invalid_body about the file a request sent (its `encoded` field). */
export function invalidEncoded(detail: string): CairnError {
  return new CairnError('cairn.validation.invalid_body', detail, { errors: [{ path: 'encoded', message: detail }] });
}

/**
 * The file a request sent, before any decoder sees it: viewed as a Buffer (not copied), its type sniffed from its
 * head (one `accepts` refuses is invalid_body, worded by `refusal` from what was sniffed, if anything) and its
 * header held to the media limits (cairn.media.too_large).
 */
export async function admitEncoded(
  encoded: Uint8Array,
  limits: MediaLimits,
  accepts: (sniffed: SniffedType) => boolean,
  refusal: (sniffed: SniffedType | null) => string,
): Promise<{ bytes: Buffer; sniffed: SniffedType; probe: MediaProbe | null }> {
  const bytes = Buffer.from(encoded.buffer, encoded.byteOffset, encoded.byteLength);
  const sniffed = sniffMediaType(bytes.subarray(0, SNIFF_BYTES));
  if (!sniffed || !accepts(sniffed)) throw invalidEncoded(refusal(sniffed));
  return { bytes, sniffed, probe: await checkMediaLimits(bytes, sniffed, limits) };
}
