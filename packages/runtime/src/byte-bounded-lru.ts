/**
 * An in-process cache bounded by the bytes its values keep alive (the caller says how many each one holds), least
 * recently used out first: a Map's insertion order, refreshed on every hit. A value larger than the whole bound is
 * not kept.
 */
export class ByteBoundedLru<V> {
  readonly #entries = new Map<string, { readonly value: V; readonly bytes: number }>();
  #bytes = 0;

  constructor(readonly maxBytes: number) {}

  /** The value, touched (it becomes the last to go). */
  get(key: string): V | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.value;
  }

  /** The value, untouched. */
  peek(key: string): V | undefined {
    return this.#entries.get(key)?.value;
  }

  set(key: string, value: V, bytes: number): void {
    if (bytes > this.maxBytes) return;
    this.delete(key);
    this.#entries.set(key, { value, bytes });
    this.#bytes += bytes;
    for (const [oldest, entry] of this.#entries) {
      if (this.#bytes <= this.maxBytes) break;
      this.#entries.delete(oldest);
      this.#bytes -= entry.bytes;
    }
  }

  delete(key: string): void {
    const known = this.#entries.get(key);
    if (!known) return;
    this.#entries.delete(key);
    this.#bytes -= known.bytes;
  }
}
