import { createHash } from 'node:crypto';
import type { DetectOutcome } from '../domain/worker-protocol.js';

/** What the search read in an image file, before the registry: too small to carry a mark, or the worker's outcome. */
export type ImageReading =
  { readonly applicable: false } | { readonly applicable: true; readonly outcome: DetectOutcome };

/**
 * The readings of Cairn's own signed files, by SHA-256 of the file, least recently used first out. A reading is a
 * pure function of the bytes and the keyring (which changes only with a restart, and this lives in the process), so
 * a later detection of the same bytes gets exactly the answer the search would give. Only Cairn's copies are kept
 * (DetectImageRequest.cairn_copy): an upload's reading is never kept, so how fast an answer comes says nothing about
 * what others verified. Bounded by the bytes the readings hold (a cairn-sync-v2 reading keeps its registered points).
 */
interface Entry {
  readonly reading: ImageReading;
  bytes: number;
  /** The last content check of this reading: against which description (a registry row's), with what outcome. */
  checked?: { readonly content: Uint8Array; readonly consistent: boolean | undefined };
}

export class DetectionMemo {
  readonly #entries = new Map<string, Entry>();
  #bytes = 0;

  constructor(private readonly maxBytes: number) {}

  static keyOf(encoded: Uint8Array): string {
    return createHash('sha256').update(encoded).digest('hex');
  }

  get(key: string): ImageReading | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    // Touched: moves to the young end of the map's insertion order.
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.reading;
  }

  /**
   * The content check of a kept reading against a mark's description: a pure function of the two, so computed
   * once per kept file and description (the description is compared byte for byte; a registry row's never
   * changes once written). Anything not kept is checked every time.
   */
  contentCheck(key: string, content: Uint8Array | null, check: () => boolean | undefined): boolean | undefined {
    const entry = this.#entries.get(key);
    if (!entry || !content) return check();
    if (entry.checked && Buffer.from(entry.checked.content).equals(content)) return entry.checked.consistent;
    const consistent = check();
    const grown = content.byteLength - (entry.checked?.content.byteLength ?? 0);
    entry.checked = { content: Uint8Array.from(content), consistent };
    entry.bytes += grown;
    this.#bytes += grown;
    return consistent;
  }

  set(key: string, reading: ImageReading): void {
    const bytes = sizeOf(reading);
    if (bytes > this.maxBytes) return;
    const known = this.#entries.get(key);
    if (known) {
      this.#entries.delete(key);
      this.#bytes -= known.bytes;
    }
    this.#entries.set(key, { reading, bytes });
    this.#bytes += bytes;
    for (const [oldest, entry] of this.#entries) {
      if (this.#bytes <= this.maxBytes) break;
      this.#entries.delete(oldest);
      this.#bytes -= entry.bytes;
    }
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
