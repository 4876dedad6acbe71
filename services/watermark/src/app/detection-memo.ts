import { createHash } from 'node:crypto';
import { ByteBoundedLru } from '@cairn/runtime';
import type { RawImage } from '../domain/image/raw-image.js';
import { partsWithoutC2pa } from '../domain/image/without-c2pa.js';
import type { DetectOutcome } from '../domain/worker-protocol.js';

/** What DetectImage and DetectAudio answer about a mark they read. */
export interface DetectedMark {
  detected: true;
  applicable: true;
  payloadHex: string;
  confidence: number;
  registered: boolean;
  watermarkId: string;
  assetId: string;
  tenantId: string;
  algorithm: string;
  keyId: string;
  keyless: boolean;
}

/** What the search read in an image file, before the registry: too small to carry a mark, or the worker's outcome. */
export type ImageReading =
  | { readonly applicable: false }
  | {
      readonly applicable: true;
      readonly outcome: DetectOutcome;
      /**
       * The embedding's own read-back of the mark it wrote with this id: its content is the registered content by
       * construction (the same pixels, marked and encoded), so the content check has nothing to ask of it.
       */
      readonly embeddedAs?: string;
    };

/** A mark read and resolved in the registry, with its content check (DetectImage's answer). */
export type ResolvedMark = DetectedMark & { readonly contentConsistent?: boolean };

interface Entry {
  readonly reading: ImageReading;
  /** The answer for this reading once the registry row it resolved to is final (see keepAnswer). */
  answer?: ResolvedMark;
}

/**
 * The readings of Cairn's own signed files, by SHA-256 of the file, least recently used first out. A reading is a
 * pure function of the bytes and the keyring (which changes only with a restart, and this lives in the process), so
 * a later detection of the same bytes gets exactly the answer the search would give. With it, once the registry's
 * side can no longer change, the whole answer (see keepAnswer). Only Cairn's copies are kept
 * (DetectImageRequest.cairn_copy): an upload's reading is never kept, so how fast an answer comes says nothing about
 * what others verified. Bounded by the bytes the readings hold (a cairn-sync-v2 reading keeps its registered points).
 */
export class DetectionMemo {
  readonly #entries: ByteBoundedLru<Entry>;

  constructor(maxBytes: number) {
    this.#entries = new ByteBoundedLru(maxBytes);
  }

  static keyOf(encoded: Uint8Array): string {
    return createHash('sha256').update(encoded).digest('hex');
  }

  /**
   * The key of a JPEG or PNG file less its C2PA store (domain/image/without-c2pa.ts), undefined for other files: an
   * embedding's read-back keeps its reading under it, and the signed file (the marked file with the manifest
   * inside) has the same key, so the stored verdict neither decodes nor searches it again. Taken from the file's
   * bytes, without a decode. Prefixed so it never meets a file's SHA-256 or a pixel key.
   */
  static unsignedKeyOf(encoded: Uint8Array): string | undefined {
    const parts = partsWithoutC2pa(encoded);
    if (!parts) return undefined;
    const hash = createHash('sha256');
    for (const part of parts) hash.update(part);
    return `unsigned:${hash.digest('hex')}`;
  }

  /**
   * The key of decoded pixels, for the files unsignedKeyOf does not key (WebP): an embedding's read-back keeps its
   * reading under it, so the signed file (the same pixels with the manifest inside: a C2PA store changes no pixel)
   * is not searched a second time for the stored verdict. Prefixed so it never meets a file's SHA-256.
   */
  static pixelKeyOf(image: RawImage): string {
    const hash = createHash('sha256').update(`${image.width}x${image.height}x${image.channels}|`);
    return `px:${hash.update(image.pixels).digest('hex')}`;
  }

  get(key: string): ImageReading | undefined {
    return this.#entries.get(key)?.reading;
  }

  /** The answer kept for these bytes, if any (see keepAnswer). */
  answerOf(key: string): ResolvedMark | undefined {
    return this.#entries.peek(key)?.answer;
  }

  /**
   * Keeps the answer of a kept reading whose registry row is final: rows are only ever added and a row's content
   * description only ever set once (store/marks.ts), so the lookup and the content check would answer the same for
   * these bytes from now on. The caller says when a row is final; a reading not kept keeps nothing.
   */
  keepAnswer(key: string, answer: ResolvedMark): void {
    const entry = this.#entries.peek(key);
    if (entry) entry.answer = answer;
  }

  set(key: string, reading: ImageReading): void {
    this.#entries.set(key, { reading }, sizeOf(reading));
  }
}

/** Roughly what an entry keeps alive: the typed arrays, plus a fixed allowance for the key and the objects. */
function sizeOf(reading: ImageReading): number {
  const fixed = 256;
  if (!reading.applicable) return fixed;
  const { detection, registered } = reading.outcome;
  return (
    fixed +
    (detection?.payload.byteLength ?? 0) +
    (registered ? registered.xs.byteLength + registered.ys.byteLength + registered.values.byteLength : 0)
  );
}
