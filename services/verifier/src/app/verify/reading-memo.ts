import { X509Certificate } from 'node:crypto';
import { ByteBoundedLru } from '@cairn/runtime';
import type { C2paReading, ReadManifestInput } from '../../domain/c2pa/types.js';
import { framedDigest } from '../../domain/framed-digest.js';

/**
 * The C2PA readings of Cairn's own signed files (read by asset or manifest id, as the stored verdict does), so a
 * verify of the very same bytes under the same trust list skips the reader. Keyed by SHA-256 over the file, its
 * type, the sidecar and the trust anchors, so a changed list reads again. A reading is what c2pa-rs makes of those
 * inputs and the clock (certificate validity, "now" when the signature has no time-stamp): only a reading whose
 * whole chain is valid now and carries no stapled OCSP answer (whose age would matter) is kept, and only until the
 * first certificate of the chain expires or `freshForMs` passes, whichever comes first. Revocation is not part of
 * a reading (OCSP is asked by the verify and kept only until `certificate.revoked`, app/verify/signals.ts). An upload's reading is never kept: how fast
 * an answer comes says nothing about what others verified. Bounded by the bytes the readings hold.
 */
export class ReadingMemo {
  readonly #entries: ByteBoundedLru<{ readonly reading: C2paReading; readonly until: number }>;

  constructor(
    maxBytes: number,
    private readonly freshForMs: number,
  ) {
    this.#entries = new ByteBoundedLru(maxBytes);
  }

  static keyOf(input: ReadManifestInput): string {
    return framedDigest([input.mimeType, input.asset, input.sidecar ?? '', ...input.trustAnchorsPem]);
  }

  get(key: string, now: number): C2paReading | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (now >= entry.until) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry.reading;
  }

  set(key: string, reading: C2paReading, now: number): void {
    const validUntil = keepableUntil(reading, now);
    if (validUntil === undefined) return;
    this.#entries.set(key, { reading, until: Math.min(validUntil, now + this.freshForMs) }, sizeOf(reading));
  }
}

/** When the first certificate of a kept reading's chain stops being valid; undefined for a reading not to keep. */
function keepableUntil(reading: C2paReading, now: number): number | undefined {
  if (reading.kind !== 'manifest' || reading.certificateExpired || reading.ocspStatus !== 'not_checked')
    return undefined;
  if (reading.signer.certChainPem.length === 0) return undefined;
  let until = Number.POSITIVE_INFINITY;
  for (const pem of reading.signer.certChainPem) {
    let certificate: X509Certificate;
    try {
      certificate = new X509Certificate(pem);
    } catch {
      return undefined;
    }
    const from = Date.parse(certificate.validFrom);
    const to = Date.parse(certificate.validTo);
    if (!(from <= now && now < to)) return undefined;
    until = Math.min(until, to);
  }
  return until;
}

/** Roughly what an entry keeps alive: the store, the thumbnail and the chain, plus an allowance for the rest. */
function sizeOf(reading: C2paReading): number {
  if (reading.kind !== 'manifest') return 1024;
  return (
    4096 +
    (reading.manifestStore?.length ?? 0) +
    (reading.thumbnail?.bytes.length ?? 0) +
    reading.signer.certChainPem.reduce((sum, pem) => sum + pem.length, 0)
  );
}
